"""The ``requestState`` of a multi-round request (MCP 2026-07-28): what a retry needs, signed (pure).

Theory of operation.  A stateless server keeps nothing between the rounds of
one request.  When a run ends with ``input_required``, what the next round
needs travels with the client instead: the answers of the rounds before, the
questions now asked, which request it belongs to (method, name, a digest of
the arguments) and until when it holds.  ``StateSeal`` turns that into an
opaque string, ``base64url(json) "." base64url(HMAC-SHA256)``, and back; a
string that was changed, made with another secret, made for another request,
or too old is refused with ``InvalidParams``.

The secret: ``McpServer(state_secret=...)``; by default a random one per
process, so a state made by one process is refused by another (several
processes behind one address must share a secret).  The secret never appears
in a ``repr``, a log line or an error.

Thread-safety: ``StateSeal`` is immutable; its methods are pure.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from typing import Any, Dict, Optional, Union

from ...errors import InvalidParams

__all__ = ["STATE_TTL_S", "StateSeal", "arguments_digest"]

#: How long a ``requestState`` stays good for its retry.
STATE_TTL_S = 3600.0
_VERSION = 1


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def arguments_digest(method: str, name: Any, arguments: Any) -> str:
    """What binds a state to its request: a digest of the method, the name (or URI) and the arguments."""
    canonical = json.dumps([method, name, arguments], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


class StateSeal:
    """Signs and checks ``requestState`` strings with one secret.

    Args:
        secret: bytes or a string (at least 16 bytes of it); ``None``: a random
            secret for this process.

    Raises:
        ValueError: a secret shorter than 16 bytes.
        TypeError: a secret that is neither bytes nor a string.
    """

    __slots__ = ("_key",)

    def __init__(self, secret: Union[bytes, str, None] = None) -> None:
        if secret is None:
            key = secrets.token_bytes(32)
        elif isinstance(secret, str):
            key = secret.encode("utf-8")
        elif isinstance(secret, (bytes, bytearray)):
            key = bytes(secret)
        else:
            raise TypeError(f"state_secret must be bytes or a str, not {type(secret).__name__}")
        if len(key) < 16:
            raise ValueError("state_secret must hold at least 16 bytes")
        self._key = key

    def __repr__(self) -> str:
        return "<StateSeal secret=***>"

    def seal(self, binding: str, answers: Dict[str, Any], asked: Any, *, ttl_s: float = STATE_TTL_S) -> str:
        """The ``requestState`` for a request bound by ``binding`` (``arguments_digest``).

        Args:
            binding: the request's digest.
            answers: the answers of the rounds so far.
            asked: the keys of the questions this round asks.
            ttl_s: how long the state holds.
        """
        payload = {"v": _VERSION, "b": binding, "a": answers, "q": sorted(asked), "e": int(time.time() + ttl_s)}
        body = _b64(json.dumps(payload, separators=(",", ":"), sort_keys=True).encode("utf-8"))
        return f"{body}.{self._sign(body)}"

    def open(self, state: Any, binding: str) -> Dict[str, Any]:
        """The payload of a ``requestState`` made by ``seal`` for this request.

        Returns:
            ``{"a": answers so far, "q": the keys asked}``.

        Raises:
            InvalidParams: not a string this server made, changed since, made
                for another request, or expired (the message says which, never the secret).
        """
        if not isinstance(state, str) or state.count(".") != 1:
            raise InvalidParams("requestState is not one this server made", {"reason": "malformed requestState"})
        body, signature = state.split(".")
        if not hmac.compare_digest(signature, self._sign(body)):
            raise InvalidParams(
                "requestState failed its integrity check (changed, or made by another server)",
                {"reason": "requestState integrity check failed"},
            )
        try:
            payload = json.loads(_unb64(body))
        except (ValueError, UnicodeDecodeError):
            raise InvalidParams(
                "requestState is not one this server made", {"reason": "malformed requestState"}
            ) from None
        if not isinstance(payload, dict) or payload.get("v") != _VERSION:
            raise InvalidParams("requestState is of another version", {"reason": "malformed requestState"})
        if payload.get("b") != binding:
            raise InvalidParams(
                "requestState belongs to another request (other method, name or arguments)",
                {"reason": "requestState does not match this request"},
            )
        expires: Optional[Any] = payload.get("e")
        if not isinstance(expires, int) or expires < time.time():
            raise InvalidParams("requestState has expired: start the request again", {"reason": "requestState expired"})
        answers = payload.get("a")
        asked = payload.get("q")
        return {"a": answers if isinstance(answers, dict) else {}, "q": asked if isinstance(asked, list) else []}

    def _sign(self, body: str) -> str:
        return _b64(hmac.new(self._key, body.encode("ascii"), hashlib.sha256).digest())
