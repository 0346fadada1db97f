"""A function's signature as JSON Schema, and a call's arguments checked against it (mcp/server/schema.py).

Pure tests: no process, no socket.  This module has ``from __future__ import annotations``,
so every hint below is a string that ``signature_of`` must resolve.  Every schema made here
is checked against the 2020-12 metaschema when ``jsonschema`` is installed.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import pathlib
import uuid
from typing import (
    Annotated,
    Any,
    Dict,
    FrozenSet,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
    TypedDict,
    Union,
)

import pytest

from jsonrpc_threads.mcp.server.content import Image, ResourceLink
from jsonrpc_threads.mcp.server.schema import ArgumentError, Signature, signature_of

try:  # Required / NotRequired: typing from 3.11, typing_extensions before (with its own TypedDict)
    from typing import NotRequired, Required
    from typing import TypedDict as TypedDictR
except ImportError:  # pragma: no cover - Python < 3.11
    try:
        from typing_extensions import NotRequired, Required  # type: ignore[assignment]
        from typing_extensions import TypedDict as TypedDictR  # type: ignore[assignment]
    except ImportError:
        NotRequired = Required = TypedDictR = None  # type: ignore[assignment,misc]

try:
    import annotated_types
except ImportError:  # pragma: no cover - comes with pydantic; the hints below are read only when it is here
    annotated_types = None  # type: ignore[assignment]

try:
    import pydantic
except ImportError:  # pragma: no cover
    pydantic = None  # type: ignore[assignment]

try:
    from jsonschema import Draft202012Validator
except ImportError:  # pragma: no cover - the schema checks are skipped without it
    Draft202012Validator = None


def check(schema: Optional[Dict[str, Any]], *instances: Any) -> None:
    """``schema`` is valid JSON Schema 2020-12, and each instance valid against it (when jsonschema is installed)."""
    assert schema is None or "$schema" not in schema
    if Draft202012Validator is None or schema is None:
        return
    Draft202012Validator.check_schema(schema)
    for instance in instances:
        Draft202012Validator(schema).validate(instance)


def invalid(schema: Dict[str, Any], instance: Any) -> bool:
    """``instance`` fails ``schema`` (True when jsonschema is absent: nothing to compare)."""
    if Draft202012Validator is None:
        return True
    return not Draft202012Validator(schema).is_valid(instance)


def bind_error(sig: Signature, arguments: Any) -> ArgumentError:
    with pytest.raises(ArgumentError) as caught:
        sig.bind(arguments)
    return caught.value


# -- the types used below: at module level, so the string hints resolve ------------------------------


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Point:
    """A point on the plane.

    Attributes:
        x: the abscissa.
        y: the ordinate.
    """

    x: float
    y: float = 0.0


@dataclasses.dataclass
class Item:
    name: str
    count: int = 1
    tags: List[str] = dataclasses.field(default_factory=list)
    color: Optional[Color] = None
    computed: str = dataclasses.field(default="", init=False)


@dataclasses.dataclass
class Tree:
    """A tree of names."""

    name: str
    children: List[Tree] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Positive:
    value: int

    def __post_init__(self) -> None:
        if self.value <= 0:
            raise ValueError("value must be positive")


class Movie(TypedDict):
    title: str
    year: int


class Draft(TypedDict, total=False):
    title: str
    notes: str


class Opaque:
    """A class with no JSON Schema."""


OPAQUE = Opaque()


class Context:
    """Stands for the server's Context class."""


class SubContext(Context):
    pass


# -- scalars, defaults, required, descriptions -------------------------------------------------------


def scalars(
    i: int, f: float, s: str, b: bool, n: None, raw: bytes, anything: Any, untyped, opt: Optional[int] = None
) -> None:
    """Every scalar."""


