"""Reclaiming a child and its whole process tree, every wait bounded.

The escalation of ``StdioTransport.close`` (and of an ACP terminal's kill,
which has no stdin grace and no SIGTERM step): close stdin and wait (``STDIN_CLOSE_GRACE_S``,
or a shorter grace the caller asks for: a language server told ``exit`` has
had its chance to go);
terminate every process of the tree, collected before anything is signalled,
and wait (``TERMINATE_GRACE_S``); kill what is left and wait
(``KILL_GRACE_S``); reap.  The tree is the child's descendants, what is
left in its process group, and (on Linux) every process that holds one of its
pipes, found in ``/proc/*/fd``: a grandchild in its own session is found even
after the child died.

Only the process that started a child reclaims it: in a process forked after
the start (a pre-forking web server's worker), the child is not ours, and
nothing is signalled.

The common case costs almost nothing: a child that has no descendants (read
from ``/proc/<pid>/task/*/children`` on Linux, before stdin is closed), exits
on its own once stdin is closed, leaves both its output pipes at end of file
(nobody else holds them) and leaves its process group empty has nothing left
to reclaim, and ``psutil`` is not even imported.  Anything else takes the
full escalation above.  ``psutil`` is imported here, when it is needed, not
when the library is imported.
"""

from __future__ import annotations

import os
import subprocess
import time
from typing import TYPE_CHECKING, Dict, FrozenSet, Iterable, List, Mapping, Optional, Protocol, Sequence

if TYPE_CHECKING:
    import psutil

from ...runtime.logs import get_logger

_log = get_logger("jsonrpc_threads.transports.stdio")

#: ``close()``: how long the child gets to exit after its stdin was closed.
STDIN_CLOSE_GRACE_S = 2.0
#: ``close()``: how long the process tree gets to exit after SIGTERM.
TERMINATE_GRACE_S = 2.0
#: ``close()``: how long to wait for the tree to be gone after SIGKILL.
KILL_GRACE_S = 2.0
#: Processes started this long before the child are never taken for part of its tree
#: (process start times are known to clock ticks, and pids are reused).
CREATE_TIME_SLACK_S = 2.0

#: The quick path of close(): how long the output pipes get to reach end of file after the exit.
STREAMS_CLOSED_WAIT_S = 0.5

#: Polling interval bounds while waiting for processes that are not our children.
_POLL_MIN_S = 0.002
_POLL_MAX_S = 0.05
#: Where processes' open files can be listed (Linux): close() finds who holds the child's pipes.
_PROC_FD_DIR = "/proc/self/fd"


class Reclaimable(Protocol):
    """What ``reclaim`` needs of one child: a stdio transport's child, an ACP terminal.

    Attributes:
        popen: the child, started by ``owner_pid``.
        label: a short name for log lines.
        pid: the child's process id.
        owner_pid: the process that started it (``os.getpid()`` then).
        started_at: ``time.time()`` just before it was started (a process older
            than that is never taken for part of its tree).
        new_session: True when it was started in a session of its own
            (``start_new_session``): its process group is searched too.
        pipe_inodes: the inodes of the pipes between us and the child: whoever
            else holds one of them is part of its tree.

    ``close_stdin(timeout)`` closes the child's stdin (False when that could not
    be done in time); ``streams_closed(timeout)`` waits for its output pipes to
    reach end of file (True when nobody holds them any more); ``reclaim_done()``
    is called once the reclaim is over, for threads still reading to stop.
    """

    popen: subprocess.Popen[bytes]
    label: str
    pid: int
    owner_pid: int
    started_at: float
    new_session: bool
    pipe_inodes: FrozenSet[int]

    def close_stdin(self, timeout: float) -> bool: ...

    def streams_closed(self, timeout: float) -> bool: ...

    def reclaim_done(self) -> None: ...


