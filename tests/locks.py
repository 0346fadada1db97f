"""One process at a time through a step that writes a shared path (the suite runs in parallel workers).

The snippets' virtual environments (``build/snippet-envs``) and the npm peers
(``tests/node/node_modules``) are made on first use and shared by every
worker of a run, and by runs side by side: two workers must not build the
same one at once.  `exclusive` holds an ``fcntl.flock`` on a lock file beside
the shared path for the length of a ``with`` block.  The lock is released by
the kernel when its holder exits, however it exits.

The wait for the lock is bounded: ``flock`` itself cannot time out, so a
daemon thread blocks in it while the caller waits on an event with the
deadline.  A caller that gives up raises at once; its thread then takes the
lock when the holder lets go, and drops it straight away.
"""

from __future__ import annotations

import fcntl
import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


class LockTimeout(TimeoutError):
    """Another process held the lock for longer than the caller would wait."""


@contextmanager
def exclusive(lock_file: Path, *, timeout: float, what: str) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_file`` (created if missing) for the ``with`` block.

    Args:
        lock_file: the file to lock; its directory must exist.
        timeout: seconds to wait for another holder to let go.
        what: the step, as the error names it.

    Raises:
        LockTimeout: the lock was not free within ``timeout`` seconds.
    """
    fd = os.open(str(lock_file), os.O_RDWR | os.O_CREAT, 0o644)
    taken = threading.Event()
    state = {"abandoned": False}
    guard = threading.Lock()  # guards state: whether the caller gave up before the lock was taken

    def take() -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with guard:
            if state["abandoned"]:
                os.close(fd)  # closing the descriptor drops the lock
                return
            taken.set()

    threading.Thread(target=take, name=f"lock-wait[{lock_file.name}]", daemon=True).start()
    if not taken.wait(timeout):
        with guard:
            if not taken.is_set():
                state["abandoned"] = True
                raise LockTimeout(f"{what}: another process held {lock_file} for more than {timeout:.0f}s")
    try:
        yield
    finally:
        os.close(fd)
