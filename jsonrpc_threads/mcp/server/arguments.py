"""A call's JSON arguments checked and converted along a function's type hints (pure).

Theory of operation.  A tool's parameters are type hints; a client sends JSON.
``convert`` walks a JSON value along one hint, depth first, and gives the value
the function expects: an Enum member from its value, a dataclass, TypedDict or
pydantic model from an object, a tuple or set from an array, bytes from base64,
a date or UUID from its text, each member of a Union tried in order.  The first
thing that does not fit raises ``ArgumentError`` naming its path
(``items[2].name``).  A bool is never an int; an int is a float; an object's
unknown keys are refused by name.  The helpers that take a hint apart
(Annotated metadata, Required wrappers, the fields of a class) are here too,
and ``schema.py`` makes its JSON Schema from the same reading, so what the
schema says and what a call accepts agree.  No I/O, no threads, no state but a
cache of the classes' resolved hints: safe from any thread.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime
import enum
import functools
import inspect
import json
import operator
import pathlib
import re
import sys
import types
import typing
import uuid
from collections import abc
from typing import Any, Dict, List, Mapping, Optional, Tuple

from .content import json_value

#: What ``class_fields`` gives as the default of a field that has none.
NO_DEFAULT = inspect.Parameter.empty
#: The origins of hints (``typing.get_origin``) that are arrays, sets, objects and unions.
ARRAY_ORIGINS = (list, abc.Sequence, abc.MutableSequence, abc.Iterable, abc.Collection)
SET_ORIGINS = (set, frozenset, abc.Set, abc.MutableSet)
MAPPING_ORIGINS = (dict, abc.Mapping, abc.MutableMapping)
UNION_ORIGINS = tuple(kind for kind in (typing.Union, getattr(types, "UnionType", None)) if kind is not None)
#: Classes that are JSON strings of a format, most specific first (a datetime is also a date).
STRING_FORMATS: Tuple[Tuple[type, str], ...] = (
    (datetime.datetime, "date-time"),
    (datetime.date, "date"),
    (datetime.time, "time"),
    (uuid.UUID, "uuid"),
    (pathlib.PurePath, "path"),
)
_NONE_TYPE = type(None)
_TD_WRAPPERS = ("Required", "NotRequired", "ReadOnly")
#: The scalar classes: the JSON type each wants and the Python classes of JSON values it takes (a bool never).
_SCALARS: Dict[Any, Tuple[str, Tuple[type, ...]]] = {
    bool: ("boolean", (bool,)),
    int: ("integer", (int,)),
    float: ("number", (int, float)),
    str: ("string", (str,)),
}
_CHECKS = (("gt", operator.gt, ">"), ("ge", operator.ge, ">="), ("lt", operator.lt, "<"), ("le", operator.le, "<="))
_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"))


class ArgumentError(ValueError):
    """A tool's arguments do not fit its parameters: ``path`` names the field ("items[2].name", "" for the whole).

    ``problem`` says what is wrong; ``str()`` gives both.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path = path
        self.problem = problem


# -- type hints ------------------------------------------------------------------------------------


def strip_hint(hint: Any) -> Tuple[Any, List[Any]]:
    """A hint without its Annotated and Required/NotRequired wrappers, and the Annotated metadata."""
    metadata: List[Any] = []
    while True:
        if _is_annotated(hint):
            metadata.extend(hint.__metadata__)
            hint = hint.__origin__
        elif _wrapper_name(hint):
            hint = typing.get_args(hint)[0]
        else:
            return hint, metadata


def _wrapper_name(hint: Any) -> Optional[str]:
    origin = typing.get_origin(hint)
    name = getattr(origin, "_name", None) or repr(origin).rpartition(".")[2]
    return name if origin is not None and name in _TD_WRAPPERS else None


def hint_kind(hint: Any) -> Optional[str]:
    if not isinstance(hint, type):
        return None
    if issubclass(hint, enum.Enum):
        return "enum"
    if dataclasses.is_dataclass(hint):
        return "dataclass"
    if issubclass(hint, dict) and hasattr(hint, "__required_keys__"):
        return "typeddict"
    base = getattr(sys.modules.get("pydantic"), "BaseModel", None)
    return "pydantic" if base is not None and issubclass(hint, base) else None


@functools.lru_cache(maxsize=256)
def _class_hints(cls: type) -> Dict[str, Any]:
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:
        raise TypeError(f"the type hints of {cls.__qualname__} do not resolve: {exc}") from exc


