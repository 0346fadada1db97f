"""Which process we are: a counter of forks, for objects that must not cross one.

A client, a transport or a registry made before ``fork()`` (gunicorn
``--preload``, uWSGI, ``multiprocessing`` with the fork start method) holds
the parent's pipes, sockets and sessions, and locks that some thread may
have held at the moment of the fork.  In the child none of that may be used:
a message written there would reach the parent's server, and a lock taken
there may never be released.  Each such object records ``generation``
when it is made; ``forked_since`` tells, with one comparison and no lock,
whether the process it is used in is a fork of the one that made it.

The counter is bumped in every child by an ``os.register_at_fork`` hook (POSIX).

State of a module that a fork must reset (a lock some thread may have held, a
thread that does not exist in the child) is reset by a callback given to
``at_fork_in_child``: the one place a module registers what it does in a
forked child, run after the counter was bumped, in the order registered.
"""

from __future__ import annotations

import os

#: Bumped in the child after every fork.
generation = 0


def forked_since(made_in: int) -> bool:
    """True when this process is a fork of the one where ``generation`` was ``made_in``."""
    return generation != made_in


def _after_fork_in_child() -> None:
    global generation
    generation += 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, List

#: What modules reset in a forked child (see ``at_fork_in_child``).
_child_callbacks: List[Callable[[], None]] = []


def at_fork_in_child(callback: Callable[[], None]) -> None:
    """Run ``callback`` in the child after every fork (POSIX; after ``generation`` is bumped).

    Callbacks run in the order registered, with one thread alive; each must be
    quick, take no lock another thread could have held, and never raise.
    """
    _child_callbacks.append(callback)


def _run_child_callbacks() -> None:
    for callback in list(_child_callbacks):
        callback()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_run_child_callbacks)


__all__ = ["at_fork_in_child", "forked_since", "generation"]
