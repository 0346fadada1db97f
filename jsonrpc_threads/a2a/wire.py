"""What A2A messages look like, in both versions this client speaks: v1.0, and v0.3 (pure).

Theory of operation.  The two versions carry the same things differently, and
a ``Dialect`` holds every difference this client meets:

- method names: ``SendMessage``, ``SendStreamingMessage``, ``GetTask``,
  ``ListTasks``, ``CancelTask``, ``SubscribeToTask`` (v1.0); ``message/send``,
  ``message/stream``, ``tasks/get``, ``tasks/cancel``, ``tasks/resubscribe``
  (v0.3, which has no task listing);
- results: v1.0 wraps them (``{"task": ...}`` or ``{"message": ...}``, and a
  stream's events ``{"statusUpdate": ...}``, ``{"artifactUpdate": ...}``); v0.3
  sends the object itself, its ``kind`` naming what it is.  ``Dialect.unwrap``
  takes the object out, as the agent spelled it;
- enums: ``TASK_STATE_INPUT_REQUIRED`` and ``ROLE_USER`` (v1.0, ProtoJSON),
  ``input-required`` and ``user`` (v0.3); parts: ``{"text": ...}`` (v1.0),
  ``{"kind": "text", "text": ...}`` (v0.3).

The readers below (``event_kind``, ``state_of``, ``ends_stream``,
``text_of``) take either version's objects, so code above them (and a
caller) need not know which version an agent speaks: a state is always named
the short way (``"working"``, ``"input-required"``, ``"completed"``, ...).

Pure: no I/O, no threads.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Union

from ..errors import ProtocolError

#: The version this client speaks first, and sends as ``A2A-Version``.
PROTOCOL_VERSION = "1.0"
#: The earlier version, spoken to agents whose card offers nothing newer.
LEGACY_PROTOCOL_VERSION = "0.3"
#: The header (an A2A "service parameter") that names the version of each request.
VERSION_HEADER = "A2A-Version"
#: Where an agent's card is, under its base URL.
CARD_PATH = "/.well-known/agent-card.json"
#: The protocol binding this client speaks (a card's ``protocolBinding``, v0.3's ``transport``).
JSONRPC_BINDING = "JSONRPC"

#: States after which a task changes no more.
TERMINAL_STATES: FrozenSet[str] = frozenset({"completed", "canceled", "failed", "rejected"})
#: States in which a task waits for its client (a message, credentials).
INTERRUPTED_STATES: FrozenSet[str] = frozenset({"input-required", "auth-required"})
#: Every state, as this module names them.
STATES: FrozenSet[str] = TERMINAL_STATES | INTERRUPTED_STATES | {"submitted", "working", "unknown"}

#: What a stream's event is (``event_kind``).
TASK, MESSAGE, STATUS_UPDATE, ARTIFACT_UPDATE = "task", "message", "status-update", "artifact-update"
#: v1.0's wrapper keys (a result's, a stream event's) -> the kind of what they hold.
_WRAPPERS = {"task": TASK, "message": MESSAGE, "statusUpdate": STATUS_UPDATE, "artifactUpdate": ARTIFACT_UPDATE}
_PROTO_STATE = re.compile(r"^TASK_STATE_([A-Z_]+)$")

#: A message to send: a ``str`` (one text part) or a Message object.
MessageLike = Union[str, Mapping[str, Any]]


@dataclass(frozen=True)
class Dialect:
    """How one version of A2A spells what this client sends and reads.

    Attributes:
        version: ``"1.0"`` or ``"0.3"``: sent as ``A2A-Version``.
        send, stream, get_task, list_tasks, cancel_task, subscribe: the method
            names (``list_tasks`` is ``None`` where the version has none).
        wrapped: results and events come wrapped (v1.0).
        role_user: the role of the client's messages.
    """

    version: str
    send: str
    stream: str
    get_task: str
    list_tasks: Optional[str]
    cancel_task: str
    subscribe: str
    wrapped: bool
    role_user: str

    def message(
        self,
        message: MessageLike,
        *,
        context_id: Optional[str] = None,
        task_id: Optional[str] = None,
    ) -> Dict[str, Any]:
        """The Message object to send: a ``str`` becomes one text part; a dict is completed.

        A given Message keeps what it has; it gets a ``messageId`` (a new UUID)
        and the user's ``role`` when it has none, and ``context_id`` /
        ``task_id`` as ``contextId`` / ``taskId``.

        Raises:
            TypeError: a message that is neither a ``str`` nor a mapping.
            ValueError: an empty text, or a ``task_id`` / ``context_id`` that
                differs from the one the message names.
        """
        if isinstance(message, str):
            if not message:
                raise ValueError("the message is empty")
            body: Dict[str, Any] = {"role": self.role_user, "parts": [self.text_part(message)]}
        elif isinstance(message, Mapping):
            body = dict(message)
            body.setdefault("role", self.role_user)
            if not isinstance(body.get("parts"), list):
                raise ValueError("a Message needs a list of parts")
        else:
            raise TypeError(f"a message is a str or a Message dict, not {type(message).__name__}")
        body.setdefault("messageId", str(uuid.uuid4()))
        if not self.wrapped:
            body.setdefault("kind", "message")
        for key, value in (("contextId", context_id), ("taskId", task_id)):
            if value is None:
                continue
            if not isinstance(value, str) or not value:
                raise ValueError(f"{key} must be a non-empty str")
            if body.get(key, value) != value:
                raise ValueError(f"the message's {key} {body[key]!r} is not {value!r}")
            body[key] = value
        return body

    def text_part(self, text: str) -> Dict[str, Any]:
        """One text part."""
        return {"text": text} if self.wrapped else {"kind": "text", "text": text}

    def send_params(
        self, message: Dict[str, Any], *, return_immediately: bool, tenant: Optional[str]
    ) -> Dict[str, Any]:
        """The params of ``send`` and ``stream``: the message, and how to wait for it."""
        params: Dict[str, Any] = {"message": message}
        if self.wrapped:
            if return_immediately:
                params["configuration"] = {"returnImmediately": True}
        else:
            params["configuration"] = {"blocking": not return_immediately}
        return self.with_tenant(params, tenant)

    def with_tenant(self, params: Dict[str, Any], tenant: Optional[str]) -> Dict[str, Any]:
        """``params`` with the interface's ``tenant`` (v1.0: every request names it, when the card gives one)."""
        if tenant and self.wrapped:
            params["tenant"] = tenant
        return params

    def unwrap(self, result: Any) -> Dict[str, Any]:
        """The Task, Message or update event a result (or a stream event) holds, as the agent spelled it.

        Raises:
            ProtocolError: a result that holds none of them.
        """
        if not isinstance(result, dict):
            raise ProtocolError(f"an A2A result must be an object, not {result!r:.200}")
        if not self.wrapped:
            return result
        inner = [key for key in _WRAPPERS if key in result]
        if len(inner) != 1 or not isinstance(result[inner[0]], dict):
            raise ProtocolError(f"an A2A {self.version} result holds one of {sorted(_WRAPPERS)}: {result!r:.200}")
        value: Dict[str, Any] = result[inner[0]]
        return value

    def state_name(self, state: str) -> str:
        """A state (``"working"``, or ``"TASK_STATE_WORKING"``) as this version spells it."""
        short = normalize_state(state)
        if short not in STATES:
            raise ValueError(f"unknown task state {state!r}; one of {sorted(STATES)}")
        if not self.wrapped:
            return short
        return "TASK_STATE_UNSPECIFIED" if short == "unknown" else "TASK_STATE_" + short.upper().replace("-", "_")


