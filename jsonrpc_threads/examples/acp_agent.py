"""A tiny ACP agent over stdio, written on ``jsonrpc_threads.server.serve``: the peer of the README's ACP example.

Theory of operation.  The Agent Client Protocol (version 1) runs JSON-RPC 2.0
over the agent's stdin and stdout, one JSON text per line: exactly what
``serve`` reads and writes.  The client starts this module as a child process
(``[sys.executable, "-m", "jsonrpc_threads.examples.acp_agent"]``) and every
message goes to ``handle`` on one of the loop's worker threads, so a
``session/cancel`` is handled while the turn it ends is still running.

What it answers:

- ``initialize``: protocol version 1 (whatever the client asked: a client of
  another version refuses it), ``agentInfo`` ``{"name": "example-agent",
  "version": ...}``, no optional capabilities and no authentication;
- ``session/new``: a new ``sessionId`` (``session-1``, ``session-2``, ...);
- ``session/prompt``: it repeats the text of the prompt, word by word: each
  word (with a space after it) is one ``agent_message_chunk`` update (a
  ``session/update`` notification, sent with ``notify`` before the answer),
  ``WORD_DELAY_S`` apart, as a model takes its time; then
  ``{"stopReason": "end_turn"}``;
- ``session/cancel`` (a notification): the session's running turn stops at
  its next word and answers ``{"stopReason": "cancelled"}``; a prompt that
  comes meanwhile waits for that answer (one turn at a time per session).

Anything else is ``MethodNotFound`` (a notification of another method is
ignored); a prompt for a session it never made is ``InvalidParams``.  It asks
the client nothing (no permission, files or terminals), keeps nothing on disk
and needs no credentials: an example, so that the README's calls run as
written.  A real agent (``claude-agent-acp``, ``codex-acp``, ...) is started the
same way, by its own command line.

Thread-safety: ``handle`` runs on several worker threads at once; the
sessions' tables are guarded by one lock, and each session's turns run one at
a time under a lock of its own.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Dict, List

from jsonrpc_threads import __version__
from jsonrpc_threads.errors import InvalidParams, MethodNotFound
from jsonrpc_threads.server import notify, serve

#: The one protocol version this agent speaks (ACP's major version).
PROTOCOL_VERSION = 1
#: What ``initialize`` answers as ``agentInfo``.
AGENT_INFO = {"name": "example-agent", "version": __version__}
#: The pause before each word of an answer (a cancelled turn stops at once).
WORD_DELAY_S = 0.02

#: How long a prompt waits for the session's previous turn to end (it was cancelled: it ends at once).
TURN_WAIT_S = 10.0

_lock = threading.Lock()  # guards _turns and _in_turn
#: Each session's running turn, as the Event a ``session/cancel`` sets; a new session has a set one.
_turns: Dict[str, threading.Event] = {}
#: Each session's lock, held by its running turn: one turn at a time, the next waits.
_in_turn: Dict[str, threading.Lock] = {}
_numbers = itertools.count(1)


def _finished() -> threading.Event:
    """The Event of a session with no turn running (a cancel finds nothing to stop)."""
    event = threading.Event()
    event.set()
    return event


def _initialize(params: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentInfo": AGENT_INFO,
        "agentCapabilities": {"loadSession": False, "promptCapabilities": {"image": False, "audio": False}},
        "authMethods": [],
    }


def _new_session(params: Dict[str, Any]) -> Dict[str, Any]:
    session_id = f"session-{next(_numbers)}"
    with _lock:
        _turns[session_id] = _finished()  # no turn is running
        _in_turn[session_id] = threading.Lock()
    return {"sessionId": session_id}


def _prompt(params: Dict[str, Any]) -> Dict[str, Any]:
    session_id = params.get("sessionId")
    blocks = params.get("prompt")
    if not isinstance(blocks, list):
        raise InvalidParams("'prompt' must be a list of content blocks")
    with _lock:
        in_turn = _in_turn.get(session_id) if isinstance(session_id, str) else None
    if in_turn is None:
        raise InvalidParams(f"no session {session_id!r}: make one with session/new")
    # One turn at a time per session: a prompt sent right after a session/cancel may reach
    # its worker first; it waits here until the cancelled turn has answered.
    if not in_turn.acquire(timeout=TURN_WAIT_S):
        raise InvalidParams(f"session {session_id!r} still has a turn running")
    try:
        return _run_turn(str(session_id), blocks)
    finally:
        in_turn.release()


def _run_turn(session_id: str, blocks: List[Any]) -> Dict[str, Any]:
    cancelled = threading.Event()
    with _lock:
        _turns[session_id] = cancelled
    text = " ".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text")
    try:
        for word in text.split():
            if cancelled.wait(WORD_DELAY_S):  # stands for a model at work; wakes at once on session/cancel
                return {"stopReason": "cancelled"}
            update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": word + " "}}
            notify("session/update", {"sessionId": session_id, "update": update})
        return {"stopReason": "cancelled" if cancelled.is_set() else "end_turn"}
    finally:
        with _lock:
            if _turns.get(session_id) is cancelled:
                _turns[session_id] = _finished()


def _cancel(params: Dict[str, Any]) -> None:
    session_id = params.get("sessionId")
    with _lock:
        turn = _turns.get(session_id) if isinstance(session_id, str) else None
    if turn is not None:
        turn.set()


_REQUESTS = {"initialize": _initialize, "session/new": _new_session, "session/prompt": _prompt}


def handle(method: str, params: Any) -> Any:
    """The handler given to ``serve``: one ACP method (see the module docstring).

    Raises:
        MethodNotFound: a method this agent does not serve.
        InvalidParams: params that are not an object, a prompt of an unknown session.
    """
    if not isinstance(params, dict):
        params = {}
    if method == "session/cancel":
        _cancel(params)
        return None
    answer = _REQUESTS.get(method)
    if answer is None:
        raise MethodNotFound(data={"method": method})
    return answer(params)


def main() -> None:
    """Serve ACP on stdin and stdout until end of input."""
    serve(handle)


if __name__ == "__main__":
    main()
