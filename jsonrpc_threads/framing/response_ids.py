"""The ids of the responses in a JSON text too large to decode, found as its bytes go by.

Theory of operation.  A message over the size limit is never held whole, so it
is never decoded; yet when it answers a pending request, that request should
fail at once (``MessageTooLarge``) instead of waiting for its deadline.  A
framing decoder that skips such a message feeds its bytes, as they arrive, to
a ``ResponseIdScan``, which follows just enough of JSON's grammar to tell,
once the text has ended, which responses it held:

- the top-level object (or each object of a top-level array: a batch) is read
  member by member: its keys, and the value of its ``id``;
- every other value (the ``result``, the ``params``, a nested object with an
  ``id`` of its own) is skipped by its brackets and strings, so an ``"id"``
  inside it, or inside a string (escaped quotes included), is never taken for
  the message's;
- an object is a response when it has a ``result`` or an ``error`` member and
  no ``method`` (a request or notification from the peer never fails one of
  ours), whatever the order of its keys (the official TypeScript SDK writes
  ``result`` before ``id``); its id is the value of its last ``id`` member (as
  ``json.loads`` reads a duplicated key), when that is an int or a str.

The answer is "unknown" (no ids, never a guess) for a text that has not ended
(its top-level value not closed, or more than whitespace after it), one that
breaks JSON's grammar as far as the scan follows it, one nested deeper than
``MAX_DEPTH``, and an object whose id is longer than ``MAX_ID_BYTES``.
The scan validates keys, the ``id`` and the structure around them, not every
byte of a skipped value: for a text that is not JSON it may name ids.

Pure: no I/O, no thread, no lock.  Cost: one regular-expression search per
string, bracket and top-level token; nothing is held but the key or id being
read and one byte per level of nesting.
"""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import List, Tuple, Union

    RequestId = Union[int, str]

#: The longest ``id`` read (its JSON text); an object with a longer one has no known id.
MAX_ID_BYTES = 1024
#: The deepest nesting followed: about what ``json.loads`` decodes (Python's recursion limit).
MAX_DEPTH = 1000
#: Keys longer than this (as JSON text) are none of ``id``, ``method``, ``result``, ``error``
#: (the longest, ``"method"``, written with every character escaped, takes 36).
_MAX_KEY_BYTES = 64

# What the scan is doing (one of these at a time).
_TOP = 0  # before the top-level value
_MEMBER_FIRST = 1  # in an object of interest, after "{"
_MEMBER_KEY = 2  # in an object of interest, after ","
_KEY = 3  # reading a key of an object of interest
_COLON = 4  # after a key
_MEMBER_VALUE = 5  # after ":"
_ID_STRING = 6  # reading an id that is a string
_ID_SCALAR = 7  # reading an id that is a number (or a literal)
_MEMBER_NEXT = 8  # after a member's value: "," or "}"
_BATCH_FIRST = 9  # in a top-level array, after "["
_BATCH_VALUE = 10  # in a top-level array, after ","
_BATCH_NEXT = 11  # after an element of the top-level array: "," or "]"
_SKIP_STRING = 12  # a string that is skipped, at the level of interest
_SKIP_SCALAR = 13  # a number or literal that is skipped, at the level of interest
_DEEP = 14  # inside a container that is skipped
_DEEP_STRING = 15  # inside a string within a container that is skipped
_END = 16  # after the top-level value: whitespace only
_UNKNOWN = 17  # nothing to learn any more (the answer is "unknown")

_STRING_MODES = (_KEY, _ID_STRING, _SKIP_STRING, _DEEP_STRING)

_NOT_WHITESPACE = re.compile(rb"[^ \t\n\r]")
_STRING_STOP = re.compile(rb'["\\]')
_DEEP_STOP = re.compile(rb'["\[\]{}]')
_SCALAR_END = re.compile(rb"[,}\] \t\n\r]")

_QUOTE = ord('"')
_BACKSLASH = ord("\\")
_OPEN_OBJECT = ord("{")
_CLOSE_OBJECT = ord("}")
_OPEN_ARRAY = ord("[")
_CLOSE_ARRAY = ord("]")
_COMMA = ord(",")
_COLON_BYTE = ord(":")
_PAIRS = {_CLOSE_OBJECT: _OPEN_OBJECT, _CLOSE_ARRAY: _OPEN_ARRAY}
_VALUE_CANNOT_START = frozenset((_CLOSE_OBJECT, _CLOSE_ARRAY, _COMMA, _COLON_BYTE))

# The keys that matter, and what the current key is.
_OTHER_KEY = 0
_ID_KEY = 1
_METHOD_KEY = 2
_ANSWER_KEY = 3  # "result" or "error"
_KEYS = {"id": _ID_KEY, "method": _METHOD_KEY, "result": _ANSWER_KEY, "error": _ANSWER_KEY}