def stdin_grace_within(grace: Optional[float]) -> float:
    """The grace after stdin is closed that ``close(stdin_grace=...)`` asked for (default ``STDIN_CLOSE_GRACE_S``).

    Only a shorter one may be asked for (a child already told to exit, say), so
    that every close stays within its documented bound.

    Raises:
        ValueError: for a grace that is not from 0 to ``STDIN_CLOSE_GRACE_S``.
        TypeError: for a grace that is not a number.
    """
    if grace is None:
        return STDIN_CLOSE_GRACE_S
    if isinstance(grace, bool) or not isinstance(grace, (int, float)):
        raise TypeError(f"stdin_grace must be a number of seconds, not {type(grace).__name__}")
    if not 0 <= grace <= STDIN_CLOSE_GRACE_S:  # NaN fails this too
        raise ValueError(f"stdin_grace must be from 0 to {STDIN_CLOSE_GRACE_S} seconds, not {grace!r}")
    return float(grace)


def owned(child: Reclaimable) -> bool:
    """True in the process that started ``child`` (False in a process forked since)."""
    return os.getpid() == child.owner_pid


def reclaim(children: Sequence[Reclaimable], *, stdin_grace: float, terminate_grace: float) -> None:
    """End the children and their whole process trees: stdin EOF, then SIGTERM, then SIGKILL, then reap.

    The one reclaim of the library: ``StdioTransport.close`` and the ACP
    client's terminals both end their children here.  Each child's tree is
    collected before anything is signalled, and again after the stdin grace
    (``collect_tree``): its descendants, what is left in its process group,
    and every process that holds one of its pipes (a grandchild in a session
    of its own, even once the child died).  Only children started by this
    process are signalled (``owned``); ``reclaim_done`` is called on every
    child at the end, whatever happened.

    Thread-safe for distinct children; every wait is bounded: at most
    ``stdin_grace + terminate_grace + KILL_GRACE_S`` in all.  What is still
    running after SIGKILL is logged, not raised.

    Args:
        children: the children to end, together (one shared set of waits).
        stdin_grace: seconds the children get to exit once their stdin is
            closed (0: no wait).
        terminate_grace: seconds their trees get to exit after SIGTERM; 0
            skips SIGTERM and kills at once (SIGKILL).

    Raises:
        Nothing of its own: a process that cannot be signalled is left (and logged).
    """
    ours = [child for child in children if owned(child)]
    try:
        if ours:
            _reclaim_trees(ours, stdin_grace=stdin_grace, terminate_grace=terminate_grace)
    finally:
        for child in children:
            child.reclaim_done()


def _ended_alone(child: Reclaimable, deadline: float) -> bool:
    """The quick path: True when closing stdin ended the child and nothing of it is left.

    False as soon as something is not known to be gone; then the full
    escalation goes on from where this left it (stdin closed, the same
    deadline), so trying costs no extra wait.
    """
    if child.popen.poll() is not None:
        return False  # it exited before: what it left behind must be looked for
    descendants = _descendants(child.pid)
    if descendants is None or descendants:
        return False
    if not child.close_stdin(max(0.0, deadline - time.monotonic())):
        return False
    try:
        child.popen.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return False
    if not child.streams_closed(STREAMS_CLOSED_WAIT_S):
        return False  # someone still holds its stdout or stderr
    return not (child.new_session and _group_alive(child.pid))


def _descendants(pid: int) -> Optional[List[int]]:
    """The pids of ``pid``'s descendants, from ``/proc`` (Linux); None when that cannot be read."""
    found: List[int] = []
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except FileNotFoundError:
            continue  # gone meanwhile
        except OSError:
            return None
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as listing:
                    kids = [int(word) for word in listing.read().split()]
            except FileNotFoundError:
                if os.path.isdir(f"/proc/{current}/task/{task}"):
                    return None  # a kernel without the children file
                continue
            except (OSError, ValueError):
                return None
            found.extend(kids)
            stack.extend(kids)
    return found