def class_fields(cls: type) -> Dict[str, Tuple[Any, bool, Any]]:
    """A dataclass's or TypedDict's fields: name -> (hint, required, default or ``NO_DEFAULT``)."""
    hints = _class_hints(cls)
    if dataclasses.is_dataclass(cls):
        return {
            field.name: (hints.get(field.name, Any), _is_required_field(field), field.default)
            for field in dataclasses.fields(cls)
            if field.init
        }
    required_keys: typing.AbstractSet[str] = getattr(cls, "__required_keys__", frozenset())
    found = {}
    for name, hint in hints.items():
        wrapper = _wrapper_name(_strip_annotated(hint))
        found[name] = (hint, wrapper == "Required" or (wrapper != "NotRequired" and name in required_keys), NO_DEFAULT)
    return found


def _strip_annotated(hint: Any) -> Any:
    return hint.__origin__ if _is_annotated(hint) else hint


def _is_annotated(hint: Any) -> bool:
    return hasattr(hint, "__metadata__") and hasattr(hint, "__origin__")


def is_literal(origin: Any) -> bool:  # typing's, or typing_extensions' own on Python 3.9
    return origin is typing.Literal or (origin is not None and getattr(origin, "_name", None) == "Literal")


def _is_required_field(field: dataclasses.Field[Any]) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def constraints(metadata: List[Any]) -> List[Any]:
    """The annotated_types constraints among Annotated metadata (pydantic Fields opened)."""
    found: List[Any] = []
    for item in metadata:
        module = type(item).__module__.partition(".")[0]
        if module == "pydantic" and type(item).__name__ == "FieldInfo":
            found.extend(constraints(list(item.metadata)))
        elif module in ("annotated_types", "pydantic"):
            found.append(item)
    return found


# -- JSON along the hints -----------------------------------------------------------------------------------


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    for cls, name in _JSON_TYPES:
        if isinstance(value, cls):
            return name
    return "object" if isinstance(value, Mapping) else type(value).__name__


def _wrong(path: str, expected: str, value: Any) -> ArgumentError:
    return ArgumentError(path, f"expected {expected}, got {json_type(value)}")


def _key_path(path: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z_]\w*", key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def convert(hint: Any, value: Any, path: str) -> Any:
    base, metadata = strip_hint(hint)
    converted = _convert_base(base, value, path)
    for item in constraints(metadata):
        _check_constraint(item, converted, path)
    return converted


def _check_constraint(item: Any, value: Any, path: str) -> None:
    for attribute, holds, sign in _CHECKS:
        bound = getattr(item, attribute, None)
        if bound is not None and isinstance(value, (int, float)) and not holds(value, bound):
            raise ArgumentError(path, f"must be {sign} {bound}, got {value}")
    pattern = getattr(item, "pattern", None)
    if isinstance(pattern, str) and isinstance(value, str) and not re.search(pattern, value):
        raise ArgumentError(path, f"must match {pattern!r}, got {json.dumps(value)}")
    low, high = getattr(item, "min_length", None), getattr(item, "max_length", None)
    size = len(value) if hasattr(value, "__len__") else None
    if size is not None and low is not None and size < low:
        raise ArgumentError(path, f"must have a length of at least {low}, got {size}")
    if size is not None and high is not None and size > high:
        raise ArgumentError(path, f"must have a length of at most {high}, got {size}")


def _convert_base(hint: Any, value: Any, path: str) -> Any:
    if hint in (Any, object, NO_DEFAULT):
        return value
    if hint is None or hint is _NONE_TYPE:
        if value is None:
            return None
        raise _wrong(path, "null", value)
    if hasattr(hint, "__supertype__"):
        return convert(hint.__supertype__, value, path)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in UNION_ORIGINS:
        return _convert_union(args, value, path)
    if is_literal(origin):
        for choice in args:
            if choice == value and type(choice) is type(value):
                return choice
        raise ArgumentError(path, f"expected one of {json.dumps(json_value(list(args)))}, got {json.dumps(value)}")
    kind = hint_kind(hint)
    if kind == "enum":
        for member in hint:
            if member.value == value and isinstance(member.value, bool) == isinstance(value, bool):
                return member
        allowed = json.dumps([json_value(member.value) for member in hint])
        raise ArgumentError(path, f"expected one of {allowed}, got {json.dumps(json_value(value), default=repr)}")
    if kind in ("dataclass", "typeddict"):
        return _convert_object(hint, value, path, kind)
    if kind == "pydantic":
        return _convert_pydantic(hint, value, path)
    if hint in _SCALARS:
        expected, accepted = _SCALARS[hint]
        if isinstance(value, accepted) and (hint is bool or not isinstance(value, bool)):
            return float(typing.cast(float, value)) if hint is float else value
        if hint is int and isinstance(value, float) and value.is_integer():
            return int(value)  # 2.0 is an integer in JSON Schema
        raise _wrong(path, expected, value)
    if hint is bytes:
        if not isinstance(value, str):
            raise _wrong(path, "base64 string", value)
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error:
            raise ArgumentError(path, "expected base64 text") from None
    for cls, fmt in STRING_FORMATS:
        if isinstance(hint, type) and issubclass(hint, cls):
            return _parse_format(hint, fmt, value, path)
    container = origin or hint
    if container in ARRAY_ORIGINS or container in SET_ORIGINS or container is tuple:
        return _convert_array(container, args, value, path)
    if container in MAPPING_ORIGINS:
        if not isinstance(value, Mapping):
            raise _wrong(path, "object", value)
        item_hint = args[1] if len(args) == 2 else Any
        return {key: convert(item_hint, item, _key_path(path, str(key))) for key, item in value.items()}
    return value


