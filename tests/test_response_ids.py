"""The id scan of an oversized answer, pure: the same answer as ``json.loads`` of the whole text, or none.

``ResponseIdScan`` is fed a JSON
text in pieces and names the responses it held.  Checked here: key orders (the
TypeScript SDK writes ``result`` before ``id``), an ``id`` nested in ``result``,
``error`` or ``params`` or inside a string, requests and notifications, batches,
duplicated keys, escapes; every split of a text and every prefix of it; and,
with hypothesis, any JSON text against ``json.loads`` of it.
"""

from __future__ import annotations

import json
from typing import Any, List, Sequence, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jsonrpc_threads.framing.response_ids import MAX_DEPTH, MAX_ID_BYTES, ResponseIdScan, response_ids

from .tiers import budget

SETTINGS = settings(max_examples=budget(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def oracle(text: bytes) -> Tuple[Any, ...]:
    """What the client would settle: the ids of the responses in ``json.loads`` of the whole text."""
    value = json.loads(text.decode("utf-8"))
    items = value if isinstance(value, list) else [value]
    return tuple(
        item["id"]
        for item in items
        if isinstance(item, dict)
        and "method" not in item
        and ("result" in item or "error" in item)
        and type(item.get("id")) in (int, str)
    )


def scan_in_pieces(text: bytes, cuts: Sequence[int]) -> Tuple[Any, ...]:
    scan = ResponseIdScan()
    start = 0
    for cut in sorted(set(cuts)):
        scan.feed(text[start:cut])
        start = cut
    scan.feed(text[start:])
    return scan.response_ids()


def check_every_split(text: bytes, *, prefixes: bool = True) -> Tuple[Any, ...]:
    """The answer for ``text``, the same however it is split in two; with ``prefixes``, unknown for a prefix."""
    whole = response_ids(text)
    for offset in range(len(text) + 1):
        assert scan_in_pieces(text, [offset]) == whole, offset
        if prefixes and text[offset:].strip():  # a prefix that stops before the text ended
            assert response_ids(text[:offset]) == (), offset
    return whole


CASES = [
    # (text, ids)
    ('{"jsonrpc": "2.0", "id": 1, "result": "x"}', (1,)),
    ('{"result": {"content": []}, "jsonrpc": "2.0", "id": 7}', (7,)),  # the TypeScript SDK's order
    ('{"id": "abc", "jsonrpc": "2.0", "error": {"code": -1, "message": "no"}}', ("abc",)),
    ('{"jsonrpc": "2.0", "result": {"id": 99, "items": [{"id": 98}]}, "id": 3}', (3,)),
    ('{"jsonrpc": "2.0", "error": {"code": 1, "message": "m", "data": {"id": 5}}, "id": 4}', (4,)),
    ('{"result": "{\\"id\\": 5, \\"x\\": \\"\\\\\\"\\"}", "id": 6}', (6,)),  # ids and quotes inside a string
    ('{"result": ["\\"id\\":", {"id": 1}], "id": -0}', (0,)),
    ('{"jsonrpc": "2.0", "method": "progress", "params": {"id": 2}}', ()),  # a notification
    ('{"jsonrpc": "2.0", "id": 2, "method": "sampling", "params": {}}', ()),  # a request of the peer
    ('{"id": 2, "result": 1, "method": "x"}', ()),  # not a response, as the client reads it
    ('{"id": 2, "params": {"result": 1}}', ()),  # "result" nested, not a member
    ('{"id": 2}', ()),
    ('{"result": 1}', ()),
    ('{"result": 1, "id": null}', ()),
    ('{"result": 1, "id": 1.5}', ()),
    ('{"result": 1, "id": 1e3}', ()),
    ('{"result": 1, "id": true}', ()),
    ('{"result": 1, "id": [1]}', ()),
    ('{"result": 1, "id": {"id": 1}}', ()),
    ('{"id": 1, "result": 1, "id": 2}', (2,)),  # the last one, as json.loads reads it
    ('{"id": 1, "result": 1, "id": null}', ()),
    ('{"\\u0069d": 8, "\\u0065rror": {}}', (8,)),  # escaped keys
    ('{"id": "caf\\u00e9 \\ud83d\\ude00", "result": 0}', ("caf\u00e9 \U0001f600",)),
    ('{"id": "caf\u00e9", "result": 0}', ("caf\u00e9",)),
    (' \r\n\t{ "id" :1 , "result" : [ ] } \n', (1,)),
    ('[{"id": 1, "result": 1}, {"method": "n"}, {"id": 2, "error": {}}, 3, [{"id": 4, "result": 1}], "x"]', (1, 2)),
    ("[]", ()),
    ("{}", ()),
    ('"just a string"', ()),
    ("42", ()),
    ("null", ()),
    ('{"id": 12345678901234567890123, "result": 0}', (12345678901234567890123,)),
]


@pytest.mark.parametrize(("text", "ids"), CASES, ids=[str(i) for i in range(len(CASES))])
def test_the_ids_of_the_responses_a_text_holds_however_it_is_split(text: str, ids: Tuple[Any, ...]) -> None:
    data = text.encode("utf-8")
    assert oracle(data) == ids
    assert check_every_split(data) == ids


@pytest.mark.parametrize(
    "text",
    [
        '{"id": 1, "result": 1',  # never closed
        '{"id": 1, "result": 1}}',
        '{"id": 1, "result": 1} {"id": 2, "result": 1}',  # two texts
        '{"id": 1, "result": [1}',  # brackets that do not pair
        '{"id": 1, "result": {]}',
        '{"id": 1, "result": 1,}',
        '{"id": 1 "result": 1}',
        '{"id": 01, "result": 1}',
        '{"id": -, "result": 1}',
        '{"id": "\\x", "result": 1}',  # a bad escape
        '{"id": "a\u0001b", "result": 1}',  # a control character in a string
        '{id: 1, "result": 1}',
        '{"id": 1, "result": 1]',
        '[{"id": 1, "result": 1},]',
        '[{"id": 1, "result": 1}',
        '\ufeff{"id": 1, "result": 1}',  # a byte-order mark: the client refuses it too
    ],
)
def test_no_id_for_a_text_that_is_not_json(text: str) -> None:
    data = text.encode("utf-8")
    with pytest.raises(ValueError):
        json.loads(data.decode("utf-8"))
    assert check_every_split(data, prefixes=False) == ()


def test_an_id_in_bytes_that_are_not_utf8_is_unknown() -> None:
    assert response_ids(b'{"id": "\xff", "result": 1}') == ()
    assert response_ids(b'{"i\xffd": 1, "result": 1}') == ()


def test_an_id_longer_than_the_limit_is_unknown_and_one_at_it_is_found() -> None:
    at_limit = "x" * MAX_ID_BYTES
    assert response_ids(json.dumps({"result": 1, "id": at_limit}).encode()) == (at_limit,)
    assert response_ids(json.dumps({"result": 1, "id": at_limit + "x"}).encode()) == ()
    assert response_ids(b'{"result": 1, "id": 1' + b"0" * MAX_ID_BYTES + b"}") == ()


def test_a_key_longer_than_any_it_looks_for_is_skipped() -> None:
    assert response_ids(json.dumps({"k" * 10_000: 1, "result": 1, "id": 3}).encode()) == (3,)


def test_nesting_deeper_than_the_limit_is_unknown() -> None:
    shallow = "[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2)
    deep = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert response_ids(f'{{"result": {shallow}, "id": 1}}'.encode()) == (1,)
    assert response_ids(f'{{"result": {deep}, "id": 1}}'.encode()) == ()


def test_a_large_answer_with_its_id_at_the_end_fed_in_reads_of_any_size() -> None:
    result = {"content": [{"type": "text", "text": 'x"\\' * budget(50_000), "id": 5} for _ in range(20)], "id": 4}
    text = json.dumps({"result": result, "jsonrpc": "2.0", "id": 3}).encode()
    for size in (1, 7, 4096, 65536, len(text)):
        scan = ResponseIdScan()
        for start in range(0, len(text), size):
            if size == 1 and 1000 < start < len(text) - 1000:
                continue  # byte by byte only at both ends (the middle is the same string)
            scan.feed(text[start : start + size])
        if size != 1:
            assert scan.response_ids() == (3,), size


# -- any JSON text, against json.loads --------------------------------------------------------------

_WHITESPACE = st.sampled_from(["", "", " ", "\n", "\r\n", "\t", "  "])
_KEYS = st.sampled_from(["id", "jsonrpc", "result", "error", "method", "params", "data", "ID", "i d", "x"])


_SHORT_TEXT = st.text(max_size=8)


@st.composite
def json_strings(draw: st.DrawFn, text: st.SearchStrategy[str] = _SHORT_TEXT) -> str:
    """A JSON string for ``text``, every character possibly escaped (so keys may be spelled ``"\\u0069d"``)."""
    value = draw(text | st.sampled_from(['"id": 1', '\\"id\\":', "}", "]", '"', "\\", "\u2028"]))
    out = ['"']
    for char in value:
        plain = json.dumps(char, ensure_ascii=draw(st.booleans()))[1:-1]
        if draw(st.integers(0, 5)) == 0 and len(char) == 1 and ord(char) < 0x10000:
            plain = f"\\u{ord(char):04x}"
        out.append(plain)
    out.append('"')
    return "".join(out)


@st.composite
def json_values(draw: st.DrawFn, depth: int = 0) -> str:
    """Any JSON text, with whitespace around tokens and objects whose keys may repeat."""
    kinds = ["literal", "number", "string"] + (["object", "array"] * 2 if depth < 4 else [])
    kind = draw(st.sampled_from(kinds))
    space = draw(_WHITESPACE)
    if kind == "literal":
        return draw(st.sampled_from(["true", "false", "null"]))
    if kind == "number":
        number = draw(st.integers(-(10**20), 10**20) | st.floats(allow_nan=False, allow_infinity=False))
        return json.dumps(number)
    if kind == "string":
        return draw(json_strings())
    if kind == "array":
        items = draw(st.lists(json_values(depth + 1), max_size=4))
        return "[" + space + ("," + space).join(items) + space + "]"
    members = draw(
        st.lists(
            st.tuples(json_strings(_KEYS | st.text(max_size=4)), json_values(depth + 1)),
            max_size=5,
        )
    )
    return "{" + space + ("," + space).join(f"{key}{space}:{space}{value}" for key, value in members) + space + "}"


@st.composite
def messages(draw: st.DrawFn) -> str:
    """JSON-RPC-shaped texts (responses in any key order, requests, notifications, batches), and any JSON."""

    def one() -> str:
        members: List[Tuple[str, str]] = []
        if draw(st.booleans()):
            members.append(('"jsonrpc"', '"2.0"'))
        if draw(st.integers(0, 4)):
            members.append(('"id"', draw(st.sampled_from(["1", "-7", "0", '"a"', '"\\u0031"', "null", "2.5"]))))
        role = draw(st.sampled_from(["result", "result", "error", "method", "method+params", "nothing"]))
        if role in ("result", "error"):
            members.append((f'"{role}"', draw(json_values(1))))
        elif role != "nothing":
            members.append(('"method"', '"m"'))
            if role == "method+params":
                members.append(('"params"', draw(json_values(1))))
        if draw(st.booleans()):
            members.append((draw(json_strings(_KEYS)), draw(json_values(1))))
        order = draw(st.permutations(members))
        space = draw(_WHITESPACE)
        return "{" + ",".join(f"{space}{key}{space}:{space}{value}" for key, value in order) + "}"

    shape = draw(st.sampled_from(["one", "one", "batch", "any"]))
    if shape == "one":
        body = one()
    elif shape == "batch":
        body = "[" + ",".join(one() for _ in range(draw(st.integers(0, 3)))) + "]"
    else:
        body = draw(json_values())
    return draw(_WHITESPACE) + body + draw(_WHITESPACE)


@SETTINGS
@given(messages(), st.lists(st.integers(min_value=0, max_value=2000), max_size=6))
def test_any_json_text_in_any_pieces_gives_what_json_loads_of_it_gives(text: str, cuts: List[int]) -> None:
    data = text.encode("utf-8")
    expected = oracle(data)
    assert response_ids(data) == expected
    assert scan_in_pieces(data, cuts) == expected


@SETTINGS
@given(messages(), st.data())
def test_a_text_cut_short_is_unknown(text: str, data: st.DataObject) -> None:
    encoded = text.encode("utf-8")
    ended = len(encoded.rstrip(b" \t\r\n"))
    cut = data.draw(st.integers(min_value=0, max_value=max(0, ended - 1)))
    assert response_ids(encoded[:cut]) == ()


@SETTINGS
@given(messages(), st.integers(min_value=0, max_value=2000), st.binary(min_size=1, max_size=3))
def test_a_damaged_text_never_names_an_id_json_loads_would_not(text: str, where: int, junk: bytes) -> None:
    data = text.encode("utf-8")
    where = min(where, len(data))
    damaged = data[:where] + junk + data[where:]
    try:
        expected = oracle(damaged)
    except ValueError:
        expected = None
    found = response_ids(damaged)
    if expected is not None:
        assert found == expected
    else:
        # Not JSON: the scan may name ids only where the damage is inside a skipped value.
        assert set(found) <= set(oracle(data))
