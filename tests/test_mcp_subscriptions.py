"""``subscriptions/listen``'s wait for the acknowledgment (``mcp/subscriptions.py``), on its own.

``Subscriptions`` takes the function that opens the listen request; here it
returns a future this test settles, as the JSON-RPC client would: refused by a
server that has no ``subscriptions/listen`` (``-32601``), or acknowledged.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any, Dict, List

from jsonrpc_threads.errors import MethodNotFound
from jsonrpc_threads.mcp.protocol import META_SUBSCRIPTION_ID
from jsonrpc_threads.mcp.subscriptions import Subscriptions

#: Longer than any answer here takes: a wait that lasts it was not ended by the answer.
ACK_WAIT_S = 5.0
#: Well within ``ACK_WAIT_S``.
PROMPT_S = 1.0


def _subscriptions(opened: List[Future[Any]]) -> Subscriptions:
    def open_listen(params: Dict[str, Any]) -> Future[Any]:
        future: Future[Any] = Future()
        future.request_id = len(opened) + 1  # type: ignore[attr-defined]
        opened.append(future)
        return future

    return Subscriptions(open_listen, lambda future, reason: future.cancel(), "test")


def test_a_refusal_ends_the_wait_at_once() -> None:
    """Before: a server without subscriptions/listen cost every stateless start the whole wait (2 s)."""
    opened: List[Future[Any]] = []
    subscriptions = _subscriptions(opened)
    refuse = threading.Timer(0.05, lambda: opened[0].set_exception(MethodNotFound(data={"method": "x"})))
    started = time.monotonic()
    refuse.start()
    try:
        assert subscriptions.listen({"toolsListChanged": True}, wait=ACK_WAIT_S) is False
    finally:
        refuse.join(ACK_WAIT_S)
    assert time.monotonic() - started < PROMPT_S
    assert subscriptions.honoured is None


def test_an_acknowledgment_ends_the_wait_with_what_the_server_honours() -> None:
    opened: List[Future[Any]] = []
    subscriptions = _subscriptions(opened)
    params = {"notifications": {"toolsListChanged": True}, "_meta": {META_SUBSCRIPTION_ID: 1}}
    acknowledge = threading.Timer(0.05, subscriptions.acknowledged, args=(params,))
    started = time.monotonic()
    acknowledge.start()
    try:
        assert subscriptions.listen({"toolsListChanged": True, "promptsListChanged": True}, wait=ACK_WAIT_S)
    finally:
        acknowledge.join(ACK_WAIT_S)
    assert time.monotonic() - started < PROMPT_S
    assert subscriptions.honoured == {"toolsListChanged": True}
    subscriptions.close()
    assert opened[0].cancelled()
