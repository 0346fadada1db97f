"""The frames waiting for the child's stdin: in order, counted in bytes, taken a chunk at a time.

Theory of operation.  A ``FrameQueue`` is the queue of a ``StdinWriter``
(``_writer``), which decides who writes and when; the queue only keeps the
frames and their bytes.  Frames go in at the tail, or back at the head when
a write found the pipe full.  The writer thread takes from the head up to
``WRITE_CHUNK_BYTES`` of whole frames for one ``write()`` (``next_chunk``),
or the next slice of one large frame, which keeps its offset until it is
written whole (``written``); the frames of such a write are in flight
(``in_flight``) and are never dropped by ``drop``.

Thread-safety: none of its own: the writer's lock guards it.
"""

from __future__ import annotations

from typing import Deque, List, Optional, Sequence, Tuple

from ...errors import RequestId

#: The writer thread writes at most this much per system call.
WRITE_CHUNK_BYTES = 256 * 1024


class Frame:
    """One encoded message (or batch) for stdin, and the ids of the requests it carries."""

    __slots__ = ("data", "offset", "request_ids")

    def __init__(self, data: bytes, request_ids: Sequence[RequestId]) -> None:
        self.data = data
        self.request_ids = request_ids
        self.offset = 0  # bytes of it already written (only ever the first frame of the queue)


def ids_of(frames: Sequence[Frame]) -> List[RequestId]:
    """The ids of the requests ``frames`` carry, in order."""
    return [request_id for frame in frames for request_id in frame.request_ids]


class FrameQueue(Deque[Frame]):
    """Frames in the order they go on the wire (a deque: empty is false).  Guarded by its writer's lock.

    Attributes:
        queued_bytes: bytes queued and not written yet.
        in_flight: frames at the head that the writer thread is writing now.
    """

    def __init__(self) -> None:
        super().__init__()
        self.queued_bytes = 0
        self.in_flight = 0

    def add(self, data: bytes, request_ids: Sequence[RequestId]) -> None:
        """Queue a frame at the tail."""
        self.append(Frame(data, request_ids))
        self.queued_bytes += len(data)

    def put_back(self, data: bytes, request_ids: Sequence[RequestId], frames: Optional[List[Frame]]) -> None:
        """A write of ``data`` found the pipe full: back at the head, as ``frames`` or as one frame."""
        if frames is None:
            self.appendleft(Frame(data, request_ids))
        else:
            self.extendleft(reversed(frames))
        self.queued_bytes += len(data)

    def take_all(self) -> List[Frame]:
        """Every frame, taken out (none is in flight)."""
        frames = list(self)
        self.clear()
        self.queued_bytes = 0
        return frames

    def drop(self, request_ids: Sequence[RequestId]) -> bool:
        """Drop the frames all of whose requests are in ``request_ids`` (not those in flight or begun).

        Returns:
            False when there was nothing to look at (every frame in flight).
        """
        if len(self) <= self.in_flight:
            return False
        dropped = set(request_ids)
        kept: List[Frame] = []
        for index, frame in enumerate(self):
            if index < self.in_flight or not frame.request_ids or frame.offset:
                kept.append(frame)
            elif all(rid in dropped for rid in frame.request_ids):
                self.queued_bytes -= len(frame.data)
            else:
                kept.append(frame)
        self.clear()
        self.extend(kept)
        return True

    def take_unwritten(self, *, include_in_flight: bool) -> List[Frame]:
        """Writing is over: take out the frames (those in flight too, or not), to fail their requests."""
        skip = 0 if include_in_flight else self.in_flight
        if len(self) <= skip:
            return []
        frames = list(self)
        kept, frames = frames[:skip], frames[skip:]
        self.clear()
        self.extend(kept)
        self.queued_bytes = sum(len(frame.data) - frame.offset for frame in self)
        return frames

    def next_chunk(self) -> Tuple[bytes, int]:
        """The next bytes to write, and how many whole frames they end; they are in flight from now on."""
        first = self[0]
        if first.offset or len(first.data) > WRITE_CHUNK_BYTES:
            end = min(len(first.data), first.offset + WRITE_CHUNK_BYTES)
            self.in_flight = 1
            return first.data[first.offset : end], 1 if end == len(first.data) else 0
        parts: List[bytes] = []
        size = 0
        for frame in self:
            if parts and (size + len(frame.data) > WRITE_CHUNK_BYTES or frame.offset):
                break
            parts.append(frame.data)
            size += len(frame.data)
        self.in_flight = len(parts)
        return (parts[0] if len(parts) == 1 else b"".join(parts)), len(parts)

    def written(self, finished: int, written: int) -> None:
        """``written`` bytes went out, ending ``finished`` frames at the head."""
        self.queued_bytes -= written
        if finished == 0:
            self[0].offset += written
            return
        for _ in range(finished):
            self.popleft()


__all__ = ["WRITE_CHUNK_BYTES", "Frame", "FrameQueue", "ids_of"]
