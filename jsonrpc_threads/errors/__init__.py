"""The exception tree of jsonrpc_threads, and its table of error codes.

Every exception the library raises is a ``JsonRpcError``, so one
``except JsonRpcError`` catches them all.  Where a builtin base helps callers that
already handle it, the class has it too (``RequestTimeout`` is a
``TimeoutError``, ``TransportClosed`` a ``ConnectionError``, ...).
This module is the public path of every class: the root, the codes and the
peer's answers are defined in ``errors/_tree.py``, the local failures in
``errors/_local.py``, and the client, the transports and ``auth/`` import them
from here.  The MCP
layer's own errors (MCP's codes, the protocol's violations, the tool
registry's lookups) live in ``jsonrpc_threads.mcp.errors`` and are imported
from ``jsonrpc_threads.mcp``; the table below lists them too, but this module
knows nothing of MCP (it never imports the MCP layer).

Who said so.  An error is either the peer's answer or a local failure:

- ``RemoteError``: the peer answered a request with an error response.
  ``error_from_response`` is the one place where a wire error becomes an
  exception, and it returns only ``RemoteError`` instances: for the five
  codes of the JSON-RPC 2.0 specification the ``Remote*`` class, which is also
  the standard class (``RemoteMethodNotFound`` is a ``MethodNotFound``
  and a ``RemoteError``); for any other code a plain ``RemoteError``.
- The five standard classes (``ParseError`` .. ``InternalError``) name
  a code, whoever raised it.  A handler inside
  ``jsonrpc_threads.server.serve`` (or an ``on_request`` handler) raises
  ``MethodNotFound(message=..., data=None)`` to answer with -32601, and the
  library raises ``ParseError`` / ``InvalidRequest`` itself when a
  message it received is malformed; those are not ``RemoteError``.  So
  ``except MethodNotFound`` catches the code from anywhere, ``except
  RemoteError`` every answer of the peer.
- Everything else is local: nothing answered in time, the transport is gone,
  an HTTP exchange failed without a JSON-RPC error body, a configuration or a
  lookup is wrong.  Their codes come from the server-error range
  -32000..-32099, as the official MCP SDKs do; they are never looked up from
  wire errors, so a peer that answers with the same code still produces a plain
  ``RemoteError``.
- One code beyond the specification is known on the wire: -32800, the
  ``RequestCancelled`` of the Language Server Protocol (in the range JSON-RPC
  reserves for implementations), becomes ``RequestCancelled``.

The table (``code``: the value of ``.code``; ``peer``: the code the peer sent)::

    class                  code     origin   also a            raised by
    JsonRpcError           any      either   Exception         (the root)
    RemoteError            peer     remote                     error_from_response
    ParseError             -32700   local                      messages, handlers
    InvalidRequest         -32600   local                      messages, handlers
    MethodNotFound         -32601   local                      handlers, server
    InvalidParams          -32602   local                      handlers
    InternalError          -32603   local                      handlers, server
    RemoteParseError       -32700   remote   ParseError        error_from_response
    RemoteInvalidRequest   -32600   remote   InvalidRequest    error_from_response
    RemoteMethodNotFound   -32601   remote   MethodNotFound    error_from_response
    RemoteInvalidParams    -32602   remote   InvalidParams     error_from_response
    RemoteInternalError    -32603   remote   InternalError     error_from_response
    RequestCancelled       -32800   remote                     error_from_response
    TransportClosed        -32000   local    ConnectionError   transports, client
    RequestTimeout         -32001   local    TimeoutError      client
    HttpError              -32002   local                      HTTP transport
    HttpConnectionError    -32002   local    ConnectionError   HTTP transport
    SessionExpired         -32002   local    HttpError         HTTP transport
    StreamLost             -32002   local    ConnectionError   HTTP transport (2026-07-28)
    AuthorizationError     -32002   local    HttpError         auth
    MessageTooLarge        -32003   local                      transports
    ConfigError            -32010   local    ValueError        transports.config, mcp.config
    UnknownTool            -32602   local    LookupError       mcp.registry (mcp.errors)
    UnknownServer          -32602   local    LookupError       mcp.registry (mcp.errors)
    ServerUnavailable      -32000   local    ConnectionError   mcp.supervisor (mcp.errors)
    ProtocolVersionError   -32600   local                      mcp.handshake (mcp.errors)
    ProtocolError          -32600   local                      mcp, acp (an answer the protocol forbids)
    SkillVerificationError -32602   local                      mcp.skills (mcp.errors)
    HeaderMismatch         -32020   remote   RemoteError       mcp.errors.error_from_mcp
    MissingClientCapability -32021  remote   RemoteError       mcp.errors.error_from_mcp
    UnsupportedProtocolVersion -32022  remote   RemoteError    mcp.errors.error_from_mcp

MCP's codes.  MCP revision 2026-07-28 reserves -32020..-32099 for the codes
it defines.  ``error_from_response`` serves every JSON-RPC peer and
leaves them plain ``RemoteError``; the MCP layer turns them into their
classes (``jsonrpc_threads.mcp.errors.error_from_mcp``), so only an MCP
server's -32022 becomes an ``UnsupportedProtocolVersion``.

Pickling.  Every exception here (and any subclass a user writes) pickles and
copies with its attributes: ``JsonRpcError`` records the arguments its
class was called with, and rebuilds from them, then restores the instance's
attributes (a message changed after construction included).
"""

