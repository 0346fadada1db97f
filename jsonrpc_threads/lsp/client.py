"""LspClient: a synchronous Language Server Protocol client that works from any thread.

Theory of operation.  An :class:`LspClient` drives one language server over a
:class:`~jsonrpc_threads.client.JsonRpcClient` (cancellation style ``"lsp"``:
a request that times out or whose future is cancelled sends
``$/cancelRequest``), usually a child process framed with ``Content-Length``
headers (:class:`~jsonrpc_threads.transports.stdio.StdioTransport` with
``framing="content-length"``).  The pieces, one module each:

- :mod:`.capabilities`: what ``initialize`` declares (only what this client
  does) and what it reads from the answer (position encoding, document sync);
- :mod:`.documents`: the open documents, their versions and the order their
  notifications go out in;
- :mod:`.diagnostics`: ``publishDiagnostics`` kept per document, and waits for
  those of a given version;
- :mod:`.progress`: ``$/progress`` routed by token to a call's ``on_progress``,
  partial results joined into the call's result;
- :mod:`.server_requests`: the answers to the server's own requests, and its
  log messages;
- :mod:`.positions` and :mod:`.uris`: pure conversions.

Lifecycle.  The handshake (``initialize``, then ``initialized``, then the
settings in ``workspace/didChangeConfiguration``) runs once: in ``__enter__``,
or on the first use, whichever comes first; one thread runs it, others wait
for it (bounded by their own timeout).  :meth:`LspClient.close` sends
``shutdown`` (at most :data:`SHUTDOWN_TIMEOUT_S`), then ``exit`` (at most
:data:`EXIT_SEND_TIMEOUT_S`), then closes the transport, whose reclaim of the
process tree is bounded too: a server that answered ``shutdown`` but is slow
to exit is terminated after :data:`EXIT_GRACE_S`, and a server that ignores
all of it is still gone within :data:`CLOSE_BOUND_S`.

Every method may be called from any thread, concurrently: requests are
pipelined on the one connection, never serialized behind a lock.  Results are
the wire JSON as plain dicts and lists, as the server sent them.
"""

from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import PurePath
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .._closing import Closing
from .._deadlines import DEFAULT_TIMEOUT, UseDefault, check_timeout, deadline_after, time_left
from .._logs import get_logger
from .._version import __version__
from ..client import DEFAULT_HANDLER_WORKERS, JsonRpcClient, Timeout
from ..errors import JsonRpcError, RequestTimeout, TransportClosed
from ..transports.base import Transport
from ..transports.stdio import CLOSE_WAIT_S, StdioTransport
from .capabilities import SYNC_NONE, SyncOptions, client_capabilities, negotiated_encoding, sync_options
from .diagnostics import PUBLISH_METHOD, DiagnosticsBoard
from .documents import DocumentStore, language_id_for
from .positions import DEFAULT_ENCODING, UTF16, offset_from_position, position_from_offset
from .progress import PROGRESS_METHOD, ProgressCallback, ProgressRouter, join_results
from .server_requests import Handler, ServerRequests
from .uris import PathOrUri, as_uri, uri_to_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..messages import Params

logger = get_logger(__name__)

#: How long :meth:`LspClient.close` waits for the answer to ``shutdown``.
SHUTDOWN_TIMEOUT_S = 2.0
#: How long :meth:`LspClient.close` may take to send ``exit``.
EXIT_SEND_TIMEOUT_S = 1.0
#: How long a server that answered ``shutdown`` and was sent ``exit`` gets to exit
#: (its stdin closed too) before its process tree is terminated: after ``shutdown``
#: there is nothing left for it to do, and some servers (jedi-language-server)
#: take seconds to exit by themselves.
EXIT_GRACE_S = 0.5
#: How long sending ``initialized`` and the settings may take after ``initialize`` was answered.
INITIALIZED_SEND_TIMEOUT_S = 5.0
#: The longest :meth:`LspClient.close` takes: ``shutdown``, ``exit``, then the
#: transport's reclaim of a child that ignores everything (stdin closed,
#: terminate, kill, each with its grace).
CLOSE_BOUND_S = SHUTDOWN_TIMEOUT_S + EXIT_SEND_TIMEOUT_S + CLOSE_WAIT_S

