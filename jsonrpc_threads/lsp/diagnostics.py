"""Diagnostics as servers push them, and waiting for those of a given document version.

A server sends ``textDocument/publishDiagnostics`` when it likes: after an
open or a change, once it has analysed the text, sometimes again later.  To
answer "what does the server say about the text I just sent", the
``DiagnosticsBoard`` keeps, per document, the latest publication and a
count of publications, and a waiter names what it waits for:

- the document's version, when the server says which version its
  diagnostics are for (``version`` in the notification; pylsp and pyright do);
- else, any publication that arrived after the client sent that version
  (the count at that moment is recorded by ``DiagnosticsBoard.expect``),
  as long as the server never named a version for that document: a server
  that does (pylsp) also clears a closed document's diagnostics without one,
  and that empty list says nothing about the text opened next.

A publication that already arrived for the awaited version satisfies the wait
at once, so a caller that asks late does not wait for a second one.

The board's handler runs on the client's notification thread; waiting happens
on the caller's thread, bounded by its deadline, and ends early with
``TransportClosed`` when the connection ends.

Thread-safe.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Set

from ..deadlines.timeouts import passed, wait_slice
from ..errors import RequestTimeout, TransportClosed
from .uris import normalize_uri

PUBLISH_METHOD = "textDocument/publishDiagnostics"


class Publication(NamedTuple):
    """One ``publishDiagnostics`` notification, as received."""

    uri: str
    version: Optional[int]
    diagnostics: List[Dict[str, Any]]
    number: int  # its place among all publications this board received (from 1)


class _Expectation(NamedTuple):
    version: int
    after: int  # publications received before the version was sent


class DiagnosticsBoard:
    """The latest diagnostics of each document, and waits for the next ones.  Thread-safe.

    Args:
        on_diagnostics: ``callback(params)`` for every publication (the
            notification's params as sent), called on the notification thread
            after the board has recorded it.
    """

    def __init__(self, on_diagnostics: Optional[Callable[[Dict[str, Any]], None]] = None) -> None:
        # _cond's lock guards _latest, _versioned, _expected, _count and _closed.
        self._cond = threading.Condition(threading.Lock())
        self._latest: Dict[str, Publication] = {}
        self._versioned: Set[str] = set()  # documents the server published a version for
        self._expected: Dict[str, _Expectation] = {}
        self._count = 0
        self._closed: Optional[TransportClosed] = None
        self._callback = on_diagnostics

    def expect(self, uri: str, version: int) -> None:
        """``version`` of the document is about to be sent: wait for diagnostics of it from now on."""
        with self._cond:
            self._expected[normalize_uri(uri)] = _Expectation(version, self._count)

    def forget(self, uri: str) -> None:
        """The document was closed: a wait for it takes the next publication, whatever its version."""
        with self._cond:
            self._expected.pop(normalize_uri(uri), None)

    def publish(self, params: Any) -> None:
        """Notification handler for ``textDocument/publishDiagnostics``."""
        if not isinstance(params, dict) or not isinstance(params.get("uri"), str):
            return
        version = params.get("version")
        if not isinstance(version, int) or isinstance(version, bool):
            version = None
        diagnostics = params.get("diagnostics")
        key = normalize_uri(params["uri"])
        with self._cond:
            self._count += 1
            self._latest[key] = Publication(
                params["uri"], version, diagnostics if isinstance(diagnostics, list) else [], self._count
            )
            if version is not None:
                self._versioned.add(key)
            self._cond.notify_all()
        if self._callback is not None:
            self._callback(params)

    def close(self, error: TransportClosed) -> None:
        """The connection ended: every wait ends with ``error``."""
        with self._cond:
            if self._closed is None:
                self._closed = error
            self._cond.notify_all()

    def latest(self, uri: str) -> Optional[Publication]:
        """The last publication for the document, if any arrived."""
        with self._cond:
            return self._latest.get(normalize_uri(uri))

    def wait(self, uri: str, timeout: Optional[float], deadline: Optional[float]) -> List[Dict[str, Any]]:
        """The diagnostics of the document's current version, once the server published them.

        For a document this client has open: those published for the version
        last sent (see the module docstring).  For any other: the latest
        publication, or the first one to arrive.

        Args:
            uri: the document.
            timeout: the timeout the deadline was made from (for the error).
            deadline: the ``time.monotonic`` deadline, or ``None``.

        Raises:
            RequestTimeout: nothing matching arrived before ``deadline``.
            TransportClosed: the connection ended first.
        """
        key = normalize_uri(uri)
        with self._cond:
            while True:
                found = self._match(key)
                if found is not None:
                    return list(found.diagnostics)
                if self._closed is not None:
                    raise TransportClosed(
                        self._closed.message,
                        returncode=self._closed.returncode,
                        stderr_tail=self._closed.stderr_tail,
                    )
                if passed(deadline):
                    expected = self._expected.get(key)
                    what = f"version {expected.version} of {uri}" if expected is not None else uri
                    raise RequestTimeout(PUBLISH_METHOD, None, timeout, f"no diagnostics were published for {what}")
                self._cond.wait(wait_slice(deadline))

    def _match(self, key: str) -> Optional[Publication]:
        latest = self._latest.get(key)
        if latest is None:
            return None
        expected = self._expected.get(key)
        if expected is None:
            return latest
        if latest.version is not None:
            return latest if latest.version == expected.version else None
        if key in self._versioned:
            return None  # a server that names versions said nothing about this one
        return latest if latest.number > expected.after else None


__all__ = ["PUBLISH_METHOD", "DiagnosticsBoard", "Publication"]