from __future__ import annotations

from ._local import (
    AuthorizationError,
    ConfigError,
    HttpConnectionError,
    HttpError,
    MessageTooLarge,
    ProtocolError,
    RequestTimeout,
    SessionExpired,
    StreamLost,
    TransportClosed,
)
from ._tree import (
    CONFIG_ERROR,
    HTTP_ERROR,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MESSAGE_TOO_LARGE,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    PROTOCOL_ERRORS,
    REMOTE_ERRORS,
    REQUEST_CANCELLED,
    REQUEST_TIMEOUT,
    STANDARD_ERRORS,
    TRANSPORT_CLOSED,
    InternalError,
    InvalidParams,
    InvalidRequest,
    JsonRpcError,
    MethodNotFound,
    ParseError,
    RemoteError,
    RemoteInternalError,
    RemoteInvalidParams,
    RemoteInvalidRequest,
    RemoteMethodNotFound,
    RemoteParseError,
    RequestCancelled,
    error_from_response,
)

TYPE_CHECKING = False  # typing is not imported at run time: a tool server's start-up pays for every module
if TYPE_CHECKING:
    from typing import Any, Union

    #: A request id: an ``int`` or a ``str``.
    RequestId = Union[int, str]

# Every class is known by the path users import it from: tracebacks, ``repr(type(error))``
# and pickles say ``jsonrpc_threads.errors.TransportClosed``, wherever it is defined.
for _name, _value in list(globals().items()):
    if isinstance(_value, type) and issubclass(_value, JsonRpcError) and not _name.startswith("_"):
        _value.__module__ = __name__
del _name, _value


def __getattr__(name: str) -> Any:
    """``RequestId`` (``Union[int, str]``), made on first use: typing loads only when asked for."""
    if name == "RequestId":
        from typing import Union  # noqa: PLC0415

        return Union[int, str]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CONFIG_ERROR",
    "HTTP_ERROR",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MESSAGE_TOO_LARGE",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "PROTOCOL_ERRORS",
    "REMOTE_ERRORS",
    "REQUEST_CANCELLED",
    "REQUEST_TIMEOUT",
    "STANDARD_ERRORS",
    "TRANSPORT_CLOSED",
    "AuthorizationError",
    "ConfigError",
    "ProtocolError",
    "HttpConnectionError",
    "HttpError",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "JsonRpcError",
    "MessageTooLarge",
    "MethodNotFound",
    "ParseError",
    "RemoteError",
    "RemoteInternalError",
    "RemoteInvalidParams",
    "RemoteInvalidRequest",
    "RemoteMethodNotFound",
    "RemoteParseError",
    "RequestCancelled",
    "RequestId",
    "RequestTimeout",
    "SessionExpired",
    "StreamLost",
    "TransportClosed",
    "error_from_response",
]
