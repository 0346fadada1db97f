"""Positions in a text document, as the Language Server Protocol counts them.

A position is ``(line, character)``, both from 0.  Lines end at ``\\n``,
``\\r\\n`` or ``\\r``.  What a *character* is depends on the position encoding
that client and server agreed on in ``initialize``:

- ``"utf-16"`` (the protocol's default, and the only one every server speaks):
  UTF-16 code units, so a character outside the Basic Multilingual Plane
  (most emoji, ``"\\U0001d518"``) counts 2;
- ``"utf-8"``: bytes of the line's UTF-8 encoding (``"é"`` counts 2);
- ``"utf-32"``: code points, which is what a Python ``str`` index counts.

A Python string offset (``text.index("greet")``) is a code point index into the
whole text; ``position_from_offset`` turns it into a position in any of the
three encodings, and ``offset_from_position`` turns a server's position
back into an offset.  For ASCII text all three agree with plain column numbers.

Pure: no I/O, no state.
"""

from __future__ import annotations

import re
from typing import Iterator, Tuple

UTF8 = "utf-8"
UTF16 = "utf-16"
UTF32 = "utf-32"
#: The encodings this package converts, in the protocol's spelling.
ENCODINGS = (UTF16, UTF8, UTF32)
#: The encoding a server uses when it names none (the protocol's default).
DEFAULT_ENCODING = UTF16

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def check_encoding(encoding: str) -> str:
    """``encoding`` if it is one of ``ENCODINGS``.

    Raises:
        ValueError: for any other value.
    """
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown position encoding {encoding!r} (use one of {', '.join(ENCODINGS)})")
    return encoding


def units(text: str, encoding: str) -> int:
    """How many characters ``text`` counts in ``encoding`` (code units; bytes for UTF-8).

    Raises:
        ValueError: for an unknown encoding.
    """
    if encoding == UTF16:
        return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    if encoding == UTF32:
        return len(text)
    raise ValueError(check_encoding(encoding))


def _lines(text: str) -> Iterator[Tuple[int, int]]:
    """``(start, end)`` of each line's content (its line break excluded), the last line included."""
    start = 0
    for found in _LINE_BREAK.finditer(text):
        yield start, found.start()
        start = found.end()
    yield start, len(text)


def position_from_offset(text: str, offset: int, encoding: str = DEFAULT_ENCODING) -> Tuple[int, int]:
    """The LSP position of a Python string offset into ``text``.

    Args:
        text: the whole document.
        offset: a code point index into ``text`` (``0 <= offset <= len(text)``),
            as ``str.index`` returns; an offset inside a line break stands
            for the end of that line.
        encoding: the position encoding (``"utf-16"``, ``"utf-8"`` or ``"utf-32"``).

    Returns:
        ``(line, character)``, both from 0, ``character`` counted in ``encoding``.

    Raises:
        ValueError: for an offset outside the text or an unknown encoding.
    """
    check_encoding(encoding)
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise TypeError(f"offset must be an int, not {type(offset).__name__}")
    if not 0 <= offset <= len(text):
        raise ValueError(f"offset {offset} is outside the text (0..{len(text)})")
    line = 0
    start = 0
    for found in _LINE_BREAK.finditer(text):
        if offset < found.end():
            return line, units(text[start : min(offset, found.start())], encoding)
        line += 1
        start = found.end()
    return line, units(text[start:offset], encoding)


def offset_from_position(text: str, line: int, character: int, encoding: str = DEFAULT_ENCODING) -> int:
    """The Python string offset of an LSP position in ``text``.

    As the protocol says, a ``character`` past the end of its line stands for
    the end of the line, and a line past the last one for the end of the text.
    A ``character`` that falls inside one code point (the second half of a
    UTF-16 surrogate pair, the middle of a UTF-8 sequence) stands for the
    start of that code point.

    Args:
        text: the whole document.
        line: the line, from 0.
        character: the character within the line, from 0, counted in ``encoding``.
        encoding: the position encoding (``"utf-16"``, ``"utf-8"`` or ``"utf-32"``).

    Returns:
        A code point index into ``text`` (``0 <= offset <= len(text)``).

    Raises:
        ValueError: for a negative line or character, or an unknown encoding.
    """
    check_encoding(encoding)
    if line < 0 or character < 0:
        raise ValueError(f"a position is never negative: ({line}, {character})")
    for number, (start, end) in enumerate(_lines(text)):
        if number == line:
            counted = 0
            for index in range(start, end):
                width = units(text[index], encoding)
                if counted + width > character:
                    return index
                counted += width
            return end
    return len(text)


__all__ = [
    "DEFAULT_ENCODING",
    "ENCODINGS",
    "UTF8",
    "UTF16",
    "UTF32",
    "check_encoding",
    "offset_from_position",
    "position_from_offset",
    "units",
]
