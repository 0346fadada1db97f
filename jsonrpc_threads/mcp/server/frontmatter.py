"""The YAML frontmatter of a ``SKILL.md``, read with the standard library: a small subset, or a clear refusal (pure).

Theory of operation.  A skill's entry carries its frontmatter "rendered
verbatim as a JSON object", and every client compares it, field by field, with
what its own YAML parser makes of the file (ours uses PyYAML's YAML 1.1; the
official suite's a YAML 1.2 parser).  Serving a frontmatter that some parser
reads differently would make the skill unloadable, so this module reads only
the part of YAML on which those parsers agree, and refuses the rest with a
``ValueError`` that says what to write instead (usually: quote the value).

What is read: a mapping of ``key: value`` lines at the top level; a key with
no value followed by more indented ``key: value`` lines (a nested mapping, to
any depth) or by ``- item`` lines (a list of scalars); full-line and trailing
``#`` comments; scalars that are single- or double-quoted on one line, or
plain.  A plain scalar is a string unless it is ``null``/``~``/empty (None),
``true``/``false`` in any of YAML's three spellings (a bool), a decimal
integer without leading zeros, or a decimal ``1.5``-style float; a plain
scalar some parser would read otherwise (``yes``, ``on``, ``0x1F``, ``010``,
``1e3``, ``.inf``, a date) is refused, as are flow collections, block
scalars (``|``, ``>``), anchors, tags, multi-line scalars and duplicate keys.

Thread-safety: pure functions of their arguments.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Tuple

__all__ = ["FRONTMATTER", "parse_frontmatter"]

#: The frontmatter block at the top of a SKILL.md: the opening ``---`` line, the YAML, the closing ``---``.
FRONTMATTER = re.compile(r"\A\ufeff?---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_KEY = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.\-/]*)[ \t]*:(?:[ \t]+(.*))?\Z")
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\.[0-9]+")
_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
#: Plain scalars that YAML 1.1 or 1.2 parsers read as something other than a string (or disagree on).
_AMBIGUOUS = re.compile(
    r"""(?:yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|y|Y|n|N|=|<<)
    |[-+]?(?:0b[01_]+|0o?[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?)
    |[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)(?:[eE][-+]?[0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)
    |[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]|[ \t]+).*)?""",
    re.VERBOSE,
)
_ESCAPES = {"\\": "\\", '"': '"', "/": "/", "n": "\n", "t": "\t", "r": "\r", "0": "\0"}
_INDICATORS = "[]{},&*!|>'\"%@`#"


def parse_frontmatter(text: str) -> Dict[str, Any]:
    """The frontmatter of a ``SKILL.md`` as JSON-ready data.

    Args:
        text: the whole ``SKILL.md``.

    Returns:
        The frontmatter mapping.

    Raises:
        ValueError: no frontmatter block, or YAML outside the subset this
            module reads (the message names the line and what to do).
    """
    match = FRONTMATTER.match(text)
    if match is None:
        raise ValueError("SKILL.md does not begin with a frontmatter block (a '---' line, the YAML, a '---' line)")
    lines = [line.rstrip("\r") for line in match.group(1).split("\n")]
    parsed, end = _mapping(lines, _next(lines, 0), 0)
    if end < len(lines):
        raise ValueError(f"frontmatter line {end + 1}: unexpected indentation")
    return parsed


def _next(lines: List[str], i: int) -> int:
    """The index of the next line with content (skipping blank lines and comments)."""
    while i < len(lines) and (not lines[i].strip() or lines[i].lstrip().startswith("#")):
        i += 1
    return i


def _indent(lines: List[str], i: int) -> int:
    line = lines[i]
    stripped = line.lstrip(" ")
    if stripped.startswith("\t"):
        raise ValueError(f"frontmatter line {i + 1}: indent with spaces, not tabs")
    return len(line) - len(stripped)


def _mapping(lines: List[str], i: int, indent: int) -> Tuple[Dict[str, Any], int]:
    result: Dict[str, Any] = {}
    while i < len(lines):
        here = _indent(lines, i)
        if here < indent:
            break
        if here > indent:
            raise ValueError(f"frontmatter line {i + 1}: unexpected indentation (a value over several lines?)")
        match = _KEY.match(lines[i][here:])
        if match is None:
            raise ValueError(f"frontmatter line {i + 1}: not a 'key: value' line this server reads")
        key = match.group(1)
        if not isinstance(_plain(key, i), str):
            raise ValueError(f"frontmatter line {i + 1}: the key {key!r} is not a string in YAML; rename it")
        if key in result:
            raise ValueError(f"frontmatter line {i + 1}: the key {key!r} appears twice")
        rest = _strip_comment(match.group(2) or "")
        following = _next(lines, i + 1)
        if rest:
            result[key] = _scalar(rest, i)
            i = following
        elif following < len(lines) and lines[following].lstrip(" ").startswith("-"):
            result[key], i = _sequence(lines, following, _indent(lines, following), indent)
        elif following < len(lines) and _indent(lines, following) > indent:
            result[key], i = _mapping(lines, following, _indent(lines, following))
        else:
            result[key] = None
            i = following
    return result, i


def _sequence(lines: List[str], i: int, indent: int, parent: int) -> Tuple[List[Any], int]:
    if indent < parent:
        raise ValueError(f"frontmatter line {i + 1}: unexpected indentation")
    items: List[Any] = []
    while i < len(lines) and _indent(lines, i) == indent:
        item = lines[i][indent:]
        if not (item == "-" or item.startswith("- ")):
            break
        value = _strip_comment(item[1:].strip())
        if _KEY.match(value) or value.startswith("- "):
            raise ValueError(f"frontmatter line {i + 1}: lists of mappings or lists are not read; use scalars")
        items.append(_scalar(value, i))
        i = _next(lines, i + 1)
    return items, i


def _strip_comment(value: str) -> str:
    value = value.strip()
    if value.startswith(("'", '"')):
        return value  # a quoted scalar ends at its quote; _scalar checks what follows
    if value.startswith("#"):
        return ""
    cut = value.find(" #")
    return (value[:cut] if cut >= 0 else value).rstrip()


def _scalar(value: str, i: int) -> Any:
    if value.startswith('"'):
        return _double_quoted(value, i)
    if value.startswith("'"):
        return _single_quoted(value, i)
    return _plain(value, i)


def _after_quote(rest: str, i: int) -> None:
    rest = rest.strip()
    if rest and not rest.startswith("#"):
        raise ValueError(f"frontmatter line {i + 1}: text after a quoted value")


def _double_quoted(value: str, i: int) -> str:
    out: List[str] = []
    j = 1
    while j < len(value):
        char = value[j]
        if char == '"':
            _after_quote(value[j + 1 :], i)
            return "".join(out)
        if char == "\\":
            escape = value[j + 1 : j + 2]
            if escape == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", value[j + 2 : j + 6]):
                out.append(chr(int(value[j + 2 : j + 6], 16)))
                j += 6
                continue
            if escape not in _ESCAPES:
                raise ValueError(f"frontmatter line {i + 1}: the escape \\{escape} is not read; write the character")
            out.append(_ESCAPES[escape])
            j += 2
            continue
        out.append(char)
        j += 1
    raise ValueError(f"frontmatter line {i + 1}: a double-quoted value must end on its line")


def _single_quoted(value: str, i: int) -> str:
    out: List[str] = []
    j = 1
    while j < len(value):
        if value[j] == "'":
            if value[j + 1 : j + 2] == "'":
                out.append("'")
                j += 2
                continue
            _after_quote(value[j + 1 :], i)
            return "".join(out)
        out.append(value[j])
        j += 1
    raise ValueError(f"frontmatter line {i + 1}: a single-quoted value must end on its line")


def _plain(value: str, i: int) -> Any:
    if value in _NULL:
        return None
    if value in _BOOL:
        return _BOOL[value]
    if _INT.fullmatch(value):
        return int(value)
    if _FLOAT.fullmatch(value):
        return float(value)
    if _AMBIGUOUS.fullmatch(value):
        raise ValueError(f"frontmatter line {i + 1}: YAML parsers read {value!r} differently; quote it")
    if value[0] in _INDICATORS or value[:2] in ("- ", "? ", ": ") or value in ("-", "?", ":"):
        raise ValueError(f"frontmatter line {i + 1}: {value!r} starts with a YAML indicator; quote it")
    if ": " in value or value.endswith(":") or "\t#" in value:
        raise ValueError(f"frontmatter line {i + 1}: {value!r} holds ': ' or a comment; quote it")
    return value