V1 = Dialect(
    version=PROTOCOL_VERSION,
    send="SendMessage",
    stream="SendStreamingMessage",
    get_task="GetTask",
    list_tasks="ListTasks",
    cancel_task="CancelTask",
    subscribe="SubscribeToTask",
    wrapped=True,
    role_user="ROLE_USER",
)
V03 = Dialect(
    version=LEGACY_PROTOCOL_VERSION,
    send="message/send",
    stream="message/stream",
    get_task="tasks/get",
    list_tasks=None,
    cancel_task="tasks/cancel",
    subscribe="tasks/resubscribe",
    wrapped=False,
    role_user="user",
)
#: Each version's dialect.
DIALECTS: Dict[str, Dialect] = {PROTOCOL_VERSION: V1, LEGACY_PROTOCOL_VERSION: V03}


def normalize_state(state: Any) -> str:
    """A state as this module names it: ``TASK_STATE_INPUT_REQUIRED`` and ``input-required`` -> ``"input-required"``."""
    if not isinstance(state, str):
        return "unknown"
    match = _PROTO_STATE.match(state)
    if match:
        name = match.group(1).lower().replace("_", "-")
        return "unknown" if name == "unspecified" else name
    return state


def event_kind(event: Mapping[str, Any]) -> str:
    """What an event (or a result) is: ``"task"``, ``"message"``, ``"status-update"`` or ``"artifact-update"``.

    v0.3 objects say so (``kind``); v1.0 objects, out of their wrapper, are
    told apart by the fields each must have.

    Raises:
        ProtocolError: an object that is none of them.
    """
    kind = event.get("kind")
    if kind in (TASK, MESSAGE, STATUS_UPDATE, ARTIFACT_UPDATE):
        return str(kind)
    if "artifact" in event and "taskId" in event:
        return ARTIFACT_UPDATE
    if "status" in event and "taskId" in event:
        return STATUS_UPDATE
    if "status" in event and "id" in event:
        return TASK
    if "messageId" in event or "parts" in event:
        return MESSAGE
    raise ProtocolError(f"not an A2A task, message or update event: {dict(event)!r:.200}")


