"""The exception of the authorization layer."""

from __future__ import annotations

from typing import Any, Optional, Type

from ..errors import HttpError


class AuthorizationError(HttpError):
    """Authorization failed or was refused; the request that needed it failed.

    Raised for a server whose protected-resource metadata names another
    resource, an authorization server that cannot be discovered or refuses
    (``invalid_grant``, ``access_denied``), a redirect whose ``state`` or
    ``iss`` does not match, a user who did not finish in time, and a server
    that keeps answering 401 or 403 after the bounded number of authorizations.
    Its message never contains a token, a secret or an authorization code.

    Retrying is safe (nothing was sent with a bad token) but will usually
    need the user: a new authorization starts on the next request.

    Attributes:
        status_code: the MCP server's status (401, 403) when the failure
            answers one of its challenges, else ``None``.
        oauth_error: the OAuth ``error`` code returned by the server
            (``invalid_grant``, ``insufficient_scope``, ...), when there was one.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: Optional[int] = None,
        body_excerpt: str = "",
        oauth_error: Optional[str] = None,
    ) -> None:
        super().__init__(message, status_code=status_code, body_excerpt=body_excerpt)
        self.oauth_error = oauth_error

    def __reduce__(self) -> Any:
        return (_rebuild, (type(self), self.message, self.status_code, self.body_excerpt, self.oauth_error))


def _rebuild(
    cls: Type[AuthorizationError], message: str, status_code: Optional[int], body: str, oauth_error: Optional[str]
) -> AuthorizationError:
    return cls(message, status_code=status_code, body_excerpt=body, oauth_error=oauth_error)
