"""A2A's error codes as exceptions: -32001 (task not found) .. -32009 (version not supported).

Theory of operation.  An A2A agent answers a refused request with a JSON-RPC
error whose code names what went wrong (the A2A specification, "Error Code
Mappings": the same codes in v1.0 and v0.3, which had the first seven).  The
library below this layer serves every JSON-RPC peer and turns such an answer
into a plain ``RemoteError``; the A2A client turns
it into the class of its code here (``error_from_a2a``), so only an A2A
agent's -32001 becomes a ``TaskNotFound``.  Each class is a
``RemoteError`` (so a
``JsonRpcError``), with the agent's ``code``,
``message`` and ``data`` (v1.0 agents send a list of detail objects there, each
with an ``@type``), and is built as ``Cls(message=None, data=None)``.

Nothing below ``a2a/`` imports this module.  Pure: no I/O, no threads.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type

from ..errors import JsonRpcError, RemoteError

TASK_NOT_FOUND = -32001
TASK_NOT_CANCELABLE = -32002
PUSH_NOTIFICATION_NOT_SUPPORTED = -32003
UNSUPPORTED_OPERATION = -32004
CONTENT_TYPE_NOT_SUPPORTED = -32005
INVALID_AGENT_RESPONSE = -32006
EXTENDED_CARD_NOT_CONFIGURED = -32007
EXTENSION_SUPPORT_REQUIRED = -32008
VERSION_NOT_SUPPORTED = -32009


class A2aError(RemoteError):
    """An A2A agent refused a request with one of A2A's own codes (the subclasses name each).

    The request reached the agent; sending it again as it is will be refused again.
    """

    default_code = 0
    default_message = "A2A error"

    def __init__(self, message: Optional[str] = None, data: Any = None) -> None:
        super().__init__(self.default_code, message or self.default_message, data)


class TaskNotFound(A2aError, LookupError):
    """-32001: no such task (or not one this client may see); it may have expired."""

    default_code = TASK_NOT_FOUND
    default_message = "Task not found"


class TaskNotCancelable(A2aError):
    """-32002: the task cannot be canceled now (it ended already: completed, failed, canceled, rejected)."""

    default_code = TASK_NOT_CANCELABLE
    default_message = "Task not cancelable"


class PushNotificationNotSupported(A2aError):
    """-32003: the agent does not send push notifications."""

    default_code = PUSH_NOTIFICATION_NOT_SUPPORTED
    default_message = "Push notifications are not supported"


class UnsupportedOperation(A2aError):
    """-32004: the agent does not do this (streaming without the capability, a message to an ended task, ...)."""

    default_code = UNSUPPORTED_OPERATION
    default_message = "Unsupported operation"


class ContentTypeNotSupported(A2aError):
    """-32005: a media type in the message (or one asked for) is not one the agent takes."""

    default_code = CONTENT_TYPE_NOT_SUPPORTED
    default_message = "Content type not supported"


class InvalidAgentResponse(A2aError):
    """-32006: an agent behind this one answered what the protocol does not allow."""

    default_code = INVALID_AGENT_RESPONSE
    default_message = "Invalid agent response"


class ExtendedCardNotConfigured(A2aError):
    """-32007: the agent offers an extended card but has none configured."""

    default_code = EXTENDED_CARD_NOT_CONFIGURED
    default_message = "Extended agent card not configured"


class ExtensionSupportRequired(A2aError):
    """-32008: the agent requires an extension this client did not declare (v1.0)."""

    default_code = EXTENSION_SUPPORT_REQUIRED
    default_message = "Extension support required"


class VersionNotSupported(A2aError):
    """-32009: the agent does not speak the protocol version asked for (``A2A-Version``) (v1.0)."""

    default_code = VERSION_NOT_SUPPORTED
    default_message = "Version not supported"


#: A2A's codes -> their class.
A2A_ERRORS: Dict[int, Type[A2aError]] = {
    cls.default_code: cls
    for cls in (
        TaskNotFound,
        TaskNotCancelable,
        PushNotificationNotSupported,
        UnsupportedOperation,
        ContentTypeNotSupported,
        InvalidAgentResponse,
        ExtendedCardNotConfigured,
        ExtensionSupportRequired,
        VersionNotSupported,
    )
}


def error_from_a2a(error: JsonRpcError) -> JsonRpcError:
    """The A2A class of an agent's error answer with one of A2A's codes; any other error as it is.

    Only a plain ``RemoteError`` (the peer's answer
    with a code the JSON-RPC layer does not know) is turned: a local error that
    happens to share a code (``RequestTimeout`` is -32001 too) never is.
    """
    if type(error) is not RemoteError:
        return error
    cls = A2A_ERRORS.get(error.code)
    return error if cls is None else cls(error.message or None, error.data)


__all__ = [
    "A2A_ERRORS",
    "CONTENT_TYPE_NOT_SUPPORTED",
    "EXTENDED_CARD_NOT_CONFIGURED",
    "EXTENSION_SUPPORT_REQUIRED",
    "INVALID_AGENT_RESPONSE",
    "PUSH_NOTIFICATION_NOT_SUPPORTED",
    "TASK_NOT_CANCELABLE",
    "TASK_NOT_FOUND",
    "UNSUPPORTED_OPERATION",
    "VERSION_NOT_SUPPORTED",
    "A2aError",
    "ContentTypeNotSupported",
    "ExtendedCardNotConfigured",
    "ExtensionSupportRequired",
    "InvalidAgentResponse",
    "PushNotificationNotSupported",
    "TaskNotCancelable",
    "TaskNotFound",
    "UnsupportedOperation",
    "VersionNotSupported",
    "error_from_a2a",
]
