"""Authorization for remote MCP servers: OAuth 2.1 as the MCP specification describes it.

Install the extra: ``pip install 'jsonrpc_threads[oauth]'`` (Authlib).  Then::

    from jsonrpc_threads import HttpTransport
    from jsonrpc_threads.auth import OAuth
    from jsonrpc_threads.mcp import McpClient

    with McpClient(HttpTransport("https://mcp.example.com/mcp", auth=OAuth())) as client:
        client.list_tools()      # a 401 opens the browser once; the request then goes through

This package imports without Authlib; ``OAuth`` raises ``ImportError``
naming the extra when it is missing.  See ``OAuth`` for the options:
pre-registered clients, client ID metadata documents, headless
``on_authorize``, token stores, client credentials, JWT bearer assertions
(``CrossAppAccess``).
"""

from ..errors import AuthorizationError
from ._oauth import DEFAULT_MAX_AUTHORIZATIONS, DEFAULT_REFRESH_MARGIN_S, OAuth
from .grants import AssertionProvider, AssertionRequest, CrossAppAccess, WorkloadIdentity
from .loopback import LoopbackAuthorizer, RedirectListener
from .store import FileTokenStore, MemoryTokenStore, TokenStore

__all__ = [
    "DEFAULT_MAX_AUTHORIZATIONS",
    "DEFAULT_REFRESH_MARGIN_S",
    "AssertionProvider",
    "AssertionRequest",
    "AuthorizationError",
    "CrossAppAccess",
    "FileTokenStore",
    "LoopbackAuthorizer",
    "MemoryTokenStore",
    "OAuth",
    "RedirectListener",
    "TokenStore",
    "WorkloadIdentity",
]
