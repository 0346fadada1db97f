"""LspClient: a synchronous Language Server Protocol client that works from any thread.

Theory of operation.  An ``LspClient`` drives one language server over a
``JsonRpcClient`` (cancellation style ``"lsp"``:
a request that times out or whose future is cancelled sends
``$/cancelRequest``), usually a child process framed with ``Content-Length``
headers (``StdioTransport`` with
``framing="content-length"``).  The pieces, one module each:

- ``handshake``: ``initialize``, ``initialized`` and the settings, one
  flight each caller waits for with its own deadline;
- ``editing``: the open documents, their diagnostics and positions
  (a part the client holds and delegates to, owning its state);
- ``queries``: the questions about code, sent after the handshake with
  their progress (a part too);
- ``capabilities``: what ``initialize`` declares (only what this client
  does) and what it reads from the answer (position encoding, document sync);
- ``documents``: the open documents, their versions and the order their
  notifications go out in;
- ``diagnostics``: ``publishDiagnostics`` kept per document, and waits for
  those of a given version;
- ``progress``: ``$/progress`` routed by token to a call's ``on_progress``,
  partial results joined into the call's result;
- ``server_requests``: the answers to the server's own requests, and its
  log messages;
- ``shutdown``: the end, ``shutdown`` and ``exit``, and the reclaim after it;
- ``positions`` and ``uris``: pure conversions.

Deadlines.  Every public call makes its deadline as it enters (its
``timeout``, else ``default_timeout``), and every step it triggers spends
what is left of it: the handshake on a fresh client, a document
notification's turn, the request, the wait for diagnostics.  A
``RequestTimeout`` names the whole call's timeout.

Lifecycle.  The handshake (``initialize``, then ``initialized``, then the
settings in ``workspace/didChangeConfiguration``) runs once: in ``__enter__``,
or on the first use, whichever comes first, on a thread of its own; every
caller waits for it no longer than its own deadline, and it goes on when
one gives up (``handshake``).  ``LspClient.close`` sends
``shutdown`` (at most ``SHUTDOWN_TIMEOUT_S``), then ``exit`` (at most
``EXIT_SEND_TIMEOUT_S``), then closes the transport, whose reclaim of the
process tree is bounded too: a server that answered ``shutdown`` but is slow
to exit is terminated after ``EXIT_GRACE_S``, and a server that ignores
all of it is still gone within ``CLOSE_BOUND_S``.

Every method may be called from any thread, concurrently: requests are
pipelined on the one connection, never serialized behind a lock.  Results are
the wire JSON as plain dicts and lists, as the server sent them.
"""

