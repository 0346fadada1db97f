"""What a command shows on stderr while it waits: a progress bar, or the elapsed time.

Theory of operation: ``ProgressDisplay`` takes the ``notifications/progress``
of a call (``update``, called on a library worker) and, on a terminal, redraws
one live line: a bar when the server gives a total, else a count; a thread of
its own (``start`` .. ``finish``) adds the elapsed time once the call has run
``ELAPSED_AFTER_S`` seconds, so a long wait is never silent.  On a stream that
is not a terminal it writes one line per progress report and nothing else, so
a log stays readable.
"""

from __future__ import annotations

import threading
import time
from typing import IO, Any, Dict, Optional

#: Width of the live progress bar.
BAR_WIDTH = 30
#: Seconds a call runs without progress before a terminal shows its elapsed time.
ELAPSED_AFTER_S = 1.0
#: Seconds between two redraws of the elapsed time.
ELAPSED_TICK_S = 1.0
#: How long finish() waits for the elapsed-time thread to stop.
ELAPSED_STOP_S = 2.0


class ProgressDisplay:
    """Shows progress notifications on a stream: a live bar on a terminal, else one line each.

    On a terminal (``live``), ``start`` also starts a thread that shows the
    elapsed time once the call has run ``ELAPSED_AFTER_S`` seconds
    (``waiting for <what>... 3s``, or after the bar once progress arrived);
    ``finish`` stops it and clears the line.  Nothing but progress lines is
    written to a stream that is not a terminal.

    Thread-safe (progress callbacks run on worker threads).
    """

    def __init__(self, stream: IO[str], *, live: Optional[bool] = None, what: str = "the answer") -> None:
        self._stream = stream
        if live is None:
            isatty = getattr(stream, "isatty", None)
            live = bool(isatty()) if callable(isatty) else False
        self._live = live
        self._what = what
        self._lock = threading.Lock()  # guards _shown, _line, _started and writes to the stream
        self._shown = 0  # characters of the live line now on screen
        self._line = ""  # the last progress line drawn (without the elapsed time)
        self._started: Optional[float] = None  # time.monotonic() of start()
        self._stop = threading.Event()
        self._ticker: Optional[threading.Thread] = None

    def start(self) -> None:
        """Start timing the call; on a terminal, show its elapsed time while it runs long."""
        with self._lock:
            self._started = time.monotonic()
        if self._live and self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, name="jsonrpc-threads-cli-elapsed", daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(ELAPSED_TICK_S):
            with self._lock:
                if self._started is None:
                    continue
                elapsed = time.monotonic() - self._started
                if elapsed < ELAPSED_AFTER_S:
                    continue
                base = self._line or f"waiting for {self._what}..."
                self._draw(f"{base} {elapsed:.0f}s")

    def _draw(self, line: str) -> None:
        # Called with _lock held.
        padding = " " * max(0, self._shown - len(line))
        self._stream.write(f"\r{line}{padding}")
        self._stream.flush()
        self._shown = len(line)

    def update(self, params: Dict[str, Any]) -> None:
        """Show one ``notifications/progress`` (``progress``, ``total``, ``message``)."""
        progress = params.get("progress")
        total = params.get("total")
        message = params.get("message")
        if not isinstance(progress, (int, float)):
            return
        counts = f"{_number(progress)}/{_number(total)}" if isinstance(total, (int, float)) else f"{_number(progress)}"
        suffix = f" {message}" if isinstance(message, str) and message else ""
        with self._lock:
            if not self._live:
                self._stream.write(f"progress: {counts}{suffix}\n")
                self._stream.flush()
                return
            if isinstance(total, (int, float)) and total > 0:
                fraction = min(max(progress / total, 0.0), 1.0)
                filled = round(fraction * BAR_WIDTH)
                line = f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {counts} {fraction:4.0%}{suffix}"
            else:
                line = f"[{'?' * BAR_WIDTH}] {counts}{suffix}"
            self._line = line
            self._draw(line)

    def finish(self) -> None:
        """Stop the elapsed time and clear the live line (nothing to do for line output)."""
        self._stop.set()
        ticker, self._ticker = self._ticker, None
        if ticker is not None:
            ticker.join(ELAPSED_STOP_S)
        with self._lock:
            if self._live and self._shown:
                self._stream.write("\r" + " " * self._shown + "\r")
                self._stream.flush()
                self._shown = 0


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


__all__ = ["BAR_WIDTH", "ELAPSED_AFTER_S", "ELAPSED_STOP_S", "ELAPSED_TICK_S", "ProgressDisplay"]
