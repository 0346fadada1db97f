"""Running a handler for an incoming request or notification: one policy for both sides.

The client (answering its peer's requests) and ``jsonrpc_threads.server``
(answering every request) run user handlers through the two functions here,
so both map outcomes to answers the same way:

- a result becomes a response (and when it cannot be encoded as JSON, a
  ``-32603`` "Answer is not JSON-serializable" error, logged);
- a ``JsonRpcError`` raised by the handler becomes
  that error, code, message and data as they are;
- anything else the handler raises, ``SystemExit`` and ``KeyboardInterrupt``
  included, becomes ``-32603`` with ``data: {"exception": "<ClassName>"}``;
  the traceback is logged, never sent.  A request is always answered.

A notification is never answered; what its handler raises is logged.

Pure apart from logging: the caller picks the thread (always a worker, never
a reader) and writes the answer.
"""

from __future__ import annotations

from ..errors import InternalError, JsonRpcError
from ..messages import encode, error_message, response_message
from .logs import LazyLogger, get_logger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from ..errors import RequestId

logger = get_logger(__name__)


def answer_request(
    request_id: RequestId, method: str, invoke: Callable[[], Any], where: str, log: LazyLogger = logger
) -> bytes:
    """Run ``invoke()`` (the handler of request ``method``) and return its encoded answer.

    ``where`` names the connection in log lines, which go to ``log`` (the
    caller's logger).  Never raises.
    """
    try:
        result = invoke()
    except JsonRpcError as exc:
        log.debug("%s: request %r (id %r) answered with error %s", where, method, request_id, exc)
        answer = error_message(request_id, exc)
    except BaseException as exc:  # SystemExit in a worker must still be answered
        log.exception("%s: handler for request %r (id %r) failed", where, method, request_id)
        answer = error_message(request_id, InternalError(data={"exception": type(exc).__name__}))
    else:
        answer = response_message(request_id, result)
    try:
        return encode(answer)
    except (TypeError, ValueError, RecursionError) as exc:
        log.error("%s: the answer to %r (id %r) is not JSON-serializable: %s", where, method, request_id, exc)
        error = InternalError("Answer is not JSON-serializable", data={"exception": type(exc).__name__})
        return encode(error_message(request_id, error))


def run_notification(method: str, invoke: Callable[[], Any], where: str, log: LazyLogger = logger) -> None:
    """Run ``invoke()`` (the handler of notification ``method``); what it raises goes to ``log``.  Never raises."""
    try:
        invoke()
    except JsonRpcError as exc:
        log.debug("%s: notification handler for %r failed: %s", where, method, exc)
    except BaseException:
        log.exception("%s: notification handler for %r failed", where, method)


__all__ = ["answer_request", "run_notification"]
