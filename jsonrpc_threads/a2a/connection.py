"""The connection to one agent: its card, fetched once, and the JSON-RPC client on the interface it names.

Theory of operation.  An ``AgentConnection`` knows where the card is and
what the caller gave to authenticate; the first call that needs the agent
fetches the card (a GET, ``HttpTransport.fetch``, on a
transport made for it and closed after), chooses its JSON-RPC interface
(``choose_interface``: the version, and so the dialect), and puts a
``JsonRpcClient`` on an
``HttpTransport`` to it.  Every request carries
``A2A-Version`` (``1.0``, or ``0.3`` for a v0.3 agent); the credentials go only
where ``Origins`` trusts (both transports are made from one
``HttpSettings``, with or without them).

The card's fetch is a single flight (``SingleFlight`` from
``jsonrpc_threads.deadlines``): it runs on a thread of its own, bounded by the
latest deadline of the callers that joined it, and every caller
waits for it with its own deadline; a fetch that failed is tried again by the
next caller (a network blip is not forever), one that succeeded is kept.  Then:

- ``AgentConnection.call`` sends a request with ``JsonRpcClient.call``
  (the caller's thread carries the POST) and returns its result;
- ``AgentConnection.stream`` sends a streaming request with
  ``JsonRpcClient.request_stream`` and returns its ``ResponseStream`` (the
  results, for ``events`` to read; the final one an event that ends A2A's stream).

Both take the caller's ``Deadline`` and spend what is left of
it, the card's fetch included; a ``RequestTimeout`` names
the whole call's timeout.  A2A's error codes become their classes
(``error_from_a2a``).  Only public faces are used: ``JsonRpcClient``,
``ResponseStream``, ``HttpTransport`` (``fetch``, ``from_settings``),
``HttpSettings``, ``messages`` and the exception tree.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from .. import JsonRpcClient, ResponseStream, messages
from ..deadlines import Budget, Deadline, SingleFlight, as_call_timeout, close_in_background
from ..errors import ParseError, ProtocolError, RemoteError, RequestTimeout, TransportClosed
from ..transports.http import HttpSettings, HttpTransport, url_label
from .card import Interface, Origins, card_url, choose_interface
from .errors import error_from_a2a
from .events import is_final
from .wire import VERSION_HEADER, Dialect

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Agent:
    """What the card gave: the card itself, the interface chosen, and the client on it.

    Attributes:
        card: the agent card, as fetched.
        interface: the JSON-RPC interface spoken to.
        transport: the HTTP transport to it.
        rpc: the JSON-RPC client over that transport.
    """

    card: Dict[str, Any]
    interface: Interface
    transport: HttpTransport
    rpc: JsonRpcClient

    @property
    def dialect(self) -> Dialect:
        return self.interface.dialect


class AgentConnection:
    """One agent: its card, fetched once, and the client on its interface.  Thread-safe.

    Args:
        url: the agent's base URL, or its card's (a path ending in ``.json``).
        settings: the HTTP settings, credentials included (``headers``,
            ``auth``, ``header_provider``): those go only to trusted origins.
        allow_origins: origins besides the card's that get the credentials.

    Raises:
        ValueError: a URL or an allowed origin that is not ``http(s)://host...``.
    """

    def __init__(self, url: str, settings: HttpSettings, allow_origins: Tuple[str, ...] = ()) -> None:
        self.card_url = card_url(url)
        self._origins = Origins.of(self.card_url, allow_origins)
        self._with_credentials = settings
        self._without_credentials = dataclasses.replace(settings, headers={}, auth=None, header_provider=None)
        self._fetching: SingleFlight[Agent] = SingleFlight(
            f"jsonrpc-a2a-card[{url_label(self.card_url)}]",
            what="the agent card's fetch",
            doing="the agent card",
            closed_message="A2aClient closed",
        )
        # _lock guards _agent, _card_transport and _closed.
        self._lock = threading.Lock()
        self._agent: Optional[Agent] = None
        self._card_transport: Optional[HttpTransport] = None
        self._closed = False

    # -- the card -----------------------------------------------------------------------------

    def ready(self, deadline: Deadline, method: str) -> Agent:
        """The agent, its card fetched first if it was not (``method``: the call it is for, in errors).

        Raises:
            RequestTimeout: the card did not come before ``deadline`` (or
                another thread's fetch held it up until then).
            TransportClosed: the client is closed.
            HttpError, HttpConnectionError: the card could not be fetched.
            ProtocolError: the card is not JSON, or offers no interface this client speaks.
        """
        agent = self._agent
        if agent is not None:
            return agent
        if self._closed:
            raise TransportClosed("A2aClient closed")
        try:
            return self._fetching.join(deadline, self._connect, method=method)
        except RequestTimeout as exc:
            raise as_call_timeout(exc, deadline, method=method) from None

    def _connect(self, budget: Budget) -> Agent:
        """The step: fetch the card (within the budget), choose the interface, make its client.

        A GET is bounded by the budget as it was when it began; should a caller
        with a later deadline join meanwhile, a GET that timed out is made again
        within the budget as it is now (``Budget.spend``).
        """
        with self._lock:
            if self._closed:
                raise TransportClosed("A2aClient closed")
            if self._agent is not None:
                return self._agent
        while True:
            try:
                card = self._fetch_card(budget.deadline)
                break
            except RequestTimeout:
                if budget.spend():
                    raise
                # a caller with a later deadline joined while the GET ran: fetch again within it
        interface = choose_interface(card, self.card_url)
        trusted = self._origins.trust(interface.url)
        if not trusted:
            logger.info(
                "the agent card puts its interface on another origin (%s): no credentials go there",
                url_label(interface.url),
            )
        settings = self._with_credentials if trusted else self._without_credentials
        headers = {**settings.headers, VERSION_HEADER: interface.dialect.version}
        transport = HttpTransport.from_settings(interface.url, dataclasses.replace(settings, headers=headers))
        try:
            agent = Agent(card, interface, transport, JsonRpcClient(transport, default_timeout=None))
        except BaseException:
            transport.close()
            raise
        with self._lock:
            closed = self._closed
            if not closed:
                self._agent = agent
        if closed:
            agent.rpc.close()
            raise TransportClosed("A2aClient closed")
        return agent

    def _fetch_card(self, deadline: Deadline) -> Dict[str, Any]:
        """GET the card (with the credentials: its origin is the caller's choice), bounded by ``deadline``."""
        transport = HttpTransport.from_settings(self.card_url, self._with_credentials)
        with self._lock:
            if self._closed:
                transport.close()
                raise TransportClosed("A2aClient closed")
            self._card_transport = transport
        failed = True
        try:
            body = transport.fetch(deadline=deadline.at)
            failed = False
        except RequestTimeout as exc:
            raise as_call_timeout(exc, deadline, hint="the agent card did not come in time") from None
        finally:
            with self._lock:
                self._card_transport = None
            if failed:  # the caller leaves now: what is stuck (a blocking hook) is reclaimed in the background
                close_in_background(transport, "a2a-card-close")
            else:
                transport.close()
        if not body.strip():
            raise ProtocolError(f"{transport.label}: the agent card is empty")
        try:
            card = messages.decode(body)
        except ParseError:
            card = None
        if not isinstance(card, dict):
            raise ProtocolError(f"{transport.label}: the agent card is not a JSON object: {body[:200]!r}")
        return card

    @property
    def agent(self) -> Optional[Agent]:
        """The agent once its card was fetched, else ``None``."""
        return self._agent

    # -- requests -----------------------------------------------------------------------------

    def call(self, method: str, params: Dict[str, Any], deadline: Deadline) -> Any:
        """Send ``method`` (the card fetched first if it was not) and wait for its result.

        Raises:
            RequestTimeout: no answer before ``deadline`` (naming its whole timeout).
            A2aError: the agent's refusal with one of A2A's codes (its subclass).
            JsonRpcError: any other error, the card's fetch's included (see ``ready``).
        """
        agent = self.ready(deadline, method)
        try:
            return agent.rpc.call(method, params, timeout=deadline.remaining())
        except RequestTimeout as exc:
            raise as_call_timeout(exc, deadline, method=method) from None
        except RemoteError as exc:
            raise error_from_a2a(exc) from None

    def stream(self, method: str, params: Dict[str, Any], deadline: Deadline) -> ResponseStream:
        """Send a streaming request; the stream of its results, ending with the one that ends A2A's stream.

        Raises:
            RequestTimeout, TransportClosed, HttpError, ProtocolError: as ``ready``
                (what the answer brings is raised by the stream).
        """
        agent = self.ready(deadline, method)
        return agent.rpc.request_stream(method, params, timeout=deadline.remaining(), is_final=is_final(agent.dialect))

    # -- the end ------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Close the client on the interface (its open streams end with ``TransportClosed``) and a card's
        fetch in progress.  Bounded (as ``JsonRpcClient.close``), idempotent, thread-safe."""
        with self._lock:
            self._closed = True
            agent, card_transport = self._agent, self._card_transport
        if card_transport is not None:
            card_transport.close()
        self._fetching.close()
        if agent is not None:
            agent.rpc.close()


__all__ = ["Agent", "AgentConnection"]
