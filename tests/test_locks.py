"""The file lock that parallel workers take around what they share (tests/locks.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from .locks import LockTimeout, exclusive

#: Seconds a holder that must get the lock may wait for it.
WAIT_S = 10.0
#: Seconds a waiter that must give up waits.
GIVE_UP_S = 0.2


def test_a_second_holder_waits_then_gives_up_at_its_deadline_and_the_lock_stays_usable(tmp_path: Path) -> None:
    lock = tmp_path / "shared.lock"
    with exclusive(lock, timeout=WAIT_S, what="the first"):
        started = time.monotonic()
        with (
            pytest.raises(LockTimeout, match="the second: another process held"),
            exclusive(lock, timeout=GIVE_UP_S, what="the second"),
        ):
            pytest.fail("the lock was held: the second holder must not get it")
        assert GIVE_UP_S <= time.monotonic() - started < WAIT_S
    # The second's waiting thread takes the lock once the first lets go, and drops it at once.
    with exclusive(lock, timeout=WAIT_S, what="the third"):
        pass


def test_the_lock_is_free_again_after_a_holder_raised(tmp_path: Path) -> None:
    lock = tmp_path / "shared.lock"
    with pytest.raises(RuntimeError), exclusive(lock, timeout=WAIT_S, what="a holder"):
        raise RuntimeError("the step failed")
    started = time.monotonic()
    with exclusive(lock, timeout=WAIT_S, what="the next"):
        assert time.monotonic() - started < WAIT_S