#: The id of an object that has none (yet), or none that is an int or a str.
_NO_ID = object()


class ResponseIdScan:
    """Feed it one JSON text in pieces; ``response_ids`` then names the responses it held.

    Not thread-safe: one decoder feeds it.  See the module docstring for the rules.
    """

    __slots__ = (
        "_capture",
        "_captured_too_much",
        "_escaped",
        "_found",
        "_has_answer",
        "_has_method",
        "_id",
        "_key",
        "_mode",
        "_return_depth",
        "_return_mode",
        "_stack",
    )

    def __init__(self) -> None:
        self._mode = _TOP
        self._stack = bytearray()  # the open containers, outermost first
        self._escaped = False  # inside a string, right after a backslash
        self._capture = bytearray()  # the key or id being read (its JSON text, quotes excluded)
        self._captured_too_much = False
        self._key = _OTHER_KEY
        self._return_mode = _MEMBER_NEXT  # where a skipped value hands back
        self._return_depth = 0  # ... once the nesting is back to this depth
        self._found: List[RequestId] = []
        # The object of interest being read:
        self._has_answer = False
        self._has_method = False
        self._id: object = _NO_ID

    def feed(self, data: bytes) -> None:
        """The next bytes of the text."""
        position = 0
        end = len(data)
        while position < end:
            mode = self._mode
            if mode == _DEEP:
                found = _DEEP_STOP.search(data, position)
                if found is None:
                    return
                position = found.end()
                self._deep(data[position - 1])
            elif mode in _STRING_MODES:
                position = self._string(data, position)
            elif mode in (_SKIP_SCALAR, _ID_SCALAR):
                position = self._scalar(data, position)
            elif mode == _UNKNOWN:
                return
            else:
                found = _NOT_WHITESPACE.search(data, position)
                if found is None:
                    return
                position = self._token(data[found.start()], found.start())

    def response_ids(self) -> Tuple[RequestId, ...]:
        """The ids of the responses the text held, in order, once it has ended; ``()`` for "unknown"."""
        return tuple(self._found) if self._mode == _END else ()

    # -- the level of interest: one token at a time ---------------------------------------

    def _token(self, byte: int, position: int) -> int:
        """Take the token that starts with ``byte`` at ``position``; return where the scan goes on."""
        mode = self._mode
        after = position + 1
        if mode == _TOP:
            if byte == _OPEN_OBJECT:
                self._open_object()
            elif byte == _OPEN_ARRAY:
                self._push(byte)
                self._mode = _BATCH_FIRST
            else:
                self._mode = _UNKNOWN  # a string, a number, a literal: no response
        elif mode in (_MEMBER_FIRST, _MEMBER_KEY):
            if byte == _QUOTE:
                self._capture.clear()
                self._captured_too_much = False
                self._mode = _KEY
            elif byte == _CLOSE_OBJECT and mode == _MEMBER_FIRST:
                self._close_object()
            else:
                self._mode = _UNKNOWN
        elif mode == _COLON:
            self._mode = _MEMBER_VALUE if byte == _COLON_BYTE else _UNKNOWN
        elif mode == _MEMBER_VALUE:
            return self._member_value(byte, position)
        elif mode == _MEMBER_NEXT:
            if byte == _COMMA:
                self._mode = _MEMBER_KEY
            elif byte == _CLOSE_OBJECT:
                self._close_object()
            else:
                self._mode = _UNKNOWN
        elif mode in (_BATCH_FIRST, _BATCH_VALUE):
            if byte == _CLOSE_ARRAY and mode == _BATCH_FIRST:
                self._stack.pop()
                self._mode = _END
            elif byte == _OPEN_OBJECT:
                self._open_object()
            else:
                return self._skip_value(byte, position, _BATCH_NEXT)
        elif mode == _BATCH_NEXT:
            if byte == _COMMA:
                self._mode = _BATCH_VALUE
            elif byte == _CLOSE_ARRAY:
                self._stack.pop()
                self._mode = _END
            else:
                self._mode = _UNKNOWN
        else:  # _END: more than whitespace after the text
            self._mode = _UNKNOWN
        return after

    def _member_value(self, byte: int, position: int) -> int:
        if self._key != _ID_KEY:
            return self._skip_value(byte, position, _MEMBER_NEXT)
        self._capture.clear()
        self._captured_too_much = False
        if byte == _QUOTE:
            self._mode = _ID_STRING
            return position + 1
        if byte in (_OPEN_OBJECT, _OPEN_ARRAY):
            self._id = _NO_ID
            return self._skip_value(byte, position, _MEMBER_NEXT)
        if byte in _VALUE_CANNOT_START:
            self._mode = _UNKNOWN
            return position + 1
        self._mode = _ID_SCALAR
        return position

    def _skip_value(self, byte: int, position: int, then: int) -> int:
        """Skip the value that starts with ``byte``; the scan goes on in mode ``then`` after it."""
        self._return_mode = then
        if byte == _QUOTE:
            self._mode = _SKIP_STRING
            return position + 1
        if byte in (_OPEN_OBJECT, _OPEN_ARRAY):
            self._return_depth = len(self._stack)
            self._push(byte)
            if self._mode != _UNKNOWN:
                self._mode = _DEEP
            return position + 1
        if byte in _VALUE_CANNOT_START:
            self._mode = _UNKNOWN
            return position + 1
        self._mode = _SKIP_SCALAR
        return position

    def _open_object(self) -> None:
        self._push(_OPEN_OBJECT)
        self._has_answer = False
        self._has_method = False
        self._id = _NO_ID
        if self._mode != _UNKNOWN:
            self._mode = _MEMBER_FIRST

    def _close_object(self) -> None:
        self._stack.pop()
        request_id = self._id
        if self._has_answer and not self._has_method and request_id is not _NO_ID:
            self._found.append(request_id)  # type: ignore[arg-type]
        self._mode = _BATCH_NEXT if self._stack else _END

    def _push(self, byte: int) -> None:
        if len(self._stack) >= MAX_DEPTH:
            self._mode = _UNKNOWN
            return
        self._stack.append(byte)

    # -- strings, scalars, skipped containers ----------------------------------------------

    def _string(self, data: bytes, position: int) -> int:
        """Go on with a string; return where the scan goes on."""
        mode = self._mode
        reading = mode in (_KEY, _ID_STRING)
        if self._escaped:  # the byte after a backslash is never the string's end
            self._escaped = False
            if reading:
                self._keep(data[position : position + 1])
            return position + 1
        found = _STRING_STOP.search(data, position)
        if found is None:
            if reading:
                self._keep(data[position:])
            return len(data)
        stop = found.start()
        if data[stop] == _BACKSLASH:
            if reading:
                self._keep(data[position : stop + 1])
            self._escaped = True
            return stop + 1
        if reading:
            self._keep(data[position:stop])
        if mode == _DEEP_STRING:
            self._mode = _DEEP
        elif mode == _SKIP_STRING:
            self._mode = self._return_mode
        elif mode == _KEY:
            self._end_key()
        else:
            self._end_id(string=True)
        return stop + 1

    def _scalar(self, data: bytes, position: int) -> int:
        """Go on with a number or a literal; return where the scan goes on."""
        found = _SCALAR_END.search(data, position)
        stop = len(data) if found is None else found.start()
        if self._mode == _ID_SCALAR:
            self._keep(data[position:stop])
            if found is not None:
                self._end_id(string=False)
        elif found is not None:
            self._mode = self._return_mode
        return stop

    def _deep(self, byte: int) -> None:
        """A quote or a bracket inside a skipped container."""
        if byte == _QUOTE:
            self._mode = _DEEP_STRING
        elif byte in (_OPEN_OBJECT, _OPEN_ARRAY):
            self._push(byte)
        elif self._stack[-1] != _PAIRS[byte]:
            self._mode = _UNKNOWN
        else:
            self._stack.pop()
            if len(self._stack) == self._return_depth:
                self._mode = self._return_mode

    def _keep(self, piece: bytes) -> None:
        capture = self._capture
        limit = _MAX_KEY_BYTES if self._mode == _KEY else MAX_ID_BYTES
        if len(capture) + len(piece) > limit:
            self._captured_too_much = True
        else:
            capture += piece

    def _end_key(self) -> None:
        self._mode = _COLON
        self._key = _OTHER_KEY
        if self._captured_too_much:
            return
        try:
            key = json.loads(self._capture.decode("utf-8").join('""'))
        except ValueError:  # a bad escape, bad UTF-8, a control character
            self._mode = _UNKNOWN
            return
        self._key = kind = _KEYS.get(key, _OTHER_KEY)
        if kind == _METHOD_KEY:
            self._has_method = True
        elif kind == _ANSWER_KEY:
            self._has_answer = True

    def _end_id(self, *, string: bool) -> None:
        self._mode = _MEMBER_NEXT
        if self._captured_too_much:
            self._id = _NO_ID
            return
        try:
            text = self._capture.decode("utf-8")
            value = json.loads(text.join('""') if string else text)
        except ValueError:  # a bad escape, bad UTF-8, not a number
            self._mode = _UNKNOWN
            return
        self._id = value if type(value) is str or type(value) is int else _NO_ID


def response_ids(text: bytes) -> Tuple[RequestId, ...]:
    """The ids of the responses a whole JSON text holds (see ``ResponseIdScan``)."""
    scan = ResponseIdScan()
    scan.feed(text)
    return scan.response_ids()


__all__ = ["MAX_DEPTH", "MAX_ID_BYTES", "ResponseIdScan", "response_ids"]