def _group_alive(pgid: int) -> bool:
    """True while process group ``pgid`` has a member (or it cannot be told)."""
    killpg = getattr(os, "killpg", None)
    if killpg is None:
        return True
    try:
        killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # EPERM: a member exists that is not ours to signal
    return True


def _reclaim_trees(children: Sequence[Reclaimable], *, stdin_grace: float, terminate_grace: float) -> None:
    deadline = time.monotonic() + stdin_grace
    if len(children) == 1 and _ended_alone(children[0], deadline):
        return
    # Collect the trees before signalling anything: a child that exits orphans
    # its descendants, which are then no longer found as its children.
    trees = {child: collect_tree(child) for child in children}
    for child in children:
        # A write stuck on a full pipe keeps stdin busy; then the child is not
        # reading and closing stdin would not help: go on to terminate.
        child.close_stdin(max(0.0, deadline - time.monotonic()))
    for child in children:
        if child.popen.poll() is None:
            try:
                child.popen.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
    for child in children:
        trees[child].update(collect_tree(child))
    if terminate_grace > 0:
        _signal_all(children, trees, kill=False)
        if _wait_gone(children, trees, time.monotonic() + terminate_grace):
            return
    _signal_all(children, trees, kill=True)
    if not _wait_gone(children, trees, time.monotonic() + KILL_GRACE_S):
        for child in children:
            _log.warning(
                "[%s pid %d] still running after SIGKILL: %s",
                child.label,
                child.pid,
                [child.pid] * (child.popen.returncode is None) + sorted(trees[child]),
            )


def collect_tree(child: Reclaimable) -> Dict[int, psutil.Process]:
    """Every descendant of the child, what is left in its process group, and who holds its pipes."""
    import psutil  # noqa: PLC0415 - only when something is reclaimed

    found: Dict[int, psutil.Process] = {}
    not_before = child.started_at - CREATE_TIME_SLACK_S
    if child.popen.poll() is None:  # not reaped: its pid is still its own
        try:
            for proc in psutil.Process(child.pid).children(recursive=True):
                found[proc.pid] = proc
        except psutil.Error:
            pass
    if child.new_session:
        for proc in _group_members(child.pid, not_before):
            found.setdefault(proc.pid, proc)
    # Whoever still holds a pipe: a grandchild in its own session is neither
    # a descendant (once its parent died) nor in the group.
    for proc in _pipe_holders(child.pipe_inodes, not_before):
        if proc.pid != child.pid:
            found.setdefault(proc.pid, proc)
    return found


def _group_members(pgid: int, not_before: float) -> List[psutil.Process]:
    """Processes in process group ``pgid`` (POSIX), except its leader.

    A group id is not reused while the group has members, so what is found here
    belongs to the child's group, even after the child itself was reaped.
    """
    import psutil  # noqa: PLC0415

    members: List[psutil.Process] = []
    getpgid = getattr(os, "getpgid", None)
    if getpgid is None:
        return members
    for proc in psutil.process_iter():
        if proc.pid == pgid:
            continue
        try:
            if getpgid(proc.pid) != pgid or proc.create_time() < not_before:
                continue
        except (OSError, psutil.Error):
            continue
        members.append(proc)
    return members


