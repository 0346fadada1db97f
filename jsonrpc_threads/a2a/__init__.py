"""Agent2Agent (A2A): a synchronous, thread-safe client for remote agents.

An agent talks to another over A2A (a2a-protocol.org, v1.0; v0.3 agents too,
told apart by their card): JSON-RPC over HTTP, answers streamed as server-sent
events.  ``A2aClient`` is that client, built on the package's public faces
only: ``JsonRpcClient`` over an
``HttpTransport`` (its ``request_stream`` for the streaming methods, the
transport's ``fetch`` for the card), and the exception tree.

    from jsonrpc_threads.a2a import A2aClient, text_of

    with A2aClient("https://agent.example.com") as agent:
        task = agent.send_message("Summarize this quarter's sales", timeout=120)
        print(text_of(task))
"""

from __future__ import annotations

from .card import card_url
from .client import POLL_FIRST_S, POLL_MAX_S, A2aClient
from .errors import (
    A2A_ERRORS,
    A2aError,
    ContentTypeNotSupported,
    ExtendedCardNotConfigured,
    ExtensionSupportRequired,
    InvalidAgentResponse,
    PushNotificationNotSupported,
    TaskNotCancelable,
    TaskNotFound,
    UnsupportedOperation,
    VersionNotSupported,
    error_from_a2a,
)
from .events import EventStream
from .wire import (
    CARD_PATH,
    INTERRUPTED_STATES,
    LEGACY_PROTOCOL_VERSION,
    PROTOCOL_VERSION,
    TERMINAL_STATES,
    VERSION_HEADER,
    event_kind,
    is_done,
    state_of,
    text_of,
)

__all__ = [
    "A2A_ERRORS",
    "CARD_PATH",
    "INTERRUPTED_STATES",
    "LEGACY_PROTOCOL_VERSION",
    "POLL_FIRST_S",
    "POLL_MAX_S",
    "PROTOCOL_VERSION",
    "TERMINAL_STATES",
    "VERSION_HEADER",
    "A2aClient",
    "A2aError",
    "ContentTypeNotSupported",
    "EventStream",
    "ExtendedCardNotConfigured",
    "ExtensionSupportRequired",
    "InvalidAgentResponse",
    "PushNotificationNotSupported",
    "TaskNotCancelable",
    "TaskNotFound",
    "UnsupportedOperation",
    "VersionNotSupported",
    "card_url",
    "error_from_a2a",
    "event_kind",
    "is_done",
    "state_of",
    "text_of",
]