_client_numbers = itertools.count(1)

Command = Union[str, Sequence[Union[str, "os.PathLike[str]"]]]


class _Connection(JsonRpcClient):
    """A JsonRpcClient that also tells the LSP layer when its transport ended (never runs user code)."""

    def __init__(self, transport: Transport, on_closed: Callable[[TransportClosed], None], **options: Any) -> None:
        self._on_closed = on_closed
        super().__init__(transport, **options)

    def transport_closed(self, error: TransportClosed) -> None:
        super().transport_closed(error)
        self._on_closed(error)


class LspClient(Closing):
    """A synchronous client of one language server.  Thread-safe; a context manager.

    ``with LspClient(...) as lsp:`` runs the handshake and, at the end, shuts
    the server down and reclaims its process (bounded by :data:`CLOSE_BOUND_S`).
    Positions (``line``, ``character``) count from 0, characters in the
    negotiated :attr:`position_encoding` (UTF-16 unless the caller offered
    more and the server chose another); :meth:`position_at` converts a Python
    string offset.  Results are the wire JSON as plain dicts and lists.

    Every method may be called from any thread.  The caller's handlers
    (``on_apply_edit``, ``on_show_message_request``) run on the client's
    handler workers; ``on_progress``, ``on_log`` and ``on_diagnostics`` on its
    notification thread, one at a time, in arrival order; none ever on the
    reader thread or under a lock.  Each may call back into the client.

    Args:
        command_or_transport: the server's command line (a ``str``, split with
            :func:`shlex.split`, or an argv list), run as a child process framed
            with ``Content-Length``; or a transport that is (the client owns it).
        root_uri: the workspace root, as a ``file:`` URI or a local path (sent
            as ``rootUri`` and as the one workspace folder), or ``None``.
        initialization_options: sent as ``initializationOptions``.
        settings: the configuration: served to ``workspace/configuration`` (a
            section is looked up by its dotted name) and sent once in
            ``workspace/didChangeConfiguration`` after the handshake.
        default_timeout: seconds a request may take unless the call says
            otherwise; ``None`` waits forever.
        position_encodings: the position encodings offered, most wanted first
            (``"utf-16"``, ``"utf-8"``, ``"utf-32"``); the server picks one.
        on_apply_edit: ``handler(params) -> {"applied": bool, ...}`` for
            ``workspace/applyEdit``; without it edits are refused and the
            capability is not declared.
        on_show_message_request: ``handler(params) -> action | None`` for
            ``window/showMessageRequest``; by default the first action.
        on_log: ``callback(params)`` for ``window/logMessage`` and
            ``window/showMessage``; by default they go to the
            ``jsonrpc_threads.lsp.server_log`` logger.
        on_progress: ``callback(params)`` for ``$/progress`` under the tokens
            the server creates itself (``window/workDoneProgress/create``).
        on_diagnostics: ``callback(params)`` for every ``publishDiagnostics``.
        capabilities: client capabilities merged into those declared, for
            what you handle yourself (``on_request``).
        client_info: ``{"name", "version"}`` sent as ``clientInfo``.
        env, cwd, inherit_env: for a command, as
            :class:`~jsonrpc_threads.transports.stdio.StdioTransport` takes them.
        handler_workers: threads for the server's requests running at once.

    Raises:
        TransportClosed: the command cannot be started.
        ValueError: a transport framed otherwise than with ``Content-Length``, an
            unknown position encoding, ``env``/``cwd``/``inherit_env`` with a transport.
        TypeError: a bad ``default_timeout``.
    """

    def __init__(
        self,
        command_or_transport: Union[Command, Transport],
        *,
        root_uri: Optional[PathOrUri],
        initialization_options: Any = None,
        settings: Optional[Mapping[str, Any]] = None,
        default_timeout: Optional[float] = 30.0,
        position_encodings: Sequence[str] = (UTF16,),
        on_apply_edit: Optional[Handler] = None,
        on_show_message_request: Optional[Handler] = None,
        on_log: Optional[Callable[[Dict[str, Any]], None]] = None,
        on_progress: Optional[ProgressCallback] = None,
        on_diagnostics: Optional[Callable[[Dict[str, Any]], None]] = None,
        capabilities: Optional[Mapping[str, Any]] = None,
        client_info: Optional[Mapping[str, Any]] = None,
        env: Optional[Mapping[str, Optional[str]]] = None,
        cwd: Optional[Union[str, os.PathLike[str]]] = None,
        inherit_env: bool = False,
        handler_workers: int = DEFAULT_HANDLER_WORKERS,
    ) -> None:
        check_timeout(default_timeout, "default_timeout")
        self._offered = tuple(position_encodings)
        self._capabilities = client_capabilities(
            position_encodings=self._offered, apply_edit=on_apply_edit is not None, extra=capabilities
        )
        self._root_uri = as_uri(root_uri) if root_uri is not None else None
        folders = [{"uri": self._root_uri, "name": _folder_name(self._root_uri)}] if self._root_uri else None
        self._initialization_options = initialization_options
        self._has_settings = settings is not None
        self._client_info: Dict[str, Any] = dict(client_info or {"name": "jsonrpc_threads", "version": __version__})
        self._server = ServerRequests(
            settings=settings,
            workspace_folders=folders,
            on_apply_edit=on_apply_edit,
            on_show_message_request=on_show_message_request,
            on_log=on_log,
        )
        self._documents = DocumentStore()
        self._board = DiagnosticsBoard(on_diagnostics)
        self._progress = ProgressRouter(f"jsonrpc-threads-{os.getpid()}-{next(_client_numbers)}", on_progress)
        # _lock guards _handshake and _close_started; _closed is set once close() finished.
        self._lock = threading.Lock()
        self._handshake: Optional[Future[Dict[str, Any]]] = None
        self._close_started = False
        self._closed = threading.Event()
        self._encoding = DEFAULT_ENCODING
        self._sync = SyncOptions(True, SYNC_NONE)
        transport = self._transport_for(command_or_transport, env, cwd, inherit_env)
        try:
            self._rpc = _Connection(
                transport,
                self._board.close,
                default_timeout=default_timeout,
                cancellation="lsp",
                handler_workers=handler_workers,
            )
        except BaseException:
            if transport is not command_or_transport:
                transport.close()
            raise
        self._server.register(self._rpc, self._progress.create)
        self._rpc.on_notification(PROGRESS_METHOD, self._progress.route)
        self._rpc.on_notification(PUBLISH_METHOD, self._board.publish)

    @staticmethod
    def _transport_for(
        target: Union[Command, Transport],
        env: Optional[Mapping[str, Optional[str]]],
        cwd: Optional[Union[str, os.PathLike[str]]],
        inherit_env: bool,
    ) -> Transport:
        if isinstance(target, (str, list, tuple)):
            return StdioTransport(target, env=env, cwd=cwd, inherit_env=inherit_env, framing="content-length")
        if env is not None or cwd is not None or inherit_env:
            raise ValueError("env, cwd and inherit_env go with a command, not with a transport")
        if isinstance(target, StdioTransport) and target.framing != "content-length":
            raise ValueError(
                "a language server frames messages with Content-Length: "
                'use StdioTransport(..., framing="content-length")'
            )
        if not isinstance(target, Transport):
            raise TypeError(f"expected a command or a transport, not {type(target).__name__}")
        return target

    # -- lifecycle --------------------------------------------------------------------------

    def initialize(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Dict[str, Any]:
        """Run the handshake once: ``initialize``, ``initialized``, then the settings.

        Later calls (and calls from other threads meanwhile) return the first
        answer, or raise the first failure: the protocol allows one
        ``initialize`` per connection, so a failed handshake is not retried
        (close the client and start a new one).

        Args:
            timeout: seconds to wait for the server's answer (or, on another
                thread, for the handshake in progress).

        Returns:
            The server's ``initialize`` result (``capabilities``, ``serverInfo``).

        Raises:
            RequestTimeout: no answer within ``timeout``.
            TransportClosed: the server is gone (or the client closed).
            JsonRpcError: the server refused ``initialize``.
        """
        resolved = self._resolve(timeout)
        with self._lock:
            handshake = self._handshake
            mine = handshake is None
            if handshake is None:
                if self._close_started:
                    raise TransportClosed("LspClient closed")
                handshake = self._handshake = Future()
        if mine:
            try:
                result = self._run_handshake(resolved)
            except BaseException as exc:
                handshake.set_exception(exc)
                raise
            handshake.set_result(result)
            return result
        try:
            return handshake.result(timeout=resolved)
        except FutureTimeout:
            raise RequestTimeout("initialize", None, resolved, "another thread's handshake is still running") from None

    def _run_handshake(self, timeout: Optional[float]) -> Dict[str, Any]:
        params: Dict[str, Any] = {
            "processId": os.getpid(),
            "clientInfo": self._client_info,
            "rootUri": self._root_uri,
            "capabilities": self._capabilities,
            "workspaceFolders": self._server.workspace_folders(None),
        }
        if self._root_uri is not None:
            try:
                params["rootPath"] = str(uri_to_path(self._root_uri))
            except ValueError:
                pass
        if self._initialization_options is not None:
            params["initializationOptions"] = self._initialization_options
        answer = self._rpc.call("initialize", params, timeout=timeout)
        result: Dict[str, Any] = answer if isinstance(answer, dict) else {}
        capabilities = result.get("capabilities")
        server_capabilities: Dict[str, Any] = capabilities if isinstance(capabilities, dict) else {}
        self._encoding = negotiated_encoding(server_capabilities, self._offered)
        self._sync = sync_options(server_capabilities)
        self._rpc.notify("initialized", {}, timeout=INITIALIZED_SEND_TIMEOUT_S)
        if self._has_settings:
            self._rpc.notify(
                "workspace/didChangeConfiguration",
                {"settings": self._server.settings},
                timeout=INITIALIZED_SEND_TIMEOUT_S,
            )
        return result

    def _on_enter(self) -> None:
        """Entering ``with``: run the handshake (the client is closed if it fails); leaving closes it."""
        self.initialize()

    def close(self) -> None:
        """Shut the server down and reclaim its process; bounded by :data:`CLOSE_BOUND_S`.

        Sends ``shutdown`` and waits up to :data:`SHUTDOWN_TIMEOUT_S` for its
        answer, then ``exit``, then closes the transport (stdin closed, the
        process tree terminated, then killed, each step bounded; a child that
        answered ``shutdown`` gets :data:`EXIT_GRACE_S` to exit before it is
        terminated, others the transport's stdin grace), failing
        whatever is still pending with ``TransportClosed``.  A server that was
        never initialized, or is gone already, is only reclaimed.  Idempotent
        and thread-safe: a second caller waits (bounded) for the first.
        """
        with self._lock:
            first = not self._close_started
            self._close_started = True
            handshake = self._handshake
        if not first:
            self._closed.wait(CLOSE_BOUND_S)
            return
        try:
            if _succeeded(handshake) and not self._rpc.closed and self._say_goodbye():
                self._reclaim_after_exit()
        finally:
            try:
                self._rpc.close()
            finally:
                self._board.close(TransportClosed("LspClient closed"))
                self._closed.set()

    def _say_goodbye(self) -> bool:
        """``shutdown``, then ``exit``; True when the server answered the one and was sent the other."""
        answered = False
        try:
            self._rpc.call("shutdown", None, timeout=SHUTDOWN_TIMEOUT_S)
            answered = True
        except JsonRpcError as exc:
            logger.debug("shutdown was not answered: %s", exc)
        try:
            self._rpc.notify("exit", None, timeout=EXIT_SEND_TIMEOUT_S)
        except JsonRpcError as exc:
            logger.debug("exit could not be sent: %s", exc)
            return False
        return answered

    def _reclaim_after_exit(self) -> None:
        """A child told ``exit`` gets :data:`EXIT_GRACE_S` to go, not a stdin close's full grace."""
        transport = self._rpc.transport
        if isinstance(transport, StdioTransport):
            transport.close(stdin_grace=EXIT_GRACE_S)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` started or the server went away."""
        return self._close_started or self._rpc.closed

    # -- what the handshake said ------------------------------------------------------------

    @property
    def rpc(self) -> JsonRpcClient:
        """The underlying JSON-RPC client (``on_request``, ``on_notification``, ``batch``...)."""
        return self._rpc

    @property
    def transport(self) -> Transport:
        """The transport the client owns (its ``pid`` and ``stderr_tail()`` for a child)."""
        return self._rpc.transport

    @property
    def root_uri(self) -> Optional[str]:
        """The workspace root as sent in ``initialize``."""
        return self._root_uri

    @property
    def initialize_result(self) -> Dict[str, Any]:
        """The server's ``initialize`` result (``{}`` before the handshake finished)."""
        handshake = self._handshake
        return handshake.result() if _succeeded(handshake) else {}  # type: ignore[union-attr]

    @property
    def server_capabilities(self) -> Dict[str, Any]:
        """``capabilities`` from the handshake (``{}`` before it)."""
        value = self.initialize_result.get("capabilities")
        return value if isinstance(value, dict) else {}

    @property
    def server_info(self) -> Dict[str, Any]:
        """``serverInfo`` from the handshake (``{}`` before it, or when the server sent none)."""
        value = self.initialize_result.get("serverInfo")
        return value if isinstance(value, dict) else {}

    @property
    def position_encoding(self) -> str:
        """The negotiated position encoding (``"utf-16"`` before the handshake and by default)."""
        return self._encoding

    @property
    def client_capabilities(self) -> Dict[str, Any]:
        """The capabilities this client declares in ``initialize`` (a copy)."""
        import copy  # noqa: PLC0415 - rarely used

        return copy.deepcopy(self._capabilities)

    @property
    def registrations(self) -> Dict[str, Dict[str, Any]]:
        """What the server registered with ``client/registerCapability`` (by id), for inspection."""
        return self._server.registrations

    @property
    def settings(self) -> Dict[str, Any]:
        """A copy of the settings served to the server."""
        return self._server.settings

    def set_settings(self, settings: Mapping[str, Any], *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Replace the settings and tell the server (``workspace/didChangeConfiguration``).

        Raises:
            TransportClosed: the server is gone.
            RequestTimeout: as any call, for the handshake if it has not run.
        """
        self._server.set_settings(settings)
        self._ready(timeout)
        self._rpc.notify("workspace/didChangeConfiguration", {"settings": self._server.settings}, timeout=timeout)

    # -- plain JSON-RPC -----------------------------------------------------------------------

    def request(self, method: str, params: Params = None, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Future[Any]:
        """Send a request after the handshake and return a future for its result.

        As :meth:`JsonRpcClient.request <jsonrpc_threads.client.JsonRpcClient.request>`
        (``future.cancel()`` sends ``$/cancelRequest``); the handshake runs
        first if it has not (bounded by ``timeout``).
        """
        self._ready(timeout)
        return self._rpc.request(method, params, timeout=timeout)

    def call(self, method: str, params: Params = None, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Any:
        """Send a request after the handshake and block until its result, or its timeout.

        As :meth:`JsonRpcClient.call <jsonrpc_threads.client.JsonRpcClient.call>`.

        Raises:
            RequestTimeout: no answer within ``timeout`` (``$/cancelRequest`` was sent).
            RequestCancelled: the server cancelled the request itself (-32800).
            TransportClosed: the server is gone.
            JsonRpcError: any other error answer.
        """
        self._ready(timeout)
        return self._rpc.call(method, params, timeout=timeout)

    def notify(self, method: str, params: Params = None, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Send a notification after the handshake.

        As :meth:`JsonRpcClient.notify <jsonrpc_threads.client.JsonRpcClient.notify>`.
        For documents, use :meth:`open`, :meth:`change` and :meth:`close_document`,
        which keep their versions.
        """
        self._ready(timeout)
        self._rpc.notify(method, params, timeout=timeout)

    # -- documents ----------------------------------------------------------------------------

    def open(
        self,
        path_or_uri: PathOrUri,
        text: Optional[str] = None,
        language_id: Optional[str] = None,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> str:
        """Open a document on the server (``textDocument/didOpen``).

        Its version is 1, or for a document this client closed before, one more
        than the last version it sent for that URI: a version never repeats, so
        a late publication about the old text never passes for the new one.

        Args:
            path_or_uri: a local path or a URI.
            text: the content; by default the file's, read as UTF-8.
            language_id: by default from the suffix (``.py``: ``python``; see
                :data:`~jsonrpc_threads.lsp.documents.LANGUAGE_IDS`).
            timeout: for the handshake if it has not run, and the send.

        Returns:
            The document's URI (what the other methods take).

        Raises:
            ValueError: the document is open already, or ``text`` is missing
                for a URI that is not a ``file:`` URI.
            OSError: the file cannot be read.
            TransportClosed, RequestTimeout: as any call.
        """
        uri = as_uri(path_or_uri)
        if text is None:
            text = uri_to_path(uri).read_text(encoding="utf-8")
        language = language_id or language_id_for(uri)
        resolved = self._resolve(timeout)
        self._ready(resolved)
        document, ticket = self._documents.open(uri, text, language)
        version = document.version
        params = {"textDocument": {"uri": uri, "languageId": language, "version": version, "text": text}}
        try:
            self._send_document(ticket, resolved, "textDocument/didOpen", params, self._sync.open_close, version)
        except BaseException:
            self._documents.discard(uri)
            raise
        return uri

    def change(self, uri: PathOrUri, text: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> int:
        """Replace an open document's text (``textDocument/didChange``, the whole text).

        Thread-safe: concurrent changes get consecutive versions and reach the
        server in version order.

        Returns:
            The document's new version.

        Raises:
            ValueError: the document is not open.
            TransportClosed, RequestTimeout: as any call.
        """
        resolved = self._resolve(timeout)
        self._ready(resolved)
        document, ticket = self._documents.change(as_uri(uri), text)
        params = {
            "textDocument": {"uri": document.uri, "version": document.version},
            "contentChanges": [{"text": text}],
        }
        send = self._sync.change != SYNC_NONE
        self._send_document(ticket, resolved, "textDocument/didChange", params, send, document.version)
        return document.version

    def close_document(self, uri: PathOrUri, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Close an open document (``textDocument/didClose``); the server reads it from disk again.

        Raises:
            ValueError: the document is not open.
            TransportClosed, RequestTimeout: as any call.
        """
        resolved = self._resolve(timeout)
        self._ready(resolved)
        document, ticket = self._documents.close(as_uri(uri))
        params = {"textDocument": {"uri": document.uri}}
        self._send_document(ticket, resolved, "textDocument/didClose", params, self._sync.open_close, None)

    def document_text(self, uri: PathOrUri) -> Optional[str]:
        """The text of an open document as the server was told it, or ``None`` when it is not open."""
        document = self._documents.get(as_uri(uri))
        return document.text if document is not None else None

    def document_version(self, uri: PathOrUri) -> Optional[int]:
        """The version of an open document, or ``None`` when it is not open."""
        document = self._documents.get(as_uri(uri))
        return document.version if document is not None else None

    def _send_document(
        self,
        ticket: int,
        timeout: Optional[float],
        method: str,
        params: Dict[str, Any],
        send: bool,
        version: Optional[int],
    ) -> None:
        """Send a document notification in its turn (see :mod:`._ordering`)."""
        order = self._documents.order
        deadline = deadline_after(timeout)
        if not order.wait_turn(ticket, deadline):
            raise RequestTimeout(method, None, timeout, "earlier document notifications were still being sent")
        try:
            uri = params["textDocument"]["uri"]
            if version is None:
                self._board.forget(uri)
            else:
                self._board.expect(uri, version)
            if send:
                self._rpc.notify(method, params, timeout=time_left(deadline))
            else:
                logger.debug("%s not sent: the server's textDocumentSync asks for none", method)
        finally:
            order.done(ticket)

    def diagnostics(self, uri: PathOrUri, *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[Dict[str, Any]]:
        """The server's diagnostics for the document's current version, once it published them.

        For a document opened here: waits for the ``publishDiagnostics`` of
        the version last sent (returns at once when it already arrived).  For
        any other document: the latest published, or the next.

        Args:
            uri: the document (a URI or a local path).
            timeout: seconds to wait; by default the client's ``default_timeout``.

        Returns:
            The diagnostics, as the server sent them (possibly empty).

        Raises:
            RequestTimeout: nothing was published in time (its ``hint`` says for which version).
            TransportClosed: the server went away first.
        """
        resolved = self._resolve(timeout)
        deadline = deadline_after(resolved)
        self._ready(resolved)
        return self._board.wait(as_uri(uri), resolved, deadline)

    # -- positions ------------------------------------------------------------------------------

    def position_at(self, uri: PathOrUri, offset: int) -> Tuple[int, int]:
        """The position, in the negotiated encoding, of a Python string offset into a document.

        The text is the open document's (as the server was told it), else the
        file's on disk.  Example: ``lsp.position_at(uri, text.index("greet"))``.

        Returns:
            ``(line, character)``, what :meth:`definition` and the others take.

        Raises:
            ValueError: an offset outside the text.
            OSError: the document is not open and its file cannot be read.
        """
        return position_from_offset(self._text_of(as_uri(uri)), offset, self._encoding)

    def offset_at(self, uri: PathOrUri, line: int, character: int) -> int:
        """The Python string offset of a position (in the negotiated encoding) in a document.

        Raises:
            ValueError: a negative line or character.
            OSError: the document is not open and its file cannot be read.
        """
        return offset_from_position(self._text_of(as_uri(uri)), line, character, self._encoding)

    def _text_of(self, uri: str) -> str:
        document = self._documents.get(uri)
        if document is not None:
            return document.text
        return uri_to_path(uri).read_text(encoding="utf-8")

    # -- requests ---------------------------------------------------------------------------------

    def definition(
        self,
        uri: PathOrUri,
        line: int,
        character: int,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
    ) -> Any:
        """``textDocument/definition``: where the symbol at the position is defined.

        Returns:
            A ``Location``, a list of ``Location`` or ``LocationLink``, or ``None``.

        Raises: as :meth:`call`; ``ValueError``/``TypeError`` for a bad position.
        """
        return self._at(uri, line, character, "textDocument/definition", {}, timeout, on_progress, partial=True)

    def references(
        self,
        uri: PathOrUri,
        line: int,
        character: int,
        *,
        include_declaration: bool = True,
        timeout: Timeout = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
    ) -> Any:
        """``textDocument/references``: every use of the symbol at the position.

        Returns:
            A list of ``Location`` (partial results the server streamed
            included), or ``None``.

        Raises: as :meth:`call`.
        """
        context = {"context": {"includeDeclaration": include_declaration}}
        return self._at(uri, line, character, "textDocument/references", context, timeout, on_progress, partial=True)

    def hover(
        self,
        uri: PathOrUri,
        line: int,
        character: int,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
    ) -> Any:
        """``textDocument/hover``: what the symbol at the position is.

        Returns:
            A ``Hover`` (``contents``, maybe ``range``), or ``None``.

        Raises: as :meth:`call`.
        """
        return self._at(uri, line, character, "textDocument/hover", {}, timeout, on_progress, partial=False)

    def completion(
        self,
        uri: PathOrUri,
        line: int,
        character: int,
        *,
        trigger_character: Optional[str] = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
    ) -> Any:
        """``textDocument/completion`` at the position (invoked, or after ``trigger_character``).

        Returns:
            A ``CompletionList`` (``items``, ``isIncomplete``), a list of
            ``CompletionItem``, or ``None``.

        Raises: as :meth:`call`.
        """
        if trigger_character is None:
            context: Dict[str, Any] = {"triggerKind": 1}
        else:
            context = {"triggerKind": 2, "triggerCharacter": trigger_character}
        extra = {"context": context}
        return self._at(uri, line, character, "textDocument/completion", extra, timeout, on_progress, partial=False)

    def document_symbols(
        self,
        uri: PathOrUri,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
    ) -> Any:
        """``textDocument/documentSymbol``: the symbols of a document.

        Returns:
            A list of ``DocumentSymbol`` (a tree: ``children``) or of
            ``SymbolInformation``, or ``None``.

        Raises: as :meth:`call`.
        """
        params = {"textDocument": {"uri": as_uri(uri)}}
        return self._request("textDocument/documentSymbol", params, timeout, on_progress, partial=True)

    def workspace_symbols(
        self,
        query: str,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
    ) -> Any:
        """``workspace/symbol``: the workspace's symbols matching ``query`` (``""``: all).

        Returns:
            A list of ``SymbolInformation`` or ``WorkspaceSymbol``, or ``None``.

        Raises: as :meth:`call` (``RemoteMethodNotFound`` from a server without it).
        """
        return self._request("workspace/symbol", {"query": query}, timeout, on_progress, partial=True)

    def rename(
        self,
        uri: PathOrUri,
        line: int,
        character: int,
        new_name: str,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        on_progress: Optional[ProgressCallback] = None,
    ) -> Any:
        """``textDocument/rename``: the edits that rename the symbol at the position.

        The edits are returned, not applied: nothing on disk or in the open
        documents changes.

        Returns:
            A ``WorkspaceEdit`` (``changes`` by URI, or ``documentChanges``), or ``None``.

        Raises: as :meth:`call`.
        """
        extra = {"newName": new_name}
        return self._at(uri, line, character, "textDocument/rename", extra, timeout, on_progress, partial=False)

    def _at(
        self,
        uri: PathOrUri,
        line: int,
        character: int,
        method: str,
        extra: Dict[str, Any],
        timeout: Timeout,
        on_progress: Optional[ProgressCallback],
        *,
        partial: bool,
    ) -> Any:
        params = {"textDocument": {"uri": as_uri(uri)}, "position": _position(line, character), **extra}
        return self._request(method, params, timeout, on_progress, partial=partial)

    def _request(
        self,
        method: str,
        params: Dict[str, Any],
        timeout: Timeout,
        on_progress: Optional[ProgressCallback],
        *,
        partial: bool,
    ) -> Any:
        resolved = self._resolve(timeout)
        self._ready(resolved)
        if on_progress is None:
            return self._rpc.call(method, params, timeout=resolved)
        tokens = self._progress.open(on_progress, partial=partial)
        try:
            result = self._rpc.call(method, {**params, **tokens.params()}, timeout=resolved)
            return join_results(result, tokens.partial_results())
        finally:
            self._progress.close(tokens)

    # -- internals ----------------------------------------------------------------------------------

    def _resolve(self, timeout: Timeout) -> Optional[float]:
        if isinstance(timeout, UseDefault) or timeout is Ellipsis:  # type: ignore[comparison-overlap]
            return self._rpc.default_timeout
        return check_timeout(timeout)

    def _ready(self, timeout: Timeout) -> None:
        if not _succeeded(self._handshake):
            self.initialize(timeout=timeout)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "initialized" if _succeeded(self._handshake) else "new"
        return f"<LspClient {self._rpc.transport!r} {state}>"


def _succeeded(handshake: Optional[Future[Dict[str, Any]]]) -> bool:
    return handshake is not None and handshake.done() and not handshake.cancelled() and handshake.exception() is None


def _position(line: int, character: int) -> Dict[str, int]:
    for name, value in (("line", line), ("character", character)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, not {type(value).__name__}")
        if value < 0:
            raise ValueError(f"{name} must be >= 0, not {value}")
    return {"line": line, "character": character}


def _folder_name(uri: str) -> str:
    try:
        return uri_to_path(uri).name or str(uri_to_path(uri))
    except ValueError:
        return PurePath(uri).name or uri


__all__ = [
    "CLOSE_BOUND_S",
    "EXIT_SEND_TIMEOUT_S",
    "INITIALIZED_SEND_TIMEOUT_S",
    "SHUTDOWN_TIMEOUT_S",
    "LspClient",
]
