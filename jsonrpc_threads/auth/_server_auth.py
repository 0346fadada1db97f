"""One MCP server's tokens, and the single-flight authorization that renews them.

Theory of operation.  ``ServerAuth`` holds what one MCP server's
authorization needs across requests: the current token, and the server's
stored entry (client registrations, endpoints, the scopes requested so far).
When a request needs a token it does not have (a 401, a 403
``insufficient_scope``, an expired token with a way to renew it, an explicit
``ServerAuth.authorize``), it decides under its lock whether the current
token already answers the need (another thread just got it); if not, it joins
the one authorization in flight or starts it (the library's one single
flight, ``deadlines.SingleFlight``).  The flow itself (``_flow.run_flow``)
runs on the flight's thread with no lock held, on a private copy of the entry,
and its outcome goes to every thread that joined, so many threads hitting a
401 together cause one authorization, and a failure fails them all with the
same error.  The wait has no deadline of its own: the requests waiting run on
the HTTP transport's sender threads, and their callers leave at their own
deadlines; the flow is bounded by its own steps' timeouts (each request to an
authorization server, the wait for the user's browser).

The number of tokens obtained since a request last succeeded with one is
bounded (``max_authorizations``): a server that answers 401 or 403 whatever it
is given ends in ``AuthorizationError``, not in a
loop.  A flow that fails does not count: its error goes to the requests that
waited for it, and the next request may start a new one.

The token store may be user code: it is called with no lock held.
"""

from __future__ import annotations

import copy
import logging
import threading
from typing import Any, Dict, Optional, Tuple

from ..deadlines.flight import SingleFlight
from ..deadlines.timeouts import Deadline
from ..errors import AuthorizationError
from ..transports.http import url_label
from ._context import AUTHORIZATION_CODE, Config, Trigger
from ._dpop import DPOP_HEADER, Nonces, load_key
from ._flow import reason, run_flow
from ._metadata import Challenge
from ._tokens import Token
from .store import Entry

logger = logging.getLogger(__name__)


