"""The protocol engine of McpServer: every MCP method answered from a catalog, in both eras, request by request.

Theory of operation.  The ways a server runs (stdio, WSGI, memory) read
messages and hand each request to ``Engine.request`` as an ``Incoming``: the
method, the params, the session it came in (2025 era; ``None`` over HTTP
before ``initialize`` or without a session), its HTTP headers, and the ways
back to the client.  The engine decides the era of the request, exactly as
the specification's compatibility rules say:

- a request whose ``_meta`` names ``io.modelcontextprotocol/protocolVersion``
  is of the stateless era (2026-07-28): the ``_meta`` is checked (``-32602``
  when it lacks what the era requires, ``-32022`` for a version this server
  does not speak), methods the era removed are unknown (``-32601``), lists
  carry ``ttlMs`` and ``cacheScope``, every result a ``resultType``, and a
  function that asks the client something ends its run with ``input_required``
  (see ``context`` and ``request_state``); the tasks extension's methods
  (``tasks/get``, ``tasks/update``, ``tasks/cancel``) are answered by the
  server's ``TaskTable`` (see ``tasks``), and the extension is declared in
  ``server/discover`` when a tool supports tasks;
- ``initialize`` opens the session era: the version is negotiated, and the
  session keeps what the client said; later requests of that session are of
  its version;
- anything else, outside a session, is a stateless-era request without its
  ``_meta``: ``-32602``.

The skills extension (``skills``) answers ``skills/list``, ``skills/get``,
``resources/directory/read`` and ``resources/read`` of its ``skill://`` URIs
when the server serves skills; the capabilities then declare the extension
(with ``directoryRead``) and ``resources``.

User code (a tool, resource, prompt or completion function) runs on the
calling thread, the thread the way of running gave the request: never under a
lock of the engine.  A tool with a ``timeout`` runs on a thread of its own so
that its request can be answered at the deadline while it finishes (its
``Context.cancelled`` is set then).

What user code raises: in a tool, an ``isError`` result carrying the
exception's message (the traceback is logged, never sent); arguments that
break the schema likewise (so a model can correct itself).  An unknown tool,
prompt or resource, or bad params of a protocol method, is a JSON-RPC error
with the specification's code.  A ``BaseException`` that is not an
``Exception`` (``SystemExit``, ``KeyboardInterrupt``) in user code answers the
request with ``-32603`` naming its type, its traceback logged; it does not
leave the request, so the thread that ran it (a worker, or under
``json_response=True`` the WSGI server's own) answers and goes on.

Thread-safety: ``Engine`` is thread-safe: it holds no state of its own
besides its listeners' table (under a lock); the catalog and sessions guard
their own.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional

from ...errors import InvalidParams, JsonRpcError, MethodNotFound
from ..protocol import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    SESSION_PROTOCOL_VERSIONS,
    STATELESS_PROTOCOL_VERSIONS,
    TASKS_EXTENSION,
)
from .context import LOG_LEVELS, Exchange
from .definitions import Catalog, CompletionDefinition
from .listeners import Listeners
from .request_state import StateSeal
from .runs import RESOURCE_NOT_FOUND_SESSION, Runs, run_user
from .sessions import Session
from .skills import SkillSet
from .tasks import TASK_METHODS, TaskTable

__all__ = ["Engine", "Incoming", "ServerIdentity", "is_stateless_request"]

logger = logging.getLogger("jsonrpc_threads.mcp.server")

#: Methods that may answer ``input_required`` (and so take ``inputResponses`` and ``requestState``).
_INPUT_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
#: Methods the stateless era removed: unknown there (``-32601``).
_REMOVED = frozenset({"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"})
#: Methods whose stateless-era results carry caching hints.
_CACHEABLE = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "skills/list",
        "skills/get",
    }
)
#: The skills extension's methods (answered by the server's ``SkillSet``).
_SKILL_METHODS = frozenset({"skills/list", "skills/get", "resources/directory/read"})


def is_stateless_request(params: Any) -> bool:
    """True when ``params._meta`` names a protocol version: a request of the stateless era."""
    if not isinstance(params, dict):
        return False
    meta = params.get("_meta")
    return isinstance(meta, dict) and META_PROTOCOL_VERSION in meta


class ServerIdentity:
    """What the server says it is: ``serverInfo``, instructions, the caching hints of its lists.

    Raises:
        ValueError: a ``cache_ttl_ms`` that is not an int >= 0, a ``cache_scope`` not "private" or "public".
    """

    def __init__(
        self,
        name: str,
        version: str,
        *,
        title: Optional[str] = None,
        website_url: Optional[str] = None,
        icons: Optional[List[Mapping[str, Any]]] = None,
        instructions: Optional[str] = None,
        cache_ttl_ms: int = 0,
        cache_scope: str = "private",
    ) -> None:
        if isinstance(cache_ttl_ms, bool) or not isinstance(cache_ttl_ms, int) or cache_ttl_ms < 0:
            raise ValueError(f"cache_ttl_ms must be an int >= 0, not {cache_ttl_ms!r}")
        if cache_scope not in ("private", "public"):
            raise ValueError(f"cache_scope is 'private' or 'public', not {cache_scope!r}")
        info: Dict[str, Any] = {"name": name, "version": version}
        if title is not None:
            info["title"] = title
        if website_url is not None:
            info["websiteUrl"] = website_url
        if icons:
            info["icons"] = [dict(icon) for icon in icons]
        self.info = info
        self.instructions = instructions
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope


class Incoming:
    """One request as the way of running hands it to the engine.

    Attributes:
        request_id: its JSON-RPC id.
        method: its method.
        params: its params (``{}`` when it had none).
        session: the session it came in (2025 era), or ``None``.
        http_headers: its HTTP headers, names in lower case (``{}`` over stdio).
        notify: sends a notification tied to this request.
        ask: sends the client a request and waits for its answer (session era; ``None`` where impossible).
        cancelled: set when the client cancels or goes away.
        end_stream: ends the request's SSE stream now (the client resumes it), where there is one.
    """

    def __init__(
        self,
        request_id: Any,
        method: str,
        params: Optional[Dict[str, Any]],
        *,
        session: Optional[Session] = None,
        http_headers: Optional[Mapping[str, str]] = None,
        notify: Optional[Callable[[str, Dict[str, Any]], None]] = None,
        ask: Optional[Callable[[str, Dict[str, Any], Optional[float]], Any]] = None,
        cancelled: Optional[threading.Event] = None,
        end_stream: Optional[Callable[[], None]] = None,
    ) -> None:
        self.request_id = request_id
        self.method = method
        self.end_stream = end_stream
        self.params: Dict[str, Any] = params if isinstance(params, dict) else {}
        self.session = session
        self.http_headers = dict(http_headers or {})
        self.notify = notify
        self.ask = ask
        self.cancelled = cancelled if cancelled is not None else threading.Event()


class Engine:
    """Answers MCP requests from a catalog.  Thread-safe.

    Args:
        identity: what the server says it is.
        catalog: what it offers.
        seal: signs and checks ``requestState``.
        skills: the skills it serves (the skills extension; see ``skills``).
    """

    def __init__(
        self, identity: ServerIdentity, catalog: Catalog, seal: StateSeal, skills: Optional[SkillSet] = None
    ) -> None:
        self.identity = identity
        self.catalog = catalog
        self.skills = skills if skills is not None else SkillSet()
        self.listeners = Listeners()
        self.tasks = TaskTable(notify=self.listeners.task_changed)
        self.runs = Runs(catalog, seal, self.tasks, self._require)

    # -- capabilities ---------------------------------------------------------------------

    def capabilities(self, stateless: bool) -> Dict[str, Any]:
        """What this server declares, in an era."""
        declared: Dict[str, Any] = {}
        if self.catalog.has("tools"):
            declared["tools"] = {"listChanged": True}
        if self._has_resources():
            declared["resources"] = {"listChanged": True} if stateless else {"subscribe": True, "listChanged": True}
        if self.catalog.has("prompts"):
            declared["prompts"] = {"listChanged": True}
        if self.catalog.has("completions"):
            declared["completions"] = {}
        if not stateless:
            declared["logging"] = {}
        extensions: Dict[str, Any] = {}
        if stateless and any(tool.task_support is not None for tool in self.catalog.tools()):
            extensions[TASKS_EXTENSION] = {}
        if self.skills:
            extensions.update(self.skills.declaration())
        if extensions:
            declared["extensions"] = extensions
        return declared

    # -- requests --------------------------------------------------------------------------

    def request(self, incoming: Incoming) -> Dict[str, Any]:
        """Answer one request.

        Returns:
            The result (a dict).

        Raises:
            JsonRpcError: the error to answer with (``MethodNotFound``,
                ``InvalidParams``, the stateless era's -32020..-32022, ...).
        """
        method, params = incoming.method, incoming.params
        if is_stateless_request(params):
            return self._stateless(incoming)
        if method == "initialize":
            return self._initialize(incoming)
        session = incoming.session
        if session is None or session.protocol_version is None:
            if method == "ping":
                return {}
            raise InvalidParams(
                "this request has no _meta naming its protocol version, and it is not part of an initialized session",
                {"reason": "missing _meta"},
            )
        return self._in_session(incoming, session)

    def _initialize(self, incoming: Incoming) -> Dict[str, Any]:
        params = incoming.params
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise InvalidParams("initialize needs a protocolVersion (a string)")
        capabilities = params.get("capabilities")
        if capabilities is not None and not isinstance(capabilities, dict):
            raise InvalidParams("initialize: capabilities must be an object")
        info = params.get("clientInfo")
        version = requested if requested in SESSION_PROTOCOL_VERSIONS else SESSION_PROTOCOL_VERSIONS[0]
        session = incoming.session
        if session is not None:
            session.begin(version, dict(info) if isinstance(info, dict) else {}, dict(capabilities or {}))
        result: Dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": self.capabilities(False),
            "serverInfo": dict(self.identity.info),
        }
        if self.identity.instructions is not None:
            result["instructions"] = self.identity.instructions
        return result

    def _in_session(self, incoming: Incoming, session: Session) -> Dict[str, Any]:
        method, params = incoming.method, incoming.params
        if method == "ping":
            return {}
        if method == "logging/setLevel":
            level = params.get("level")
            if level not in LOG_LEVELS:
                raise InvalidParams(f"not a log level: {level!r}", {"levels": list(LOG_LEVELS)})
            session.set_log_level(str(level))
            return {}
        if method in ("resources/subscribe", "resources/unsubscribe"):
            self._require("resources")
            uri = params.get("uri")
            if not isinstance(uri, str):
                raise InvalidParams(f"{method} needs a uri (a string)")
            if method == "resources/subscribe":
                session.subscribe(uri)
            else:
                session.unsubscribe(uri)
            return {}
        exchange = Exchange(
            request_id=incoming.request_id,
            method=method,
            stateless=False,
            protocol_version=session.protocol_version or SESSION_PROTOCOL_VERSIONS[0],
            client_info=session.client_info,
            client_capabilities=session.client_capabilities,
            session_id=session.id,
            http_headers=incoming.http_headers,
            progress_token=_progress_token(params),
            log_level=session.log_level,
            notify=incoming.notify,
            ask=incoming.ask,
            cancelled=incoming.cancelled,
            end_stream=incoming.end_stream,
        )
        return self._common(method, params, exchange)

    def _stateless(self, incoming: Incoming) -> Dict[str, Any]:
        method, params = incoming.method, incoming.params
        meta = params["_meta"]
        version = meta.get(META_PROTOCOL_VERSION)
        capabilities = meta.get(META_CLIENT_CAPABILITIES)
        if not isinstance(version, str):
            raise InvalidParams("_meta: io.modelcontextprotocol/protocolVersion must be a string")
        if not isinstance(capabilities, dict):
            raise InvalidParams(
                "_meta: io.modelcontextprotocol/clientCapabilities (an object) is required",
                {"reason": "missing clientCapabilities"},
            )
        if version not in STATELESS_PROTOCOL_VERSIONS:
            raise JsonRpcError(
                -32022,
                f"unsupported protocol version {version!r}",
                {"supported": list(STATELESS_PROTOCOL_VERSIONS), "requested": version},
            )
        if method in _REMOVED:
            raise MethodNotFound(f"{method} is not a method of protocol version {version}")
        level = meta.get(META_LOG_LEVEL)
        info = meta.get(META_CLIENT_INFO)
        exchange = Exchange(
            request_id=incoming.request_id,
            method=method,
            stateless=True,
            protocol_version=version,
            client_info=info if isinstance(info, dict) else {},
            client_capabilities=capabilities,
            http_headers=incoming.http_headers,
            progress_token=_progress_token(params),
            log_level=level if level in LOG_LEVELS else None,
            notify=incoming.notify,
            cancelled=incoming.cancelled,
        )
        if method == "server/discover":
            result: Dict[str, Any] = {
                "supportedVersions": list(STATELESS_PROTOCOL_VERSIONS),
                "capabilities": self.capabilities(True),
                "_meta": {META_SERVER_INFO: dict(self.identity.info)},
            }
            if self.identity.instructions is not None:
                result["instructions"] = self.identity.instructions
        elif method == "subscriptions/listen":
            result = self.listeners.listen(params, exchange)
        elif method in TASK_METHODS:
            result = self.tasks.answer(method, params, exchange)
        else:
            result = self._common(method, params, exchange)
        result.setdefault("resultType", "complete")
        if method in _CACHEABLE and result.get("resultType") == "complete":
            result.setdefault("ttlMs", self.identity.cache_ttl_ms)
            result.setdefault("cacheScope", self.identity.cache_scope)
        return result

    # -- what both eras share --------------------------------------------------------------

    def _common(self, method: str, params: Dict[str, Any], exchange: Exchange) -> Dict[str, Any]:
        if method == "tools/list":
            self._require("tools")
            _check_cursor(params)
            return {"tools": [tool.description for tool in self.catalog.tools()]}
        if method == "resources/list":
            self._require("resources")
            _check_cursor(params)
            listed = [resource.description for resource in self.catalog.resources()]
            return {"resources": listed + self.skills.resources()}
        if method == "resources/templates/list":
            self._require("resources")
            _check_cursor(params)
            return {"resourceTemplates": [template.description for template in self.catalog.templates()]}
        if method == "prompts/list":
            self._require("prompts")
            _check_cursor(params)
            return {"prompts": [prompt.description for prompt in self.catalog.prompts()]}
        if method == "completion/complete":
            self._require("completions")
            return self._complete(params)
        if method in _SKILL_METHODS and self.skills:
            return self._skills(method, params)
        if method == "resources/read" and isinstance(params.get("uri"), str) and self.skills.serves(params["uri"]):
            return self.skills.read(params["uri"], -32602 if exchange.stateless else RESOURCE_NOT_FOUND_SESSION)
        if method in _INPUT_METHODS:
            return self.runs.run(method, params, exchange)
        raise MethodNotFound(f"method not found: {method}")

    def _skills(self, method: str, params: Dict[str, Any]) -> Dict[str, Any]:
        if method == "skills/list":
            return self.skills.list_skills(params)
        if method == "skills/get":
            return self.skills.get_skill(params)
        return self.skills.read_directory(params)

    def _has_resources(self) -> bool:
        return self.catalog.has("resources") or bool(self.skills)

    def _require(self, kind: str) -> None:
        if not (self._has_resources() if kind == "resources" else self.catalog.has(kind)):
            raise MethodNotFound(f"this server offers no {kind}")

    def _complete(self, params: Dict[str, Any]) -> Dict[str, Any]:
        ref = CompletionDefinition.ref_of(params.get("ref"))
        argument = params.get("argument")
        if not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
            raise InvalidParams("completion/complete needs argument: {name, value}")
        context = params.get("context")
        others = context.get("arguments") if isinstance(context, dict) else None
        completion = self.catalog.completion(ref)
        if completion is None:
            if ref[0] == "ref/prompt" and self.catalog.prompt(ref[1]) is None:
                raise InvalidParams(f"no prompt named {ref[1]!r}")
            return {"completion": {"values": []}}
        value = argument.get("value")
        completed = run_user(
            lambda: completion.complete(argument["name"], value if isinstance(value, str) else "", dict(others or {}))
        )
        return {"completion": completed}

    def broadcast(self, method: str, params: Dict[str, Any], sessions: List[Session]) -> None:
        """Announce a change to the sessions and the listeners that want it (see ``listeners``)."""
        self.listeners.broadcast(method, params, sessions)

    def notification(self, method: str, params: Any, session: Optional[Session]) -> None:
        """Take a notification from the client (``initialized``, ``cancelled``; the rest are logged)."""
        params = params if isinstance(params, dict) else {}
        if method == "notifications/initialized":
            if session is not None:
                session.initialized = True
        elif method == "notifications/cancelled":
            request_id = params.get("requestId")
            if session is not None and not session.cancel(request_id):
                logger.debug("cancelled request %r is not running", request_id)
        else:
            logger.debug("notification %s taken, nothing to do", method)


def _progress_token(params: Dict[str, Any]) -> Any:
    meta = params.get("_meta")
    return meta.get("progressToken") if isinstance(meta, dict) else None


def _check_cursor(params: Dict[str, Any]) -> None:
    cursor = params.get("cursor")
    if cursor is not None:
        raise InvalidParams(f"invalid cursor {cursor!r}: this server lists everything in one page")
