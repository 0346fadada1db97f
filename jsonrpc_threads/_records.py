"""A small immutable record, shared by the message envelopes and the framing notes.

Fields are the class's ``__slots__``, set by position or by name (with the
class's ``_defaults``), or by a subclass's own ``__init__``; equality, hash
and repr go by value.  No ``dataclasses`` (it imports ``inspect``: a
start-up cost every tool server would pay).  Pure; instances are immutable,
so any thread may share them.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time (start-up cost)
if TYPE_CHECKING:
    from typing import Any, ClassVar, Dict, Tuple


class Record:
    """A small immutable record: fields by position or name, equality and repr by value."""

    __slots__: ClassVar[Tuple[str, ...]] = ()

    def __init__(self, *values: Any, **named: Any) -> None:
        fields = type(self).__slots__
        defaults = type(self)._defaults
        if len(values) > len(fields):
            raise TypeError(f"{type(self).__name__} takes at most {len(fields)} values")
        for index, field in enumerate(fields):
            if index < len(values):
                value = values[index]
            elif field in named:
                value = named.pop(field)
            elif field in defaults:
                value = defaults[field]
            else:
                raise TypeError(f"{type(self).__name__} needs {field!r}")
            object.__setattr__(self, field, value)
        if named:
            raise TypeError(f"{type(self).__name__} has no field {next(iter(named))!r}")

    _defaults: ClassVar[Dict[str, Any]] = {}

    def _values(self) -> Tuple[Any, ...]:
        return tuple(getattr(self, field) for field in type(self).__slots__)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self).__name__, *map(repr, self._values())))

    def __repr__(self) -> str:
        fields = ", ".join(f"{field}={getattr(self, field)!r}" for field in type(self).__slots__)
        return f"{type(self).__name__}({fields})"


__all__ = ["Record"]