class ServerAuth:
    """Tokens and the single-flight authorization for one MCP server.  Thread-safe."""

    def __init__(self, config: Config, server_url: str, key: str, entry: Optional[Entry]) -> None:
        self._config = config
        self.server_url = server_url
        self.key = key
        # _lock guards _entry, _token, _dpop and _unconfirmed.
        self._lock = threading.Lock()
        self._entry: Entry = entry if isinstance(entry, dict) else {}
        self._token = Token.from_dict(self._entry.get("token"))
        self._dpop = load_key(self._entry)
        # One authorization at a time, whoever needs it: the flow runs on the flight's thread.
        self._flight: SingleFlight[Token] = SingleFlight(
            f"jsonrpc-auth[{url_label(server_url)}]", what="the authorization"
        )
        self._unconfirmed = 0  # tokens obtained since a request last succeeded with one
        #: The DPoP nonces this server (and its authorization server) handed out.
        self.nonces = Nonces()

    # -- what the AuthBase asks -----------------------------------------------------------

    def headers(self, method: str, url: str, body: Any) -> Dict[str, str]:
        """The headers that authorize a new request: ``Authorization``, and ``DPoP`` for a bound token.

        An expired token is renewed first (``{}`` when there is none).
        """
        token = self.token()
        return self.headers_for(token, method, url, body) if token is not None else {}

    def headers_for(self, token: Token, method: str, url: str, body: Any) -> Dict[str, str]:
        """The headers that present ``token`` on one request (a fresh DPoP proof each time)."""
        headers = {"Authorization": token.header()}
        if token.dpop_bound:
            with self._lock:
                key = self._dpop
            if key is not None:
                raw = body if isinstance(body, (bytes, str)) else None
                headers[DPOP_HEADER] = key.proof(
                    method, url, access_token=token.access_token, nonce=self.nonces.get(url), body=raw
                )
        return headers

    def token(self) -> Optional[Token]:
        """The token for a new request (renewing an expired one first), or ``None``."""
        with self._lock:
            token = self._token
        if token is None:
            return None
        renewable = token.refresh_token is not None or self._config.grant != AUTHORIZATION_CODE
        if token.expired(self._config.refresh_margin) and renewable:
            try:
                token = self._acquire(Trigger("expired", token.access_token))
            except AuthorizationError as exc:
                logger.info("%s: renewing the expired token failed (%s)", url_label(self.server_url), reason(exc))
                self._drop(token)
                return None
        return token

    def confirm(self, sent_header: str) -> None:
        """A request that carried ``sent_header`` succeeded."""
        entry = None
        with self._lock:
            token = self._token
            if token is None or token.header() != sent_header:
                return
            self._unconfirmed = 0
            if not token.confirmed:
                token.confirmed = True  # from now on a 401 for it is worth a refresh
                self._entry["token"] = token.to_dict()
                entry = copy.deepcopy(self._entry)
        if entry is not None:
            self._save(entry)

    def handle_challenge(self, status: int, challenge: Optional[Challenge], sent_header: Optional[str]) -> Token:
        """The token to re-send with after a 401 or a 403 ``insufficient_scope``.

        Raises:
            AuthorizationError: authorization failed or the bound was reached.
        """
        scheme, _, value = (sent_header or "").partition(" ")
        sent = value.strip() if scheme.lower() in ("bearer", "dpop") and value else None
        return self._acquire(Trigger("challenge", sent, status, challenge))

    def authorize(self) -> Token:
        """Run a flow now (no challenge: discovery from the well-known locations)."""
        with self._lock:
            self._unconfirmed = 0
            sent = self._token.access_token if self._token is not None else None
        return self._acquire(Trigger("explicit", sent))

    # -- single flight ---------------------------------------------------------------------

    def _satisfied(self, trigger: Trigger, token: Optional[Token]) -> bool:
        if token is None:
            return False
        if trigger.kind == "expired":
            return not token.expired(self._config.refresh_margin)
        if token.access_token == trigger.sent:
            return False
        if trigger.step_up and trigger.challenge is not None:
            return token.covers(trigger.challenge.scopes)
        return True

    def _acquire(self, trigger: Trigger) -> Token:
        while True:
            with self._lock:
                token = self._token
            if self._satisfied(trigger, token):
                assert token is not None
                return token
            # Join the flight in progress (whatever need started it) or start one for this
            # need.  A fresh token answers an expired one, even one that will soon expire
            # again; for a challenge, another need's token may not answer it: look again.
            token = self._flight.join(Deadline.never(), lambda budget: self._authorize_once(trigger))
            if trigger.kind == "expired" or self._satisfied(trigger, token):
                return token

    def _authorize_once(self, trigger: Trigger) -> Token:
        """The flight's step, on its own thread: one flow, unless the current token already answers."""
        with self._lock:
            token = self._token
            if self._satisfied(trigger, token):
                assert token is not None
                return token  # another flight ended between the caller's look and this one
            if self._unconfirmed >= self._config.max_authorizations:
                raise AuthorizationError(
                    f"{url_label(self.server_url)}: still refused after {self._unconfirmed} "
                    "authorization(s); giving up",
                    status_code=trigger.status,
                    oauth_error=trigger.challenge.error if trigger.challenge is not None else None,
                )
            entry = copy.deepcopy(self._entry)
        token, entry = self._run_flow(trigger, token, entry)
        with self._lock:
            self._token = token
            self._entry = entry
            self._dpop = load_key(entry)
            # Only tokens count: a flow that failed (the user declined, the
            # server was down) may be tried again by the next request.
            self._unconfirmed += 1
        self._save(entry)
        return token

    def _run_flow(self, trigger: Trigger, token: Optional[Token], entry: Entry) -> Tuple[Token, Entry]:
        # No lock held: the flow talks to the network and may wait for the user.
        new_token = run_flow(self._config, self.server_url, entry, trigger, token, self.nonces)
        entry["token"] = new_token.to_dict()
        return new_token, entry

    def _drop(self, token: Token) -> None:
        with self._lock:
            if self._token is not token:
                return
            self._token = None
            self._entry.pop("token", None)
            entry = copy.deepcopy(self._entry)
        self._save(entry)

    def _save(self, entry: Entry) -> None:
        try:
            self._config.store.save(self.key, entry)
        except Exception as exc:
            logger.warning("%s: the token store failed (%s); tokens kept in memory", self.key, type(exc).__name__)


__all__ = ["ServerAuth"]