def _convert_union(args: Tuple[Any, ...], value: Any, path: str) -> Any:
    failures: List[ArgumentError] = []
    for arg in args:
        try:
            return convert(arg, value, path)
        except ArgumentError as exc:
            failures.append(exc)
    deeper = [failure for failure in failures if failure.path != path]
    if deeper:  # a member had the right shape and a field of it is wrong: that says more
        raise deeper[0]
    fitting = [failure for failure in failures if not failure.problem.startswith("expected ")]
    if len(fitting) == 1:
        raise fitting[0]
    expected = " or ".join(failure.problem[len("expected ") :].split(", got")[0] for failure in failures)
    raise _wrong(path, expected, value)


def _parse_format(hint: type, fmt: str, value: Any, path: str) -> Any:
    if not isinstance(value, str):
        raise _wrong(path, f"{fmt} string", value)
    try:
        if fmt == "date-time":
            return hint.fromisoformat(value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value)  # type: ignore[attr-defined]
        if fmt in ("date", "time"):
            return hint.fromisoformat(value)  # type: ignore[attr-defined]
        return hint(value)
    except ValueError:
        raise ArgumentError(path, f"expected a {fmt} string, got {json.dumps(value)}") from None


def _convert_array(container: Any, args: Tuple[Any, ...], value: Any, path: str) -> Any:
    if not isinstance(value, (list, tuple)):
        raise _wrong(path, "array", value)
    if container is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        hints = [arg for arg in args if arg != ()]
        if len(value) != len(hints):
            raise ArgumentError(path, f"expected an array of {len(hints)} items, got {len(value)}")
        return tuple(convert(hint, item, f"{path}[{index}]") for index, (hint, item) in enumerate(zip(hints, value)))
    item_hint = args[0] if args else Any
    items = [convert(item_hint, item, f"{path}[{index}]") for index, item in enumerate(value)]
    if container in SET_ORIGINS:
        try:
            unique = frozenset(items)
        except TypeError:
            raise ArgumentError(path, "the items of a set must be hashable") from None
        if len(unique) < len(items):  # the schema says uniqueItems: a call agrees with it
            raise ArgumentError(path, "the items must be unique (it is a set)")
        return unique if container is frozenset else set(unique)
    return tuple(items) if container is tuple else items


def _convert_object(cls: type, value: Any, path: str, kind: str) -> Any:
    if not isinstance(value, Mapping):
        raise _wrong(path, f"object ({cls.__name__})", value)
    fields = class_fields(cls)
    unknown = [key for key in value if key not in fields]
    if unknown:
        raise ArgumentError(path, f"unknown field{'s' * (len(unknown) > 1)}: {', '.join(map(repr, unknown))}")
    converted = {}
    for name, (hint, required, _) in fields.items():
        if name in value:
            converted[name] = convert(hint, value[name], _key_path(path, name))
        elif required:
            raise ArgumentError(_key_path(path, name), "missing required field")
    if kind == "typeddict":
        return converted
    try:
        return cls(**converted)
    except (TypeError, ValueError) as exc:  # a __post_init__ that refuses the values
        raise ArgumentError(path, str(exc)) from exc


def _convert_pydantic(cls: Any, value: Any, path: str) -> Any:
    invalid = sys.modules["pydantic"].ValidationError
    try:
        return cls.model_validate(value)
    except invalid as exc:
        first = exc.errors()[0]
        where = path
        for part in first.get("loc", ()):
            where = f"{where}[{part}]" if isinstance(part, int) else _key_path(where, str(part))
        raise ArgumentError(where, first.get("msg", str(exc))) from None