from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import Future
from pathlib import PurePath
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .._version import __version__
from ..client import DEFAULT_HANDLER_WORKERS, JsonRpcClient, Timeout
from ..deadlines.flight import as_call_timeout
from ..deadlines.timeouts import DEFAULT_TIMEOUT, Deadline, check_timeout
from ..errors import RequestTimeout, TransportClosed
from ..runtime.closing import Closing
from ..transports.base import Transport
from ..transports.stdio import StdioTransport
from .capabilities import client_capabilities
from .diagnostics import PUBLISH_METHOD, DiagnosticsBoard
from .editing import Editing
from .handshake import INITIALIZED_SEND_TIMEOUT_S, Handshake, call_deadline, call_within
from .positions import UTF16
from .progress import PROGRESS_METHOD, ProgressCallback, ProgressRouter
from .queries import Queries, position_params
from .server_requests import Handler, ServerRequests
from .shutdown import CLOSE_BOUND_S, EXIT_SEND_TIMEOUT_S, SHUTDOWN_TIMEOUT_S, reclaim_after_exit, say_goodbye
from .uris import PathOrUri, as_uri, uri_to_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..messages import Params

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
    the server down and reclaims its process (bounded by ``CLOSE_BOUND_S``).
    Positions (``line``, ``character``) count from 0, characters in the
    negotiated ``position_encoding`` (UTF-16 unless the caller offered
    more and the server chose another); ``position_at`` converts a Python
    string offset.  Results are the wire JSON as plain dicts and lists.

    Every method may be called from any thread.  The caller's handlers
    (``on_apply_edit``, ``on_show_message_request``) run on the client's
    handler workers; ``on_progress``, ``on_log`` and ``on_diagnostics`` on its
    notification thread, one at a time, in arrival order; none ever on the
    reader thread or under a lock.  Each may call back into the client.

    Args:
        command_or_transport: the server's command line (a ``str``, split with
            ``shlex.split``, or an argv list), run as a child process framed
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
            ``StdioTransport`` takes them.
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
        self._board = DiagnosticsBoard(on_diagnostics)
        self._progress = ProgressRouter(f"jsonrpc-threads-{os.getpid()}-{next(_client_numbers)}", on_progress)
        # _lock guards _close_started; _closed is set once close() finished.
        self._lock = threading.Lock()
        self._close_started = False
        self._closed = threading.Event()
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
        self._handshake = Handshake(self._rpc, self._initialize_params, self._initialized, self._settings_to_send)
        self._editing = Editing(self._rpc, self._handshake, self._board)
        self._queries = Queries(self._rpc, self._handshake, self._progress)
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

        One handshake runs however many threads ask (and whichever call
        needs it first), on a thread of its own; each caller waits for it no
        longer than its own ``timeout``, and the handshake goes on for the
        others: a caller that gave up may simply call again.  ``initialize``
        is never withdrawn (the protocol allows one per connection), so a
        handshake that *failed* (the server refused, or went away) is not
        retried: close the client and start a new one.

        Args:
            timeout: seconds to wait for the handshake (by default the
                client's ``default_timeout``; ``None`` waits forever).

        Returns:
            The server's ``initialize`` result (``capabilities``, ``serverInfo``).

        Raises:
            RequestTimeout: the handshake was not done within ``timeout`` (it goes on).
            TransportClosed: the server is gone (or the client closed).
            JsonRpcError: the server refused ``initialize``.
        """
        return self._handshake.join(self._deadline(timeout))

    def _initialize_params(self) -> Dict[str, Any]:
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
        return params

    def _settings_to_send(self) -> Optional[Dict[str, Any]]:
        return self._server.settings if self._has_settings else None

    def _initialized(self, result: Dict[str, Any]) -> None:
        """The server answered ``initialize`` (on the handshake's thread): read what it chose."""
        capabilities = result.get("capabilities")
        self._editing.learn(capabilities if isinstance(capabilities, dict) else {}, self._offered)

    def _on_enter(self) -> None:
        """Entering ``with``: run the handshake (the client is closed if it fails); leaving closes it."""
        self.initialize()

    def close(self) -> None:
        """Shut the server down and reclaim its process; bounded by ``CLOSE_BOUND_S``.

        Sends ``shutdown`` and waits up to ``SHUTDOWN_TIMEOUT_S`` for its
        answer, then ``exit``, then closes the transport (stdin closed, the
        process tree terminated, then killed, each step bounded; a child that
        answered ``shutdown`` gets ``EXIT_GRACE_S`` to exit before it is
        terminated, others the transport's stdin grace), failing
        whatever is still pending with ``TransportClosed``.  A server that was
        never initialized, or is gone already, is only reclaimed.  Idempotent
        and thread-safe: a second caller waits (bounded) for the first.
        """
        with self._lock:
            first = not self._close_started
            self._close_started = True
        if not first:
            self._closed.wait(CLOSE_BOUND_S)
            return
        try:
            if self._handshake.succeeded() and not self._rpc.closed and say_goodbye(self._rpc):
                reclaim_after_exit(self._rpc)
        finally:
            try:
                self._rpc.close()  # fails an initialize still pending: the handshake's thread ends
            finally:
                self._handshake.close()
                self._board.close(TransportClosed("LspClient closed"))
                self._closed.set()

    @property
    def closed(self) -> bool:
        """True once ``close`` started or the server went away."""
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
        return self._handshake.result()

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
        return self._editing.encoding

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

        ``timeout`` bounds the whole call: the handshake if it has not run, then the send.

        Raises:
            TransportClosed: the server is gone.
            RequestTimeout: as any call.
        """
        self._server.set_settings(settings)
        deadline = self._deadline(timeout)
        self._handshake.ready(deadline)
        try:
            self._rpc.notify(
                "workspace/didChangeConfiguration", {"settings": self._server.settings}, timeout=deadline.remaining()
            )
        except RequestTimeout as exc:
            raise as_call_timeout(exc, deadline) from None

    # -- open documents (``editing``) --------------------------------------------------------

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
                ``LANGUAGE_IDS``).
            timeout: for the whole call: the handshake if it has not run, the
                wait for its turn among the document notifications, the send.

        Returns:
            The document's URI (what the other methods take).

        Raises:
            ValueError: the document is open already, or ``text`` is missing
                for a URI that is not a ``file:`` URI.
            OSError: the file cannot be read.
            TransportClosed, RequestTimeout: as any call.
        """
        return self._editing.open(path_or_uri, text, language_id, self._deadline(timeout))

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
        return self._editing.change(uri, text, self._deadline(timeout))

    def close_document(self, uri: PathOrUri, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Close an open document (``textDocument/didClose``); the server reads it from disk again.

        Raises:
            ValueError: the document is not open.
            TransportClosed, RequestTimeout: as any call.
        """
        self._editing.close(uri, self._deadline(timeout))

    def document_text(self, uri: PathOrUri) -> Optional[str]:
        """The text of an open document as the server was told it, or ``None`` when it is not open."""
        return self._editing.text(uri)

    def document_version(self, uri: PathOrUri) -> Optional[int]:
        """The version of an open document, or ``None`` when it is not open."""
        return self._editing.version(uri)

    def diagnostics(self, uri: PathOrUri, *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[Dict[str, Any]]:
        """The server's diagnostics for the document's current version, once it published them.

        For a document opened here: waits for the ``publishDiagnostics`` of
        the version last sent (returns at once when it already arrived).  For
        any other document: the latest published, or the next.

        Args:
            uri: the document (a URI or a local path).
            timeout: seconds for the whole call (the handshake if it has not
                run, and the wait); by default the client's ``default_timeout``.

        Returns:
            The diagnostics, as the server sent them (possibly empty).

        Raises:
            RequestTimeout: nothing was published in time (its ``hint`` says for which version).
            TransportClosed: the server went away first.
        """
        return self._editing.diagnostics(uri, self._deadline(timeout))

    def position_at(self, uri: PathOrUri, offset: int) -> Tuple[int, int]:
        """The position, in the negotiated encoding, of a Python string offset into a document.

        The text is the open document's (as the server was told it), else the
        file's on disk.  Example: ``lsp.position_at(uri, text.index("greet"))``.

        Returns:
            ``(line, character)``, what ``definition`` and the others take.

        Raises:
            ValueError: an offset outside the text.
            OSError: the document is not open and its file cannot be read.
        """
        return self._editing.position_at(uri, offset)

    def offset_at(self, uri: PathOrUri, line: int, character: int) -> int:
        """The Python string offset of a position (in the negotiated encoding) in a document.

        Raises:
            ValueError: a negative line or character.
            OSError: the document is not open and its file cannot be read.
        """
        return self._editing.offset_at(uri, line, character)

    # -- questions about code (``queries``) ----------------------------------------------------

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

        Raises: as ``call``; ``ValueError``/``TypeError`` for a bad position.
        """
        params = position_params(uri, line, character)
        return self._ask("textDocument/definition", params, timeout, on_progress, partial=True)

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

        Raises: as ``call``.
        """
        params = position_params(uri, line, character, context={"includeDeclaration": include_declaration})
        return self._ask("textDocument/references", params, timeout, on_progress, partial=True)

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

        Raises: as ``call``.
        """
        params = position_params(uri, line, character)
        return self._ask("textDocument/hover", params, timeout, on_progress, partial=False)

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

        Raises: as ``call``.
        """
        if trigger_character is None:
            context: Dict[str, Any] = {"triggerKind": 1}
        else:
            context = {"triggerKind": 2, "triggerCharacter": trigger_character}
        params = position_params(uri, line, character, context=context)
        return self._ask("textDocument/completion", params, timeout, on_progress, partial=False)

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

        Raises: as ``call``.
        """
        params = {"textDocument": {"uri": as_uri(uri)}}
        return self._ask("textDocument/documentSymbol", params, timeout, on_progress, partial=True)

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

        Raises: as ``call`` (``RemoteMethodNotFound`` from a server without it).
        """
        return self._ask("workspace/symbol", {"query": query}, timeout, on_progress, partial=True)

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

        Raises: as ``call``.
        """
        params = position_params(uri, line, character, newName=new_name)
        return self._ask("textDocument/rename", params, timeout, on_progress, partial=False)

    # -- plain JSON-RPC -----------------------------------------------------------------------

    def request(self, method: str, params: Params = None, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Future[Any]:
        """Send a request after the handshake and return a future for its result.

        As ``JsonRpcClient.request``
        (``future.cancel()`` sends ``$/cancelRequest``).  ``timeout`` bounds
        the whole call: the handshake, when it has not run, blocks this call
        within it, and the request's life is what is left.
        """
        deadline = self._deadline(timeout)
        waited = self._handshake.ready(deadline)
        return self._rpc.request(method, params, timeout=deadline.remaining() if waited else deadline.timeout)

    def call(self, method: str, params: Params = None, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Any:
        """Send a request after the handshake and block until its result, or its timeout.

        As ``JsonRpcClient.call``;
        ``timeout`` bounds the whole call, the handshake if it has not run included.

        Raises:
            RequestTimeout: no answer within ``timeout`` (``$/cancelRequest`` was sent).
            RequestCancelled: the server cancelled the request itself (-32800).
            TransportClosed: the server is gone.
            JsonRpcError: any other error answer.
        """
        deadline = self._deadline(timeout)
        self._handshake.ready(deadline)
        return call_within(self._rpc, method, params, deadline)

    def notify(self, method: str, params: Params = None, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Send a notification after the handshake.

        As ``JsonRpcClient.notify``.
        For documents, use ``open``, ``change`` and ``close_document``,
        which keep their versions.  ``timeout`` bounds the whole call, the
        handshake if it has not run included.
        """
        deadline = self._deadline(timeout)
        self._handshake.ready(deadline)
        try:
            self._rpc.notify(method, params, timeout=deadline.remaining())
        except RequestTimeout as exc:
            raise as_call_timeout(exc, deadline) from None

    # -- internals ----------------------------------------------------------------------------------

    def _deadline(self, timeout: Timeout) -> Deadline:
        """The deadline of a call that enters now with ``timeout`` (``default_timeout`` by default)."""
        return call_deadline(self._rpc, timeout)

    def _ask(
        self,
        method: str,
        params: Dict[str, Any],
        timeout: Timeout,
        on_progress: Optional[ProgressCallback],
        *,
        partial: bool,
    ) -> Any:
        return self._queries.ask(method, params, self._deadline(timeout), on_progress, partial=partial)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "initialized" if self._handshake.succeeded() else "new"
        return f"<LspClient {self._rpc.transport!r} {state}>"


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
