"""The exception of the authorization layer (defined with every other one in jsonrpc_threads.errors)."""

from ..errors import AuthorizationError

__all__ = ["AuthorizationError"]
