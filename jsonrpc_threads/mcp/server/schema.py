"""A function's signature as JSON Schema, and a call's arguments checked against it (pure).

Theory of operation.  ``signature_of`` reads a function once, when it is
decorated: its type hints (resolved with ``typing.get_type_hints``, so string
annotations work), its defaults and its docstring make a ``Signature``: the
input schema a client sees, the output schema of the return annotation, and the
parameters a prompt lists.  At each call ``Signature.bind`` hands the client's
JSON to ``arguments.convert``, which walks it along the same hints, making the
values the function expects (an Enum member, a dataclass, a tuple...) or raising
``ArgumentError`` with the path of the wrong field; ``Signature.structured``
turns the return value back into JSON (``content.json_value``).  No I/O, no
threads; a ``Signature`` is immutable and safe to share between threads.

Schemas are JSON Schema 2020-12, MCP's default dialect (so no ``$schema`` key).
Each class (dataclass, TypedDict, pydantic model) is defined once under
``$defs`` and referred to by ``$ref``, so recursive types work; the top of an
output schema is always an object (MCP's rule), a class inlined there and any
other type wrapped as ``{"result": ...}``.  A return type that is text or content
(``str``, None, no annotation, bytes, the block classes of ``content``) has no
output schema: its result is its content blocks alone.  pydantic is
used only for hints that are pydantic models or Fields, which exist only once
the user imported it: this module never imports it.

``Annotated`` metadata: a string is the parameter's description; a mapping is
merged into its schema as given (``Annotated[str, {"x-mcp-header": "Region"}]``
mirrors the argument into an ``Mcp-Param-Region`` header in the stateless
era, ``{"maxLength": 64}`` adds a keyword).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import typing
from collections import abc
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from .arguments import (
    ARRAY_ORIGINS,
    MAPPING_ORIGINS,
    NO_DEFAULT,
    SET_ORIGINS,
    STRING_FORMATS,
    UNION_ORIGINS,
    ArgumentError,
    class_fields,
    constraints,
    convert,
    hint_kind,
    is_literal,
    json_type,
    strip_hint,
)
from .content import CONTENT_CLASSES, json_value

__all__ = ["ArgumentError", "ParameterInfo", "Signature", "signature_of"]

_NONE_TYPE = type(None)
_SIMPLE: Dict[Any, Dict[str, Any]] = {
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    str: {"type": "string"},
    bytes: {"type": "string", "contentEncoding": "base64"},
}
#: Constraints of annotated_types (and of pydantic's Field): attribute -> JSON Schema keyword.
_BOUNDS = (("gt", "exclusiveMinimum"), ("ge", "minimum"), ("lt", "exclusiveMaximum"), ("le", "maximum"))
_LENGTH_KEYS = {
    "string": ("minLength", "maxLength"),
    "array": ("minItems", "maxItems"),
    "object": ("minProperties", "maxProperties"),
}
_DOC_SECTIONS = "args|arguments|parameters|params|keyword args|keyword arguments|attributes|other parameters"
_PARAM_SECTION = re.compile(rf"\s*({_DOC_SECTIONS}):\s*$", re.IGNORECASE)
_ANY_SECTION = re.compile(rf"\s*({_DOC_SECTIONS}|returns?|yields?|raises|examples?|notes?|see also):\s*$", re.I)
_GOOGLE_ENTRY = re.compile(r"\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_ENTRY = re.compile(r"\*{0,2}(\w+)\s*(?::.*)?$")


@dataclasses.dataclass(frozen=True)
class ParameterInfo:
    """One parameter of a function: its name, description, whether it is required, its default and type hint.

    ``default`` is ``inspect.Parameter.empty`` when there is none; ``annotation`` is ``typing.Any`` when unannotated.
    """

    name: str
    description: Optional[str]
    required: bool
    default: Any
    annotation: Any


@dataclasses.dataclass(frozen=True)
class Signature:
    """What ``signature_of`` read of a function: its schemas, description and parameters.  Immutable; thread-safe."""

    input_schema: Dict[str, Any]
    output_schema: Optional[Dict[str, Any]]
    wraps_output: bool
    description: Optional[str]
    context_parameter: Optional[str]
    parameters: Tuple[ParameterInfo, ...]

    def bind(self, arguments: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
        """The keyword arguments for a call, made from the JSON arguments a client sent.

        Each value is checked against its parameter's type hint and converted: an Enum
        member from its value, a dataclass, TypedDict or pydantic model from an object, a
        tuple or set from an array, a date or UUID from its text, bytes from base64,
        nested; the members of a Union are tried in order.  Defaults are not filled in
        (the call's defaults apply).  A bool is not an int; an int is accepted as a float.

        Args:
            arguments: the ``arguments`` of the request (None: none).

        Returns:
            The keyword arguments, the context parameter left out.

        Raises:
            ArgumentError: a required argument is missing, an argument or a field is
                unknown, a value has the wrong type or lies outside its Literal, Enum or
                bounds; its ``path`` names the field.
        """
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise ArgumentError("", f"the arguments must be an object, not {json_type(arguments)}")
        known = {parameter.name: parameter for parameter in self.parameters}
        unknown = [name for name in arguments if name not in known]
        if unknown:
            raise ArgumentError("", f"unknown argument{'s' * (len(unknown) > 1)}: {', '.join(map(repr, unknown))}")
        bound: Dict[str, Any] = {}
        for parameter in self.parameters:
            if parameter.name in arguments:
                bound[parameter.name] = convert(parameter.annotation, arguments[parameter.name], parameter.name)
            elif parameter.required:
                raise ArgumentError(parameter.name, "missing required argument")
        return bound

    def structured(self, value: Any) -> Optional[Dict[str, Any]]:
        """The ``structuredContent`` for a return value, or None when there is no output schema.

        A dataclass becomes a dict (recursively), a pydantic model ``model_dump(mode="json")``,
        an Enum its value, a tuple or set a list (``content.json_value``); the value is
        wrapped as ``{"result": value}`` when ``wraps_output``.

        Raises:
            TypeError: the output schema wants an object and the value is not one.
        """
        if self.output_schema is None:
            return None
        converted = json_value(value)
        if self.wraps_output:
            return {"result": converted}
        if not isinstance(converted, dict):
            raise TypeError(f"the output schema wants an object, and the function returned {type(value).__name__}")
        return converted


def signature_of(
    fn: Callable[..., Any], *, context_type: Optional[type] = None, output_schema: Any = ..., skip_first: bool = False
) -> Signature:
    """Read a function's parameters, type hints, return annotation and docstring.

    Args:
        fn: the function (or any callable ``inspect.signature`` reads).
        context_type: the class of the context parameter: the parameter annotated with it
            (or a subclass, or Optional of it) is named in ``context_parameter`` and left
            out of the schema.
        output_schema: ``...`` (the default) derives it from the return annotation; None
            means no output schema; a dict is used as given (``wraps_output`` is then
            true only when its ``type`` is not ``"object"``).
        skip_first: leave out the first parameter (``self`` or ``cls`` of a function
            decorated in a class body).

    Returns:
        The ``Signature``.

    Raises:
        TypeError: a ``*args`` or ``**kwargs`` or positional-only parameter, type hints that
            do not resolve, or a parameter's type with no JSON Schema (the message names
            the function and the parameter).
    """
    where = getattr(fn, "__qualname__", None) or repr(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # NameError, or a TypeError from an annotation that is not a type
        raise TypeError(f"{where}: its type hints do not resolve: {exc}") from exc
    summary, described = _parse_doc(getattr(fn, "__doc__", None))
    schemas = _Schemas(mode="validation")
    properties: Dict[str, Any] = {}
    required: List[str] = []
    parameters: List[ParameterInfo] = []
    context_parameter = None
    listed = list(inspect.signature(fn).parameters.values())[1 if skip_first else 0 :]
    for parameter in listed:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD, parameter.POSITIONAL_ONLY):
            raise TypeError(
                f"{where}: parameter {parameter.name!r} is {parameter.kind.description}; a tool's "
                "parameters are named arguments, so *args, **kwargs and positional-only ones cannot be"
            )
        hint = hints.get(parameter.name, Any)
        if context_type is not None and _is_context(hint, context_type):
            context_parameter = parameter.name
            continue
        try:
            prop = schemas.of(hint)
        except TypeError as exc:
            raise TypeError(f"{where}: parameter {parameter.name!r}: {exc}") from exc
        if "description" not in prop and parameter.name in described:
            prop["description"] = described[parameter.name]
        if parameter.default is NO_DEFAULT:
            required.append(parameter.name)
        else:
            _set_default(prop, parameter.default)
        properties[parameter.name] = prop
        parameters.append(
            ParameterInfo(
                parameter.name, prop.get("description"), parameter.default is NO_DEFAULT, parameter.default, hint
            )
        )
    input_schema: Dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    if schemas.defs:
        input_schema["$defs"] = schemas.defs
    output, wraps = _output_schema(hints.get("return", NO_DEFAULT), output_schema)
    return Signature(input_schema, output, wraps, summary, context_parameter, tuple(parameters))


def _output_schema(hint: Any, given: Any) -> Tuple[Optional[Dict[str, Any]], bool]:
    if given is None:
        return None, False
    if isinstance(given, dict):
        return given, given.get("type", "object") != "object"
    if given is not ...:
        raise TypeError(f"output_schema is ..., None or a dict, not {type(given).__name__}")
    if _is_plain_output(hint):
        return None, False
    schemas = _Schemas(mode="serialization")
    try:
        schema = schemas.of(hint)
    except TypeError:
        return None, False  # a type with no schema: its result is text only
    name = schema.get("$ref", "").rpartition("/")[2]
    if name and schemas.defs.get(name, {}).get("type") == "object":  # MCP wants an object at the top: inline it
        definition = schemas.defs.pop(name)
        schema = {**definition, **{key: value for key, value in schema.items() if key != "$ref"}}
        if f'"#/$defs/{name}"' in json.dumps([schema, schemas.defs]):
            schemas.defs[name] = definition  # it refers to itself: keep its definition too
    wraps = schema.get("type") != "object"
    if wraps:
        schema = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    if schemas.defs:
        schema["$defs"] = schemas.defs
    return schema, wraps


def _is_plain_output(hint: Any, *, in_list: bool = False) -> bool:
    """A return type whose value is content, not data: no output schema.

    That is ``str``, bytes, None, no annotation, ``Any``, the content block classes, unions
    of these, and lists of them with a block class among their items (``List[str]`` is data).
    """
    hint = strip_hint(hint)[0]
    if isinstance(hint, type) and issubclass(hint, CONTENT_CLASSES):
        return True
    if hint in (NO_DEFAULT, None, _NONE_TYPE, str, bytes, Any):
        return not in_list
    origin, args = typing.get_origin(hint), [arg for arg in typing.get_args(hint) if arg is not Ellipsis]
    if origin in UNION_ORIGINS:
        return all(_is_plain_output(arg) for arg in args) and (
            not in_list or any(_is_plain_output(arg, in_list=True) for arg in args)
        )
    if origin in (list, tuple, abc.Sequence) and args and not in_list:
        return all(_is_plain_output(arg) for arg in args) and any(_is_plain_output(a, in_list=True) for a in args)
    return False


def _is_context(hint: Any, context_type: type) -> bool:
    hint = strip_hint(hint)[0]
    if typing.get_origin(hint) in UNION_ORIGINS:
        return any(_is_context(arg, context_type) for arg in typing.get_args(hint))
    return isinstance(hint, type) and issubclass(hint, context_type)


def _set_default(schema: Dict[str, Any], default: Any) -> None:
    try:
        value = json_value(default)
        json.dumps(value)
    except (TypeError, ValueError):
        return  # not JSON: the schema does not say it
    schema["default"] = value


class _Schemas:
    """Schemas of type hints, each class among them defined once in ``defs``."""

    def __init__(self, *, mode: str) -> None:
        self.defs: Dict[str, Dict[str, Any]] = {}
        self._names: Dict[type, str] = {}
        self._mode = mode  # pydantic's: "validation" for arguments, "serialization" for results

    def of(self, hint: Any) -> Dict[str, Any]:
        base, metadata = strip_hint(hint)
        schema = self._of(base)
        for item in metadata:
            if isinstance(item, str):
                schema["description"] = item
            elif isinstance(item, Mapping):  # schema keywords as given: Annotated[str, {"x-mcp-header": "Region"}]
                schema.update(item)
            elif type(item).__name__ == "FieldInfo" and type(item).__module__.startswith("pydantic"):
                for key in ("title", "description", "examples"):
                    if getattr(item, key, None) is not None:
                        schema[key] = getattr(item, key)
        for item in constraints(metadata):
            for attribute, keyword in _BOUNDS:
                if getattr(item, attribute, None) is not None:
                    schema[keyword] = getattr(item, attribute)
            if getattr(item, "multiple_of", None) is not None:
                schema["multipleOf"] = item.multiple_of
            if isinstance(getattr(item, "pattern", None), str):
                schema["pattern"] = item.pattern
            low, high = _LENGTH_KEYS.get(schema.get("type", ""), ("", ""))
            if low and getattr(item, "min_length", None) is not None:
                schema[low] = item.min_length
            if high and getattr(item, "max_length", None) is not None:
                schema[high] = item.max_length
        return schema

    def _of(self, hint: Any) -> Dict[str, Any]:
        if hint in (Any, object, NO_DEFAULT):
            return {}
        if hint is None or hint is _NONE_TYPE:
            return {"type": "null"}
        if hasattr(hint, "__supertype__"):  # a NewType
            return self.of(hint.__supertype__)
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin in UNION_ORIGINS:
            return {"anyOf": [self.of(arg) for arg in args]}
        if is_literal(origin):
            return _enum_schema(list(args))
        kind = hint_kind(hint)
        if kind == "enum":
            return {"title": hint.__name__, **_enum_schema([member.value for member in hint])}
        if kind:
            return self._ref(hint, kind)
        if hint in _SIMPLE:
            return dict(_SIMPLE[hint])
        for cls, fmt in STRING_FORMATS:
            if isinstance(hint, type) and issubclass(hint, cls):
                return {"type": "string", "format": fmt}
        container = origin or hint
        if container in ARRAY_ORIGINS or container in SET_ORIGINS:
            schema: Dict[str, Any] = {"type": "array"}
            if args and args[0] is not Any:
                schema["items"] = self.of(args[0])
            if container in SET_ORIGINS:
                schema["uniqueItems"] = True
            return schema
        if container is tuple:
            if not args or (len(args) == 2 and args[1] is Ellipsis):
                return {"type": "array", **({"items": self.of(args[0])} if args else {})}
            items = [self.of(arg) for arg in args if arg != ()]
            return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
        if container in MAPPING_ORIGINS:
            if len(args) == 2 and args[1] is not Any:
                return {"type": "object", "additionalProperties": self.of(args[1])}
            return {"type": "object"}
        raise TypeError(f"no JSON Schema for the type {hint!r}")

    def _ref(self, cls: type, kind: str) -> Dict[str, Any]:
        name = self._names.get(cls)
        if name is None:
            name, number = cls.__name__, 2
            while name in self.defs:
                name, number = f"{cls.__name__}{number}", number + 1
            self._names[cls] = name
            self.defs[name] = {}  # taken before the fields are read: a recursive type refers to it
            self.defs[name] = self._pydantic(cls) if kind == "pydantic" else self._object(cls)
        return {"$ref": f"#/$defs/{name}"}

    def _object(self, cls: type) -> Dict[str, Any]:
        doc = cls.__doc__ or ""
        summary, described = (None, {}) if doc.startswith(cls.__name__ + "(") else _parse_doc(doc)
        properties, required = {}, []
        for name, (hint, is_required, default) in class_fields(cls).items():
            properties[name] = prop = self.of(hint)
            if "description" not in prop and name in described:
                prop["description"] = described[name]
            if is_required:
                required.append(name)
            elif default is not NO_DEFAULT and default is not dataclasses.MISSING:
                _set_default(prop, default)
        schema = {"type": "object", "title": cls.__name__, "properties": properties}
        if summary:
            schema["description"] = summary
        if required:
            schema["required"] = required
        return schema

    def _pydantic(self, cls: Any) -> Dict[str, Any]:
        schema: Dict[str, Any] = cls.model_json_schema(ref_template="#/$defs/{model}", mode=self._mode)
        defs = schema.pop("$defs", {})
        if set(schema) == {"$ref"}:  # a recursive model: pydantic defines it in its own $defs
            schema = defs.pop(schema["$ref"].rpartition("/")[2])
        for name, definition in defs.items():
            self.defs.setdefault(name, definition)
        return schema


def _enum_schema(values: List[Any]) -> Dict[str, Any]:
    schema: Dict[str, Any] = {"enum": [json_value(value) for value in values]}
    types_found = {json_type(value) for value in schema["enum"]}
    if len(types_found) == 1:
        schema["type"] = types_found.pop()
    return schema


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_numpy_header(lines: List[str], index: int) -> bool:
    following = lines[index + 1].strip() if index + 1 < len(lines) else ""
    return bool(lines[index].strip()) and len(following) >= 3 and set(following) == {"-"}


def _parse_doc(doc: Optional[str]) -> Tuple[Optional[str], Dict[str, str]]:
    """A docstring's summary (whitespace made single spaces) and its parameters' descriptions.

    Google style (``Args:``, ``Arguments:``, ``Parameters:``, ``Attributes:``; ``name (type): text``
    or ``name: text``, continued on lines indented further) and numpy style
    (``Parameters`` over a line of dashes; ``name : type`` over indented text).
    """
    if not doc:
        return None, {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: List[str] = []
    for index, line in enumerate(lines):
        if not line.strip() or _ANY_SECTION.fullmatch(line) or _is_numpy_header(lines, index):
            break
        summary.append(line)
    found: Dict[str, List[str]] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        if _PARAM_SECTION.fullmatch(line):
            index = _read_entries(lines, index + 1, _indent(line), _GOOGLE_ENTRY, found)
        elif _is_numpy_header(lines, index) and _PARAM_SECTION.fullmatch(line.rstrip() + ":"):
            index = _read_entries(lines, index + 2, _indent(line) - 1, _NUMPY_ENTRY, found)
        else:
            index += 1
    text = " ".join(" ".join(summary).split())
    return text or None, {name: " ".join(" ".join(parts).split()) for name, parts in found.items()}


def _read_entries(lines: List[str], index: int, outer: int, entry: re.Pattern[str], found: Dict[str, List[str]]) -> int:
    """Read one section's entries from ``index`` until a line indented no further than ``outer``."""
    level, current = None, None
    while index < len(lines):
        line = lines[index]
        if line.strip():
            if _indent(line) <= outer or _is_numpy_header(lines, index):
                break
            if level is None:
                level = _indent(line)
            match = entry.match(line.strip()) if _indent(line) <= level else None
            if match:
                current = match.group(1)
                found[current] = [match.group(2)] if entry is _GOOGLE_ENTRY else []
            elif current is not None:
                found[current].append(line.strip())
        index += 1
    return index