def _pipe_holders(inodes: Iterable[int], not_before: float) -> List[psutil.Process]:
    """Other processes (started since ``not_before``) holding an end of one of these pipes (Linux).

    Reads ``/proc/<pid>/fd`` of every process we may look at: a few
    milliseconds, done only at ``close()``.  A pipe's inode number is not
    reused while any end of it is open, and a holder must have been started
    after the child, which rules out an unrelated process, and must not be a
    fork of this process (which holds our fds by inheritance, not the child's).
    A fork of ours is a child of ours still running our command line; an orphan
    of the child's tree that this process adopted (it is a subreaper, or PID 1
    in a container) is a child of ours too, but runs a command of its own.
    """
    import psutil  # noqa: PLC0415

    holders: List[psutil.Process] = []
    if not os.path.isdir(_PROC_FD_DIR):
        return holders
    targets = {f"pipe:[{inode}]" for inode in inodes}
    me = str(os.getpid())
    my_pid = os.getpid()
    my_cmdline: Optional[List[str]] = None
    try:
        names = os.listdir("/proc")
    except OSError:
        return holders
    readlink = os.readlink
    for name in names:
        if not name.isdigit() or name == me:
            continue
        fd_dir = f"/proc/{name}/fd/"
        try:
            fds = os.listdir(fd_dir)
        except OSError:  # gone, or not ours to look at
            continue
        for fd in fds:
            try:
                if readlink(fd_dir + fd) not in targets:
                    continue
            except OSError:
                continue
            try:
                proc = psutil.Process(int(name))
                # A child of ours holds every fd of ours for a while: another transport's
                # child between its fork and its exec, or a worker forked after the start
                # (gunicorn --preload): both still run our command line.  Neither is part of
                # this child's tree; an orphan of the tree that we adopted runs its own command.
                if proc.create_time() < not_before:
                    break
                if proc.ppid() == my_pid:
                    if my_cmdline is None:
                        my_cmdline = psutil.Process(my_pid).cmdline()
                    if proc.cmdline() == my_cmdline:
                        break
                holders.append(proc)
            except psutil.Error:
                pass
            break
    return holders


def _alive(proc: psutil.Process) -> bool:
    """Running and not a zombie (an orphaned zombie may never be reaped in a container)."""
    import psutil  # noqa: PLC0415

    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True


def _signal_all(
    children: Iterable[Reclaimable], trees: Mapping[Reclaimable, Dict[int, psutil.Process]], kill: bool
) -> None:
    import psutil  # noqa: PLC0415

    for child in children:
        if child.popen.poll() is None:
            try:
                if kill:
                    child.popen.kill()
                else:
                    child.popen.terminate()
            except OSError:
                pass
        for proc in trees[child].values():
            try:
                if kill:
                    proc.kill()
                else:
                    proc.terminate()
            except psutil.Error:
                pass


def _wait_gone(
    children: Sequence[Reclaimable], trees: Mapping[Reclaimable, Dict[int, psutil.Process]], deadline: float
) -> bool:
    """Wait until every child is reaped and every descendant gone; True if so.

    Our own children are waited for with ``wait()`` (which reaps); processes
    that are not our children can only be polled, with a growing interval.
    """
    delay = _POLL_MIN_S
    while True:
        busy = False
        for child in children:
            if child.popen.poll() is None:
                busy = True
            alive = {pid: proc for pid, proc in trees[child].items() if _alive(proc)}
            trees[child].clear()
            trees[child].update(alive)
            busy = busy or bool(alive)
        remaining = deadline - time.monotonic()
        if not busy:
            return True
        if remaining <= 0:
            return False
        waiting = [c for c in children if c.popen.returncode is None]
        if waiting and not any(trees[c] for c in children):
            try:
                waiting[0].popen.wait(remaining)
            except subprocess.TimeoutExpired:
                pass
            continue
        time.sleep(min(delay, remaining))  # polling processes that are not ours: no event to wait on
        delay = min(delay * 2, _POLL_MAX_S)


def reap_quietly(popen: subprocess.Popen[bytes], owner_pid: Optional[int] = None) -> None:
    """Reap a child that could not be set up (kill, wait); nothing if it is not ours."""
    if owner_pid is not None and os.getpid() != owner_pid:
        return
    try:
        popen.kill()
    except OSError:
        pass
    try:
        popen.wait(KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        pass


__all__ = [
    "KILL_GRACE_S",
    "STDIN_CLOSE_GRACE_S",
    "TERMINATE_GRACE_S",
    "Reclaimable",
    "collect_tree",
    "owned",
    "reap_quietly",
    "reclaim",
    "stdin_grace_within",
]
