"""Batches: requests and notifications collected and sent as one JSON array.

A :class:`Batch` is made by :meth:`JsonRpcClient.batch
<jsonrpc_threads.client.JsonRpcClient.batch>` and filled inside a ``with``
block; each message is encoded when it is added (so bad params raise there,
and nothing of them is sent), and the client sends the array when the block
exits without an exception.  Each request's future settles like any other.
"""

from __future__ import annotations

from . import messages
from ._deadlines import DEFAULT_TIMEOUT
from ._pending import Pending

TYPE_CHECKING = False
if TYPE_CHECKING:
    from concurrent.futures import Future
    from types import TracebackType
    from typing import Any, List, Optional, Type

    from ._deadlines import Timeout
    from ._futures import RequestFuture
    from .client import JsonRpcClient


class BatchItem:
    """One message of a batch, encoded (and so checked) when it was added."""

    __slots__ = ("data", "entry")

    def __init__(self, data: bytes, entry: Optional[Pending]) -> None:
        self.data = data
        self.entry = entry  # None for a notification


class Batch:
    """Requests and notifications collected to be sent as one JSON array.

    Made by :meth:`JsonRpcClient.batch`; not thread-safe (fill it from one
    thread).  Each message is encoded when it is added, so bad params raise
    there and nothing of them is sent.
    """

    def __init__(self, client: JsonRpcClient) -> None:
        self._client = client
        self._items: List[BatchItem] = []
        self._sent = False

    def request(
        self, method: str, params: messages.Params = None, *, timeout: Timeout = DEFAULT_TIMEOUT
    ) -> Future[Any]:
        """Add a request; its future settles once the batch is sent and answered.

        The timeout counts from the moment the batch is sent.  Cancelling the
        future before the block ends leaves the request out of the batch.

        Raises:
            RuntimeError: when the batch was already sent.
            TypeError, ValueError: for params that cannot be encoded, or a bad timeout.
        """
        self._check_open()
        client = self._client
        resolved = client._resolve_timeout(timeout)
        request_id = next(client._ids)
        data = messages.encode_request(request_id, method, params)
        from ._futures import RequestFuture  # noqa: PLC0415 - concurrent.futures on first use

        future = RequestFuture(client, request_id, client)
        self._items.append(BatchItem(data, Pending(future, method, resolved, False)))
        return future

    def notify(self, method: str, params: messages.Params = None) -> None:
        """Add a notification.

        Raises:
            RuntimeError: when the batch was already sent.
            TypeError, ValueError: for params that cannot be encoded.
        """
        self._check_open()
        self._items.append(BatchItem(messages.encode(messages.notification_message(method, params)), None))

    def _check_open(self) -> None:
        if self._sent:
            raise RuntimeError("this batch was already sent")

    def __enter__(self) -> Batch:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self._sent = True
        if exc_type is not None:
            for item in self._items:
                if item.entry is not None:
                    future: RequestFuture = item.entry.future  # type: ignore[assignment]
                    future.cancel()
            return
        self._client._send_batch(self._items)


__all__ = ["Batch", "BatchItem"]
