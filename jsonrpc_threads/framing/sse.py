"""Server-sent events (``text/event-stream``), decoded by the rules of the WHATWG HTML standard.

An event stream is UTF-8 text in lines, and a line ends with CRLF, LF or a
lone CR (a CRLF split between two reads is still one line end).  A line is a
field (``name: value``; one space after the colon is dropped; a name alone
means an empty value), a comment (it starts with ``:``), or blank: a blank
line ends the event.  The fields are ``data`` (several ``data`` lines are
joined with LF), ``id`` (ignored when it holds a NUL), ``event`` and ``retry``
(the reconnection delay in milliseconds, ignored unless all ASCII digits);
other names are ignored.  One byte-order mark at the very start is skipped.
An event cut off by the end of the stream is dropped, never handed back.

Two departures from what a browser's ``EventSource`` dispatches, both for MCP:

- an event whose ``data`` is empty is handed back too: MCP's priming event
  carries only an ``id`` (and often a ``retry``), which the client needs to
  resume the stream; a block of comments alone is no event;
- each event carries its own ``id`` (``None`` when it had no ``id`` field, an
  empty string when the field was empty, which resets the last event id) and
  its own ``retry``: the caller keeps the last event id and the delay across
  reconnections itself, since a resumed stream is a new decoder.

Events come out as ``sseclient.Event``, sseclient-py's type (``id``,
``event``, ``data``, ``retry``), with ``event`` defaulting to ``"message"`` and
``retry`` an ``int``.  sseclient-py's own reader does not fit a transport that
bounds every read (it pulls from a blocking iterator), drops events with empty
data, dispatches an event cut by the end of the stream and has no size limit;
so the decoding is done here, and the type is its.

Size limit.  An event is never held whole beyond the limit: once its
``data`` (in UTF-8 bytes, the joining LFs counted) crosses the limit, or any
of its lines grows longer than the limit plus ``FIELD_SLACK_BYTES``, the
rest of that event is dropped as it arrives, and the decoder hands back one
``Oversized`` (with the first bytes of the
data) for it.  When: as soon as the event crosses the limit (a transport that
fails the exchange at once needs no more), or, with ``find_response_ids``,
once the event ends, its ``data`` having been scanned as it went by for the
ids of the responses it held
(``ResponseIdScan``), so that a
transport on which one stream carries every answer fails only the request
the event answered.  A comment line is dropped as it arrives, however long.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Union

from ._events import OVERSIZED_HEAD_BYTES, Oversized
from .response_ids import ResponseIdScan

if TYPE_CHECKING:

    class Event:
        """sseclient-py's event type, as used here (sseclient-py ships no type hints)."""

        id: Optional[str]
        event: str
        data: str
        retry: Optional[int]

        def __init__(
            self, id: Optional[str] = None, event: str = "message", data: str = "", retry: Optional[int] = None
        ) -> None: ...

else:
    from sseclient import Event

#: Room beyond the data limit for one line's field name, an ``id`` or an ``event`` name.
FIELD_SLACK_BYTES = 4096

#: One item out of the decoder: a complete event, or the note of an oversized one.
SseFrame = Union[Event, Oversized]

_BOM = b"\xef\xbb\xbf"
# What happens to the bytes of the current line: kept, or dropped as they arrive.
_KEEP = 0
_COMMENT = 1  # a comment line
_DISCARD = 2  # a line of an oversized event
_SNIFF = 3  # the start of a line of an oversized event, kept until its field name is known
_DISCARD_DATA = 4  # a data line of an oversized event: scanned as it is dropped
#: Bytes of a line of an oversized event enough to know whether it is a data line ("data: ").
_SNIFF_BYTES = 6