def state_of(obj: Mapping[str, Any]) -> Optional[str]:
    """The state of a Task or a status-update event (``"working"``, ...); ``None`` for anything else."""
    status = obj.get("status")
    if not isinstance(status, dict):
        return None
    return normalize_state(status.get("state"))


def ends_stream(event: Mapping[str, Any]) -> bool:
    """True for the last event of a stream: a Message, or a task (or its update) terminal or interrupted.

    v0.3's ``final: true`` on a status update ends it too.
    """
    if event.get("final") is True:
        return True
    if event_kind(event) == MESSAGE:
        return True
    state = state_of(event)
    return state is not None and (state in TERMINAL_STATES or state in INTERRUPTED_STATES)


def task_of(event: Mapping[str, Any]) -> Optional[str]:
    """The id of the task an event is about (a Task's ``id``, an update's ``taskId``); ``None`` for a message.

    Raises:
        ProtocolError: an object that is no A2A event.
    """
    kind = event_kind(event)
    if kind == MESSAGE:
        return None
    owner = event.get("id") if kind == TASK else event.get("taskId")
    return owner if isinstance(owner, str) else None


def is_done(task: Mapping[str, Any]) -> bool:
    """True for a task in a terminal or interrupted state (what ``A2aClient.wait`` waits for)."""
    state = state_of(task)
    return state in TERMINAL_STATES or state in INTERRUPTED_STATES


def parts_text(parts: Any) -> str:
    """The text of the text parts of a list of parts, joined (both versions' parts)."""
    if not isinstance(parts, list):
        return ""
    texts = [
        part["text"]
        for part in parts
        if isinstance(part, dict) and isinstance(part.get("text"), str) and part.get("kind", "text") == "text"
    ]
    return "".join(texts)


def text_of(obj: Mapping[str, Any]) -> str:
    """The text a person reads in an object: a Message's, a Task's (its artifacts', else its
    status message's), an update's (the artifact's, or the status message's).  ``""`` when none."""
    kind = event_kind(obj)
    if kind == MESSAGE:
        return parts_text(obj.get("parts"))
    if kind == ARTIFACT_UPDATE:
        artifact = obj.get("artifact")
        return parts_text(artifact.get("parts")) if isinstance(artifact, dict) else ""
    if kind == TASK:
        artifacts = obj.get("artifacts")
        if isinstance(artifacts, list):
            text = "\n".join(t for t in (parts_text(a.get("parts")) for a in artifacts if isinstance(a, dict)) if t)
            if text:
                return text
    status = obj.get("status")
    message = status.get("message") if isinstance(status, dict) else None
    return parts_text(message.get("parts")) if isinstance(message, dict) else ""


def list_params(dialect: Dialect, filters: Mapping[str, Any], tenant: Optional[str]) -> Dict[str, Any]:
    """ListTasks' params: the filters with their names in camelCase (``context_id`` -> ``contextId``).

    ``status`` takes a state either way (``"working"`` or ``"TASK_STATE_WORKING"``).

    Raises:
        ValueError: an unknown state.
    """
    params: Dict[str, Any] = {}
    for name, value in filters.items():
        if value is None:
            continue
        key = _camel(name)
        params[key] = dialect.state_name(value) if key == "status" and isinstance(value, str) else value
    return dialect.with_tenant(params, tenant)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


__all__: List[str] = [
    "ARTIFACT_UPDATE",
    "CARD_PATH",
    "DIALECTS",
    "INTERRUPTED_STATES",
    "JSONRPC_BINDING",
    "LEGACY_PROTOCOL_VERSION",
    "MESSAGE",
    "PROTOCOL_VERSION",
    "STATES",
    "STATUS_UPDATE",
    "TASK",
    "TERMINAL_STATES",
    "V03",
    "V1",
    "VERSION_HEADER",
    "Dialect",
    "MessageLike",
    "ends_stream",
    "event_kind",
    "is_done",
    "list_params",
    "normalize_state",
    "parts_text",
    "state_of",
    "task_of",
    "text_of",
]