def test_scalars_map_to_their_json_types_and_the_top_level_is_an_object() -> None:
    sig = signature_of(scalars)
    props = sig.input_schema["properties"]
    assert props["i"] == {"type": "integer"}
    assert props["f"] == {"type": "number"}
    assert props["s"] == {"type": "string"}
    assert props["b"] == {"type": "boolean"}
    assert props["n"] == {"type": "null"}
    assert props["raw"] == {"type": "string", "contentEncoding": "base64"}
    assert props["anything"] == {} and props["untyped"] == {}
    assert props["opt"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    assert sig.input_schema["type"] == "object"
    assert sig.input_schema["required"] == ["i", "f", "s", "b", "n", "raw", "anything", "untyped"]
    assert set(sig.input_schema) == {"type", "properties", "required"}  # no $schema, no $defs when none
    assert sig.description == "Every scalar."
    check(
        sig.input_schema, {"i": 1, "f": 1.5, "s": "x", "b": True, "n": None, "raw": "", "anything": [1], "untyped": 2}
    )


def defaults(a: int = 3, b: str = "x", c: Tuple[int, int] = (1, 2), d: Color = Color.GREEN, e: Any = OPAQUE) -> None:
    pass


def test_defaults_are_in_the_schema_when_json_serializable_and_nothing_is_required() -> None:
    sig = signature_of(defaults)
    props = sig.input_schema["properties"]
    assert props["a"]["default"] == 3 and props["b"]["default"] == "x"
    assert props["c"]["default"] == [1, 2]
    assert props["d"]["default"] == "green"
    assert "default" not in props["e"]  # not JSON: left out, the call's default still applies
    assert "required" not in sig.input_schema
    assert sig.bind({}) == {}  # defaults are not filled in
    assert [(p.name, p.required, p.default) for p in sig.parameters][:2] == [("a", False, 3), ("b", False, "x")]
    check(sig.input_schema, {})


def optional_without_default(x: Optional[int]) -> None:
    pass


def test_optional_without_a_default_is_required_and_takes_null() -> None:
    sig = signature_of(optional_without_default)
    assert sig.input_schema["required"] == ["x"]
    assert sig.bind({"x": None}) == {"x": None}
    assert bind_error(sig, {}).path == "x"


def test_an_empty_function_has_an_empty_object_schema() -> None:
    def nothing() -> None:
        pass

    sig = signature_of(nothing)
    assert sig.input_schema == {"type": "object", "properties": {}}
    assert sig.bind(None) == {} and sig.bind({}) == {}
    assert sig.description is None


# -- containers, unions, literals, enums ---------------------------------------------------------------


def containers(
    a: List[int],
    b: list[str],
    c: Sequence[float],
    d: Tuple[int, ...],
    e: Tuple[int, str],
    f: Set[str],
    g: FrozenSet[int],
    h: Dict[str, int],
    i: Mapping[str, Any],
    j: dict,
    k: tuple,
    m: list,
) -> None:
    pass


def test_containers_map_to_arrays_and_objects() -> None:
    props = signature_of(containers).input_schema["properties"]
    assert props["a"] == {"type": "array", "items": {"type": "integer"}}
    assert props["b"] == {"type": "array", "items": {"type": "string"}}
    assert props["c"] == {"type": "array", "items": {"type": "number"}}
    assert props["d"] == {"type": "array", "items": {"type": "integer"}}
    assert props["e"] == {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "minItems": 2,
        "maxItems": 2,
    }
    assert props["f"] == {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    assert props["g"] == {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}
    assert props["h"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert props["i"] == {"type": "object"} and props["j"] == {"type": "object"}
    assert props["k"] == {"type": "array"} and props["m"] == {"type": "array"}
    check(signature_of(containers).input_schema)


def test_containers_are_converted_to_the_python_types_the_function_expects() -> None:
    sig = signature_of(containers)
    args = {"a": [1], "b": ["x"], "c": [1, 2.5], "d": [1, 2], "e": [1, "x"], "f": ["x", "y"], "g": [1]}
    args.update({"h": {"k": 1}, "i": {"any": [1]}, "j": {}, "k": [1, "x"], "m": []})
    bound = sig.bind(args)
    assert bound["c"] == [1.0, 2.5] and isinstance(bound["c"][0], float)
    assert bound["d"] == (1, 2) and bound["e"] == (1, "x") and bound["k"] == (1, "x")
    assert bound["f"] == {"x", "y"} and isinstance(bound["f"], set)
    assert bound["g"] == frozenset({1}) and isinstance(bound["g"], frozenset)
    assert bound["h"] == {"k": 1}
    check(sig.input_schema, args)


def test_container_errors_name_the_index_or_key() -> None:
    sig = signature_of(containers)
    good = {"a": [1], "b": ["x"], "c": [], "d": [], "e": [1, "x"], "f": [], "g": [], "h": {}, "i": {}, "j": {}}
    good.update({"k": [], "m": []})
    for change, path, problem in [
        ({"a": [1, 2, "3"]}, "a[2]", "expected integer, got string"),
        ({"a": "1"}, "a", "expected array, got string"),
        ({"e": [1]}, "e", "expected an array of 2 items, got 1"),
        ({"e": [1, 2]}, "e[1]", "expected string, got integer"),
        ({"h": {"ok": 1, "bad key": "x"}}, 'h["bad key"]', "expected integer, got string"),
        ({"h": []}, "h", "expected object, got array"),
        ({"g": [[1]]}, "g[0]", "expected integer, got array"),
        ({"f": ["x", "y", "x"]}, "f", "the items must be unique (it is a set)"),
    ]:
        error = bind_error(sig, {**good, **change})
        assert (error.path, error.problem) == (path, problem)
        assert str(error) == f"{path}: {problem}"
        assert invalid(sig.input_schema, {**good, **change})


def unions(a: Union[int, str], b: Union[float, int], c: Optional[Point] = None) -> None:
    pass


def test_unions_are_any_of_tried_in_order() -> None:
    sig = signature_of(unions)
    assert sig.input_schema["properties"]["a"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert sig.bind({"a": 3, "b": 2})["b"] == 2.0 and isinstance(sig.bind({"a": 3, "b": 2})["b"], float)
    assert sig.bind({"a": "3", "b": 1.5}) == {"a": "3", "b": 1.5}
    assert sig.bind({"a": 1, "b": 1, "c": {"x": 1}})["c"] == Point(1.0)
    error = bind_error(sig, {"a": True, "b": 1})
    assert (error.path, error.problem) == ("a", "expected integer or string, got boolean")
    # a member of the right shape with a wrong field says so, rather than "expected Point or null"
    error = bind_error(sig, {"a": 1, "b": 1, "c": {"x": "far"}})
    assert (error.path, error.problem) == ("c.x", "expected number, got string")
    check(sig.input_schema, {"a": 1, "b": 2, "c": None})


def literals(mode: Literal["fast", "slow"], n: Literal[1, 2], mixed: Literal["a", 1] = "a") -> None:
    pass


def test_literals_are_enums_with_a_type_when_uniform() -> None:
    sig = signature_of(literals)
    props = sig.input_schema["properties"]
    assert props["mode"] == {"enum": ["fast", "slow"], "type": "string"}
    assert props["n"] == {"enum": [1, 2], "type": "integer"}
    assert props["mixed"] == {"enum": ["a", 1], "default": "a"}
    assert sig.bind({"mode": "slow", "n": 2, "mixed": 1}) == {"mode": "slow", "n": 2, "mixed": 1}
    error = bind_error(sig, {"mode": "medium", "n": 1})
    assert (error.path, error.problem) == ("mode", 'expected one of ["fast", "slow"], got "medium"')
    assert bind_error(sig, {"mode": "fast", "n": True}).path == "n"  # True is not 1
    check(sig.input_schema, {"mode": "fast", "n": 1})


def enums(color: Color, level: Level = Level.LOW) -> None:
    pass


def test_enums_are_their_values_and_arguments_become_members() -> None:
    sig = signature_of(enums)
    props = sig.input_schema["properties"]
    assert props["color"] == {"title": "Color", "enum": ["red", "green"], "type": "string"}
    assert props["level"] == {"title": "Level", "enum": [1, 2], "type": "integer", "default": 1}
    bound = sig.bind({"color": "red", "level": 2})
    assert bound == {"color": Color.RED, "level": Level.HIGH}
    error = bind_error(sig, {"color": "blue"})
    assert (error.path, error.problem) == ("color", 'expected one of ["red", "green"], got "blue"')
    assert bind_error(sig, {"color": "red", "level": True}).path == "level"
    check(sig.input_schema, {"color": "green"})


# -- dataclasses, TypedDicts, recursion, $defs -----------------------------------------------------------


def dataclasses_tool(first: Point, second: Point, items: List[Item]) -> None:
    pass


def test_a_dataclass_is_defined_once_and_referred_to() -> None:
    schema = signature_of(dataclasses_tool).input_schema
    assert schema["properties"]["first"] == {"$ref": "#/$defs/Point"}
    assert schema["properties"]["second"] == {"$ref": "#/$defs/Point"}
    assert schema["properties"]["items"] == {"type": "array", "items": {"$ref": "#/$defs/Item"}}
    assert schema["$defs"]["Point"] == {
        "type": "object",
        "title": "Point",
        "description": "A point on the plane.",
        "properties": {
            "x": {"type": "number", "description": "the abscissa."},
            "y": {"type": "number", "description": "the ordinate.", "default": 0.0},
        },
        "required": ["x"],
    }
    item = schema["$defs"]["Item"]
    assert item["required"] == ["name"] and "computed" not in item["properties"]  # init=False: not an argument
    assert item["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}  # a factory: no default
    assert "description" not in item  # the generated __doc__ is not a description
    check(schema, {"first": {"x": 1}, "second": {"x": 1, "y": 2}, "items": [{"name": "a", "color": "red"}]})


def test_dataclass_arguments_become_instances_and_their_errors_have_paths() -> None:
    sig = signature_of(dataclasses_tool)
    bound = sig.bind({"first": {"x": 1}, "second": {"x": 2, "y": 3}, "items": [{"name": "a", "color": "red"}]})
    assert bound["first"] == Point(1.0) and isinstance(bound["first"].x, float)
    assert bound["items"] == [Item("a", color=Color.RED)]
    base = {"first": {"x": 1}, "second": {"x": 1}}
    items = [{"name": "a"}, {"name": "b"}, {"name": 3}]
    for arguments, path, problem in [
        ({**base, "items": items}, "items[2].name", "expected string, got integer"),
        ({**base, "items": [{"name": "a", "size": 1, "weight": 2}]}, "items[0]", "unknown fields: 'size', 'weight'"),
        ({**base, "items": [{"count": 1}]}, "items[0].name", "missing required field"),
        ({**base, "items": [{"name": "a", "tags": ["x", 2]}]}, "items[0].tags[1]", "expected string, got integer"),
        ({**base, "items": [{"name": "a", "color": "blue"}]}, "items[0].color", None),
        ({**base, "items": ["a"]}, "items[0]", "expected object (Item), got string"),
        ({"first": {"x": True}, "second": {"x": 1}, "items": []}, "first.x", "expected number, got boolean"),
    ]:
        error = bind_error(sig, arguments)
        assert error.path == path
        assert problem is None or error.problem == problem


def positive(p: Positive) -> None:
    pass


def test_a_dataclass_that_refuses_its_values_is_an_argument_error() -> None:
    error = bind_error(signature_of(positive), {"p": {"value": -1}})
    assert (error.path, error.problem) == ("p", "value must be positive")


def grow(tree: Tree) -> Tree:
    return tree


def test_a_recursive_dataclass_refers_to_itself() -> None:
    sig = signature_of(grow)
    tree = sig.input_schema["$defs"]["Tree"]
    assert tree["properties"]["children"] == {"type": "array", "items": {"$ref": "#/$defs/Tree"}}
    nested = {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}
    check(sig.input_schema, {"tree": nested})
    bound = sig.bind({"tree": nested})["tree"]
    assert bound == Tree("a", [Tree("b", [Tree("c")])])
    assert bind_error(sig, {"tree": {"name": "a", "children": [{"name": "b", "children": [{}]}]}}).path == (
        "tree.children[0].children[0].name"
    )
    # the output: an object at the top (MCP's rule), its definition kept for the inner references
    assert sig.output_schema is not None and sig.output_schema["type"] == "object" and not sig.wraps_output
    assert sig.output_schema["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    assert "Tree" in sig.output_schema["$defs"]
    assert sig.structured(bound) == {
        "name": "a",
        "children": [{"name": "b", "children": [{"name": "c", "children": []}]}],
    }
    check(sig.output_schema, sig.structured(bound))


def typed_dicts(movie: Movie, draft: Draft) -> Movie:
    return movie


def test_typed_dicts_total_and_not() -> None:
    sig = signature_of(typed_dicts)
    defs = sig.input_schema["$defs"]
    assert defs["Movie"]["properties"] == {"title": {"type": "string"}, "year": {"type": "integer"}}
    assert defs["Movie"]["required"] == ["title", "year"]
    assert "required" not in defs["Draft"]
    bound = sig.bind({"movie": {"title": "Heat", "year": 1995}, "draft": {}})
    assert bound == {"movie": {"title": "Heat", "year": 1995}, "draft": {}}
    assert bind_error(sig, {"movie": {"title": "Heat"}, "draft": {}}).path == "movie.year"
    assert bind_error(sig, {"movie": {"title": "Heat", "year": 1}, "draft": {"x": 1}}).problem == "unknown field: 'x'"
    assert sig.output_schema is not None and sig.output_schema["required"] == ["title", "year"]
    assert sig.structured({"title": "Heat", "year": 1995}) == {"title": "Heat", "year": 1995}
    check(sig.input_schema, {"movie": {"title": "Heat", "year": 1995}, "draft": {"notes": "n"}})


if TypedDictR is not None:

    class Article(TypedDictR, total=False):  # type: ignore[misc,valid-type]
        title: Required[str]  # type: ignore[valid-type]
        body: str

    class Note(TypedDictR):  # type: ignore[misc,valid-type]
        text: str
        author: NotRequired[str]  # type: ignore[valid-type]

    def required_marks(article: Article, note: Note) -> None:
        pass


@pytest.mark.skipif(TypedDictR is None, reason="Required/NotRequired need Python 3.11 or typing_extensions")
def test_typed_dict_required_and_not_required_marks() -> None:
    sig = signature_of(required_marks)
    defs = sig.input_schema["$defs"]
    assert defs["Article"]["required"] == ["title"]
    assert defs["Article"]["properties"]["title"] == {"type": "string"}  # the mark is not a type
    assert defs["Note"]["required"] == ["text"]
    assert sig.bind({"article": {"title": "t"}, "note": {"text": "x"}}) == {
        "article": {"title": "t"},
        "note": {"text": "x"},
    }
    assert bind_error(sig, {"article": {"body": "b"}, "note": {"text": "x"}}).path == "article.title"
    check(sig.input_schema)


# -- formats, bytes, Annotated ---------------------------------------------------------------------------


def formats(when: datetime.datetime, day: datetime.date, at: datetime.time, id: uuid.UUID, where: pathlib.Path) -> None:
    pass


def test_dates_uuids_and_paths_are_strings_with_a_format_and_are_parsed() -> None:
    sig = signature_of(formats)
    props = sig.input_schema["properties"]
    assert [props[name]["format"] for name in ("when", "day", "at", "id", "where")] == [
        "date-time",
        "date",
        "time",
        "uuid",
        "path",
    ]
    assert all(prop["type"] == "string" for prop in props.values())
    ident = "12345678-1234-5678-1234-567812345678"
    bound = sig.bind({"when": "2026-01-02T03:04:05Z", "day": "2026-01-02", "at": "03:04", "id": ident, "where": "a/b"})
    assert bound["when"] == datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    assert bound["day"] == datetime.date(2026, 1, 2) and bound["at"] == datetime.time(3, 4)
    assert bound["id"] == uuid.UUID(ident) and bound["where"] == pathlib.Path("a/b")
    error = bind_error(sig, {"when": "yesterday", "day": "2026-01-02", "at": "03:04", "id": ident, "where": "x"})
    assert (error.path, error.problem) == ("when", 'expected a date-time string, got "yesterday"')
    assert bind_error(sig, {"when": "2026-01-02", "day": 5, "at": "03:04", "id": ident, "where": "x"}).path == "day"
    assert (
        bind_error(sig, {"when": "2026-01-02", "day": "2026-01-02", "at": "03:04", "id": "nope", "where": "x"}).path
        == "id"
    )


def blob(data: bytes) -> None:
    pass


def test_bytes_arrive_as_base64() -> None:
    sig = signature_of(blob)
    assert sig.bind({"data": "aGVsbG8="}) == {"data": b"hello"}
    assert bind_error(sig, {"data": "not base64!"}).problem == "expected base64 text"
    assert bind_error(sig, {"data": 5}).problem == "expected base64 string, got integer"


def annotated(
    city: Annotated[str, "the city's name"],
    days: Annotated[int, "how many days"] = 3,
) -> None:
    """Forecast.

    Args:
        city: overridden by Annotated.
        days: also overridden.
    """


def test_annotated_descriptions_win_over_the_docstring() -> None:
    sig = signature_of(annotated)
    props = sig.input_schema["properties"]
    assert props["city"] == {"type": "string", "description": "the city's name"}
    assert props["days"] == {"type": "integer", "description": "how many days", "default": 3}
    assert [p.description for p in sig.parameters] == ["the city's name", "how many days"]
    assert sig.bind({"city": "Oslo"}) == {"city": "Oslo"}


def bounded(
    n: Annotated[int, annotated_types.Ge(1), annotated_types.Lt(10)],
    name: Annotated[str, annotated_types.MinLen(2), annotated_types.MaxLen(4)],
    many: Annotated[List[int], annotated_types.MaxLen(2)] = (),  # type: ignore[assignment]
) -> None:
    pass


@pytest.mark.skipif(annotated_types is None, reason="annotated_types is not installed")
def test_annotated_types_constraints_are_in_the_schema_and_checked() -> None:
    sig = signature_of(bounded)
    props = sig.input_schema["properties"]
    assert props["n"] == {"type": "integer", "minimum": 1, "exclusiveMaximum": 10}
    assert props["name"] == {"type": "string", "minLength": 2, "maxLength": 4}
    assert props["many"]["maxItems"] == 2
    assert sig.bind({"n": 9, "name": "abc"}) == {"n": 9, "name": "abc"}
    for arguments, path, problem in [
        ({"n": 0, "name": "ab"}, "n", "must be >= 1, got 0"),
        ({"n": 10, "name": "ab"}, "n", "must be < 10, got 10"),
        ({"n": 1, "name": "a"}, "name", "must have a length of at least 2, got 1"),
        ({"n": 1, "name": "ab", "many": [1, 2, 3]}, "many", "must have a length of at most 2, got 3"),
    ]:
        error = bind_error(sig, arguments)
        assert (error.path, error.problem) == (path, problem)
        assert invalid(sig.input_schema, arguments)
    check(sig.input_schema, {"n": 1, "name": "ab"})


# -- docstrings ----------------------------------------------------------------------------------------


def google(query: str, limit: int = 10, verbose: bool = False) -> None:
    """Search the index
    for documents.

    A longer explanation that is not the summary.

    Args:
        query (str): what to look for,
            in the index's syntax.
        limit: at most this many
            results.
        verbose(bool) : say more.

    Returns:
        Nothing.
    """


def numpy_style(query: str, limit: int = 10) -> None:
    """Search the index.

    Parameters
    ----------
    query : str
        what to look for,
        in the index's syntax.
    limit : int, optional
        at most this many.

    Returns
    -------
    None
    """


def arguments_heading(a: int, b: int) -> None:
    """Add two numbers.
    Arguments:
        a: the first.
        b: the second.
    """


def parameters_heading(a: int) -> None:
    """Parameters:
    a: the first.
    """


def test_google_docstrings_give_the_summary_and_the_parameters_descriptions() -> None:
    sig = signature_of(google)
    assert sig.description == "Search the index for documents."
    props = sig.input_schema["properties"]
    assert props["query"]["description"] == "what to look for, in the index's syntax."
    assert props["limit"]["description"] == "at most this many results."
    assert props["verbose"]["description"] == "say more."
    assert [p.description for p in sig.parameters] == [props[n]["description"] for n in ("query", "limit", "verbose")]


def test_numpy_docstrings_and_the_other_headings() -> None:
    sig = signature_of(numpy_style)
    assert sig.description == "Search the index."
    props = sig.input_schema["properties"]
    assert props["query"]["description"] == "what to look for, in the index's syntax."
    assert props["limit"]["description"] == "at most this many."
    sig = signature_of(arguments_heading)
    assert sig.description == "Add two numbers."  # the summary stops at the section
    assert [p.description for p in sig.parameters] == ["the first.", "the second."]
    sig = signature_of(parameters_heading)
    assert sig.description is None


# -- what signature_of refuses, the context parameter, skip_first --------------------------------------


def test_star_args_kwargs_and_positional_only_are_refused_naming_the_function() -> None:
    def star(*items: int) -> None:
        pass

    def double_star(**options: Any) -> None:
        pass

    for fn, name in ((star, "items"), (double_star, "options")):
        with pytest.raises(TypeError, match=rf"{fn.__name__}.*{name!r}"):
            signature_of(fn)

    def positional(a: int, /, b: int) -> None:
        pass

    with pytest.raises(TypeError, match="positional-only"):
        signature_of(positional)


def opaque(thing: Opaque) -> None:
    pass


def unresolved(thing: NoSuchType) -> None:  # type: ignore[name-defined]  # noqa: F821
    pass


def test_a_type_with_no_schema_or_a_hint_that_does_not_resolve_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"opaque: parameter 'thing': no JSON Schema for the type"):
        signature_of(opaque)
    with pytest.raises(TypeError, match=r"unresolved: its type hints do not resolve: .*NoSuchType"):
        signature_of(unresolved)


def with_context(city: str, ctx: Context, days: int = 1) -> None:
    pass


def with_optional_sub_context(ctx: Optional[SubContext] = None) -> None:
    pass


def test_the_context_parameter_is_named_and_left_out_of_the_schema() -> None:
    sig = signature_of(with_context, context_type=Context)
    assert sig.context_parameter == "ctx"
    assert list(sig.input_schema["properties"]) == ["city", "days"]
    assert [p.name for p in sig.parameters] == ["city", "days"]
    assert sig.bind({"city": "x"}) == {"city": "x"}
    assert bind_error(sig, {"city": "x", "ctx": {}}).problem == "unknown argument: 'ctx'"
    assert signature_of(with_optional_sub_context, context_type=Context).context_parameter == "ctx"
    with pytest.raises(TypeError, match="parameter 'ctx'"):  # without a context type it is just a class
        signature_of(with_context)


class Tools:
    def method(self, a: int) -> int:
        return a


def test_skip_first_leaves_out_self() -> None:
    sig = signature_of(Tools.method, skip_first=True)
    assert list(sig.input_schema["properties"]) == ["a"]
    assert signature_of(Tools().method).input_schema == sig.input_schema  # a bound method has no self


# -- bind: the whole arguments -----------------------------------------------------------------------


def two(a: int, b: float = 1.0) -> None:
    pass


def test_bind_checks_missing_unknown_and_types() -> None:
    sig = signature_of(two)
    assert sig.bind({"a": 1}) == {"a": 1}
    assert sig.bind({"a": 2.0, "b": 3}) == {"a": 2, "b": 3.0}  # 2.0 is an integer in JSON Schema; 3 a number
    for arguments, path, problem in [
        ({}, "a", "missing required argument"),
        ({"a": 1, "c": 1, "d": 2}, "", "unknown arguments: 'c', 'd'"),
        ({"a": True}, "a", "expected integer, got boolean"),
        ({"a": 1.5}, "a", "expected integer, got number"),
        ({"a": 1, "b": False}, "b", "expected number, got boolean"),
        ({"a": None}, "a", "expected integer, got null"),
        ([1], "", "the arguments must be an object, not array"),
    ]:
        error = bind_error(sig, arguments)
        assert (error.path, error.problem) == (path, problem)
        assert isinstance(error, ValueError)
    assert str(bind_error(sig, {"a": 1, "c": 1})) == "unknown argument: 'c'"


# -- output schemas and structured results -----------------------------------------------------------


def returns_int() -> int:
    return 1


def returns_list() -> List[int]:
    return [1]


def returns_point() -> Point:
    return Point(1.0, 2.0)


def returns_dict() -> Dict[str, int]:
    return {}


def returns_tuple() -> Tuple[int, str]:
    return (1, "x")


def returns_enum() -> Color:
    return Color.RED


def returns_optional_point() -> Optional[Point]:
    return None


def test_a_return_type_that_is_not_an_object_is_wrapped_in_result() -> None:
    sig = signature_of(returns_int)
    assert sig.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert sig.wraps_output and sig.structured(5) == {"result": 5}
    sig = signature_of(returns_list)
    assert sig.output_schema is not None
    assert sig.output_schema["properties"]["result"] == {"type": "array", "items": {"type": "integer"}}
    assert signature_of(returns_tuple).structured((1, "x")) == {"result": [1, "x"]}
    sig = signature_of(returns_enum)
    assert sig.wraps_output and sig.structured(Color.RED) == {"result": "red"}
    sig = signature_of(returns_optional_point)
    assert sig.wraps_output and sig.output_schema is not None and "Point" in sig.output_schema["$defs"]
    assert sig.structured(None) == {"result": None} and sig.structured(Point(1.0)) == {"result": {"x": 1.0, "y": 0.0}}
    for fn, value in ((returns_int, 1), (returns_tuple, (1, "x")), (returns_enum, Color.GREEN)):
        sig = signature_of(fn)
        check(sig.output_schema, sig.structured(value))
    check(sig.output_schema)


def test_an_object_return_type_is_the_output_schema_itself() -> None:
    sig = signature_of(returns_point)
    assert not sig.wraps_output
    assert sig.output_schema is not None and sig.output_schema["type"] == "object"
    assert sig.output_schema["required"] == ["x"] and "$defs" not in sig.output_schema
    assert sig.structured(Point(1.0, 2.0)) == {"x": 1.0, "y": 2.0}
    check(sig.output_schema, sig.structured(Point(1.0, 2.0)))
    with pytest.raises(TypeError, match="wants an object"):
        sig.structured(3)
    sig = signature_of(returns_dict)
    assert sig.output_schema == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert not sig.wraps_output and sig.structured({"a": 1}) == {"a": 1}


def returns_str() -> str:
    return ""


def returns_none() -> None:
    pass


def returns_nothing_said():  # type: ignore[no-untyped-def]
    pass


def returns_image() -> Image:
    raise NotImplementedError


def returns_blocks() -> List[Union[str, Image, ResourceLink]]:
    return []


def returns_str_or_image() -> Union[str, Image]:
    return ""


def returns_bytes() -> bytes:
    return b""


def returns_opaque() -> Opaque:
    return Opaque()


def returns_strings() -> List[str]:
    return []


def test_text_and_content_return_types_have_no_output_schema() -> None:
    for fn in (returns_str, returns_none, returns_nothing_said, returns_image, returns_blocks, returns_str_or_image):
        sig = signature_of(fn)
        assert (fn.__name__, sig.output_schema, sig.wraps_output) == (fn.__name__, None, False)
        assert sig.structured("anything") is None
    assert signature_of(returns_bytes).output_schema is None
    assert signature_of(returns_opaque).output_schema is None  # no schema for it: its result is text only
    assert signature_of(returns_strings).wraps_output  # a list of strings is data


def test_an_output_schema_given_or_refused() -> None:
    given = {"type": "object", "properties": {"n": {"type": "integer"}}}
    sig = signature_of(returns_int, output_schema=given)
    assert sig.output_schema == given and not sig.wraps_output
    assert sig.structured({"n": 1}) == {"n": 1}
    sig = signature_of(returns_int, output_schema={"type": "integer"})
    assert sig.wraps_output and sig.structured(3) == {"result": 3}
    sig = signature_of(returns_point, output_schema=None)
    assert sig.output_schema is None and sig.structured(Point(1.0)) is None
    with pytest.raises(TypeError, match="output_schema"):
        signature_of(returns_int, output_schema="object")


def test_a_signature_is_immutable() -> None:
    sig = signature_of(two)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sig.description = "changed"  # type: ignore[misc]
    assert json.loads(json.dumps(sig.input_schema)) == sig.input_schema


# -- pydantic (only when it is installed; the library never needs it) ---------------------------------


if pydantic is not None:

    class Address(pydantic.BaseModel):
        street: str
        zip: str = pydantic.Field(pattern=r"^[0-9]{5}$")

    class Person(pydantic.BaseModel):
        name: str
        address: Address
        friends: List[Person] = []  # noqa: RUF012 - pydantic copies a field's default

    def with_person(person: Person, note: Optional[str] = None) -> Person:
        return person


def with_field(count: Annotated[int, pydantic.Field(ge=1, le=5, description="how many")] = 1) -> None:
    pass


needs_pydantic = pytest.mark.skipif(pydantic is None, reason="pydantic is not installed")


@needs_pydantic
def test_pydantic_models_use_their_own_schema_and_validation() -> None:
    sig = signature_of(with_person)
    schema = sig.input_schema
    assert schema["properties"]["person"] == {"$ref": "#/$defs/Person"}
    assert set(schema["$defs"]) == {"Person", "Address"}
    assert schema["$defs"]["Person"]["properties"]["friends"]["items"] == {"$ref": "#/$defs/Person"}
    good = {"person": {"name": "a", "address": {"street": "s", "zip": "12345"}}}
    check(schema, good)
    person = sig.bind(good)["person"]
    assert isinstance(person, Person) and person.address.zip == "12345"
    error = bind_error(sig, {"person": {"name": "a", "address": {"street": "s", "zip": "1"}}})
    assert error.path == "person.address.zip" and "pattern" in error.problem
    error = bind_error(sig, {"person": {"name": "a", "address": {"street": "s", "zip": "12345"}, "friends": [{}]}})
    assert error.path == "person.friends[0].name"
    assert not sig.wraps_output and sig.output_schema is not None and sig.output_schema["type"] == "object"
    assert sig.structured(person) == {"name": "a", "address": {"street": "s", "zip": "12345"}, "friends": []}
    check(sig.output_schema, sig.structured(person))


@needs_pydantic
def test_pydantic_field_in_annotated_gives_description_and_bounds() -> None:
    sig = signature_of(with_field)
    assert sig.input_schema["properties"]["count"] == {
        "type": "integer",
        "description": "how many",
        "minimum": 1,
        "maximum": 5,
        "default": 1,
    }
    assert bind_error(sig, {"count": 6}).problem == "must be <= 5, got 6"
    check(sig.input_schema, {"count": 5})