class SseDecoder:
    """Feed it the bytes of an event stream; it hands back every complete event.

    Not thread-safe: one reader at a time feeds it.  One decoder per stream (a
    resumed stream starts a new one).

    Args:
        max_event_bytes: the largest ``data`` of one event accepted, in bytes.
        find_response_ids: report an oversized event once it ends, with the
            ids of the responses its data held (see the module docstring);
            else as soon as it crosses the limit, without them.
    """

    __slots__ = (
        "_after_cr",
        "_data",
        "_data_size",
        "_discarding",
        "_event",
        "_fields",
        "_id",
        "_limit",
        "_line",
        "_line_limit",
        "_line_mode",
        "_line_seen",
        "_retry",
        "_scan",
        "_scanned",
        "_skipped",
        "_skipped_size",
        "_start",
    )

    def __init__(self, max_event_bytes: int, *, find_response_ids: bool = False) -> None:
        if max_event_bytes <= 0:
            raise ValueError("max_event_bytes must be positive")
        self._limit = max_event_bytes
        self._line_limit = max_event_bytes + FIELD_SLACK_BYTES
        self._start: Optional[bytes] = b""  # the first bytes, until it is known whether they are a BOM
        self._after_cr = False  # the last byte fed was a CR: an LF right after it belongs to it
        self._line = bytearray()  # the current line (when kept), its end not seen yet
        self._line_mode = _KEEP
        self._line_seen = False  # the current line has bytes (kept or not)
        self._discarding = False  # inside an oversized event: lines are dropped until a blank one
        self._data: List[bytes] = []
        self._data_size = 0
        self._id: Optional[str] = None
        self._event = ""
        self._retry: Optional[int] = None
        self._fields = False  # the current event has a field
        # With find_response_ids, the oversized event being dropped: its scan, whether
        # data went into it yet, and its note so far (reported when the event ends).
        self._scan: Optional[ResponseIdScan] = ResponseIdScan() if find_response_ids else None
        self._scanned = False
        self._skipped: Optional[Oversized] = None
        self._skipped_size = 0

    @property
    def buffered(self) -> int:
        """Bytes held of an event not complete yet."""
        return len(self._line) + self._data_size

    def feed(self, data: bytes) -> List[SseFrame]:
        """Take the next bytes of the stream; return the events (and notes) they complete."""
        out: List[SseFrame] = []
        if self._start is not None:
            data = self._start + data
            if len(data) < len(_BOM) and _BOM.startswith(data):
                self._start = data  # maybe the start of a BOM
                return out
            self._start = None
            if data.startswith(_BOM):
                data = data[len(_BOM) :]
        if not data:
            return out
        if self._after_cr and data[:1] == b"\n":
            data = data[1:]
            if not data:
                self._after_cr = False
                return out
        self._after_cr = data[-1:] == b"\r"
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = data.split(b"\n")
        tail = lines.pop()
        for piece in lines:
            self._end_line(piece, out)
        if tail:
            self._extend_line(tail, out)
        return out

    def end(self) -> List[SseFrame]:
        """End of stream: an event not ended by a blank line is dropped.  The decoder starts over.

        An oversized event cut off here is reported (when it was not yet), without ids.
        """
        skipped = self._skipped
        out: List[SseFrame] = [] if skipped is None else [Oversized(skipped.head, self._skipped_size, self._limit)]
        self._forget_oversized()
        self._start = b""
        self._after_cr = False
        self._line.clear()
        self._line_mode = _KEEP
        self._line_seen = False
        self._discarding = False
        self._reset_event()
        return out

    # -- lines --------------------------------------------------------------------------

    def _extend_line(self, piece: bytes, out: List[SseFrame]) -> None:
        """More bytes of the current line (its end not seen yet)."""
        mode = self._line_mode
        if mode != _KEEP:
            self._line_seen = True
            if mode == _DISCARD_DATA:
                self._skip_data(piece)
            elif mode == _SNIFF:
                self._line += piece
                if len(self._line) >= _SNIFF_BYTES:
                    self._sniffed(ended=False)
            return
        line = self._line
        if not line and piece[:1] == b":":
            self._line_mode = _COMMENT
            self._line_seen = True
            return
        line += piece
        if len(line) <= self._limit - self._data_size:
            return  # cannot have crossed either limit yet
        is_data = line[:5] == b"data:"
        if is_data:
            start = 6 if line[5:6] == b" " else 5
            size = self._data_size + (1 if self._data else 0) + len(line) - start
            crossed = size > self._limit
        else:
            size = self._data_size + len(line)
            crossed = len(line) > self._line_limit
        if crossed:
            self._oversized([*self._data, bytes(line[start:])] if is_data else self._data, size, out)
            line.clear()
            self._line_mode = _DISCARD_DATA if is_data and self._scan is not None else _DISCARD
            self._line_seen = True

    def _end_line(self, piece: bytes, out: List[SseFrame]) -> None:
        """The current line ends with ``piece``."""
        mode = self._line_mode
        if mode == _KEEP:
            line = self._line
            if line:
                line += piece
                text = bytes(line)
                line.clear()
            else:
                text = piece
            self._take(text, out)
        elif (mode in (_DISCARD, _SNIFF)) and not piece and not self._line_seen:
            self._end_oversized(out)  # the blank line that ends the oversized event
        elif mode == _SNIFF:
            self._line += piece
            self._sniffed(ended=True)
        elif mode == _DISCARD_DATA:
            self._skip_data(piece)
        self._line_seen = False
        if not self._discarding:
            self._line_mode = _KEEP
        else:
            self._line_mode = _DISCARD if self._scan is None else _SNIFF

    def _take(self, line: bytes, out: List[SseFrame]) -> None:
        """One whole line of the current event."""
        if not line:
            self._dispatch(out)
            return
        if line[:1] == b":":
            return
        if len(line) > self._line_limit:
            name, _, value = line.partition(b":")
            pieces = [*self._data, _strip_space(value)] if name == b"data" else self._data
            self._oversized(pieces, self._data_size + len(line), out)
            return
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            size = self._data_size + len(value) + (1 if self._data else 0)
            if size > self._limit:
                self._oversized([*self._data, value], size, out)
                return
            self._data.append(value)
            self._data_size = size
            self._fields = True
        elif name == b"id":
            if b"\0" not in value:
                self._id = value.decode("utf-8", "replace")
            self._fields = True
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
            self._fields = True
        elif name == b"retry":
            if value.isdigit():  # bytes.isdigit(): ASCII digits only
                self._retry = int(value)
            self._fields = True

    # -- events -------------------------------------------------------------------------

    def _dispatch(self, out: List[SseFrame]) -> None:
        if self._fields:
            data = self._data
            raw = data[0] if len(data) == 1 else b"\n".join(data)
            out.append(
                Event(
                    id=self._id,
                    event=self._event or "message",
                    data=raw.decode("utf-8", "replace"),
                    retry=self._retry,
                )
            )
        self._reset_event()

    def _oversized(self, pieces: List[bytes], size: int, out: List[SseFrame]) -> None:
        """The event crossed the limit: report it (now, or once it ended), drop the rest of it as it arrives.

        ``pieces``: its data so far (the data lines, and the value of the line
        that crossed the limit when it is a data line).
        """
        note = Oversized(_head(pieces), size, self._limit)
        self._discarding = True
        self._reset_event()
        scan = self._scan
        if scan is None:
            out.append(note)
            return
        self._skipped = note
        self._skipped_size = size
        for index, piece in enumerate(pieces):
            if index:
                scan.feed(b"\n")
            scan.feed(piece)
        self._scanned = bool(pieces)

    def _sniffed(self, *, ended: bool) -> None:
        """The start of a line of an oversized event (``self._line``; all of it when ``ended``) tells its field."""
        start = bytes(self._line)
        self._line.clear()
        if start[:5] != b"data:" and not (ended and start == b"data"):
            self._line_mode = _DISCARD
            return
        self._line_mode = _DISCARD_DATA
        if self._scanned:
            self._skip_data(b"\n")  # data lines are joined with LF
        self._scanned = True
        self._skip_data(start[6:] if start[5:6] == b" " else start[5:])

    def _skip_data(self, piece: bytes) -> None:
        """Data of the oversized event being dropped: scanned and counted."""
        assert self._scan is not None
        self._scan.feed(piece)
        self._skipped_size += len(piece)

    def _end_oversized(self, out: List[SseFrame]) -> None:
        """The oversized event ended (a blank line): report it now if not yet, with the ids scanned."""
        self._discarding = False
        skipped = self._skipped
        if skipped is not None and self._scan is not None:
            out.append(Oversized(skipped.head, self._skipped_size, self._limit, self._scan.response_ids()))
        self._forget_oversized()

    def _forget_oversized(self) -> None:
        if self._skipped is not None:
            self._scan = ResponseIdScan()
        self._skipped = None
        self._skipped_size = 0
        self._scanned = False

    def _reset_event(self) -> None:
        self._data = []
        self._data_size = 0
        self._id = None
        self._event = ""
        self._retry = None
        self._fields = False


def _strip_space(value: bytes) -> bytes:
    return value[1:] if value[:1] == b" " else value


def _head(pieces: List[bytes]) -> bytes:
    """The first ``OVERSIZED_HEAD_BYTES`` of ``pieces`` joined with LF (without joining them all)."""
    head = bytearray()
    for index, piece in enumerate(pieces):
        if index:
            head += b"\n"
        head += piece[: OVERSIZED_HEAD_BYTES - len(head)]
        if len(head) >= OVERSIZED_HEAD_BYTES:
            break
    return bytes(head[:OVERSIZED_HEAD_BYTES])


__all__ = ["FIELD_SLACK_BYTES", "Event", "SseDecoder", "SseFrame"]
