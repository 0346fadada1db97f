"""McpServer: an MCP server made of plain synchronous functions, served over stdio, WSGI or in memory.

Theory of operation.  ``McpServer`` is a facade over three parts it holds:
the catalog of what it offers (``definitions.Catalog``, filled by the
decorators), the protocol engine that answers MCP from it in both eras
(``engine.Engine``), and the HTTP sessions of the 2025 era
(``sessions.SessionTable``).  The ways to run it only move messages:
``run_stdio`` (the serve loop of ``jsonrpc_threads.server``),
``wsgi_app`` (Streamable HTTP for any WSGI server; ``run_http`` serves
it with the standard library's threaded server) and ``test_client``
(an ``McpClient`` connected in memory).

Example::

    from jsonrpc_threads.mcp import McpServer

    server = McpServer("weather")

    @server.tool()
    def forecast(city: str, days: int = 3) -> str:
        \"\"\"The forecast for a city.

        Args:
            city: the city's name.
            days: how many days ahead.
        \"\"\"
        return f"{city}: sunny for {days} days"

    if __name__ == "__main__":
        server.run_stdio()

Thread-safety: an ``McpServer`` is thread-safe: define, serve and notify from
any thread; user functions run concurrently and must be thread-safe
themselves.
"""

from __future__ import annotations

import os
from typing import IO, Any, Callable, Dict, List, Mapping, Optional, TypeVar, Union, overload

from ...deadlines.timeouts import check_timeout
from .definitions import Catalog, CompletionDefinition, PromptDefinition, ResourceDefinition, ToolDefinition
from .engine import Engine, ServerIdentity
from .request_state import StateSeal
from .sessions import SessionTable
from .skills import SkillSet
from .stdio import LineConnections

__all__ = ["McpServer"]

F = TypeVar("F", bound=Callable[..., Any])
_DERIVED: Any = ...


class McpServer:
    """An MCP server from plain synchronous functions; both protocol eras on one endpoint.

    Thread-safe.  See the module docstring for an example.

    Args:
        name: the server's name (``serverInfo.name``).
        version: its version.
        title: a display name.
        instructions: how to use the server, for the model (sent in the
            ``initialize`` and ``server/discover`` results).
        website_url: ``serverInfo.websiteUrl``.
        icons: ``serverInfo.icons`` (``[{"src", "mimeType"?, "sizes"?}]``).
        state_secret: the key that signs the stateless era's ``requestState``
            (16 bytes or more, bytes or str).  ``None``: a random key per
            process, so a multi-round request must come back to the process
            that began it: give every process behind one address the same
            secret.  Never logged, never in a ``repr``.
        max_workers: over stdio, how many requests run at once.
        cache_ttl_ms: the stateless era's ``ttlMs`` on lists and reads (0: do not reuse).
        cache_scope: their ``cacheScope``: ``"private"`` (the default) or ``"public"``.

    Raises:
        ValueError: a ``state_secret`` too short, ``max_workers`` below 1, a bad cache hint.
    """

    def __init__(
        self,
        name: str,
        *,
        version: str = "0.1.0",
        title: Optional[str] = None,
        instructions: Optional[str] = None,
        website_url: Optional[str] = None,
        icons: Optional[List[Mapping[str, Any]]] = None,
        state_secret: Union[bytes, str, None] = None,
        max_workers: int = 8,
        cache_ttl_ms: int = 0,
        cache_scope: str = "private",
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("a server needs a name")
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, not {max_workers}")
        self.name = name
        self.max_workers = max_workers
        self.catalog = Catalog()
        identity = ServerIdentity(
            name,
            version,
            title=title,
            website_url=website_url,
            icons=icons,
            instructions=instructions,
            cache_ttl_ms=cache_ttl_ms,
            cache_scope=cache_scope,
        )
        self.skills = SkillSet()
        self.engine = Engine(identity, self.catalog, StateSeal(state_secret), self.skills)
        self.sessions = SessionTable()
        self._lines = LineConnections(self.engine)  # stdio and in-memory clients

    def __repr__(self) -> str:
        return f"<McpServer {self.name!r} tools={len(self.catalog.tools())}>"

    # -- definitions -----------------------------------------------------------------------

    @overload
    def tool(self, name: F) -> F: ...

    @overload
    def tool(
        self,
        name: Optional[str] = None,
        *,
        title: Optional[str] = None,
        description: Optional[str] = None,
        annotations: Optional[Mapping[str, Any]] = None,
        meta: Optional[Mapping[str, Any]] = None,
        output_schema: Any = _DERIVED,
        input_schema: Optional[Mapping[str, Any]] = None,
        icons: Optional[List[Mapping[str, Any]]] = None,
        timeout: Optional[float] = None,
        task_support: Optional[str] = None,
        task_start: str = "call",
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        name: Any = None,
        *,
        title: Optional[str] = None,
        description: Optional[str] = None,
        annotations: Optional[Mapping[str, Any]] = None,
        meta: Optional[Mapping[str, Any]] = None,
        output_schema: Any = _DERIVED,
        input_schema: Optional[Mapping[str, Any]] = None,
        icons: Optional[List[Mapping[str, Any]]] = None,
        timeout: Optional[float] = None,
        task_support: Optional[str] = None,
        task_start: str = "call",
    ) -> Any:
        """Make a function a tool: ``@server.tool()`` (or ``@server.tool``).

        The input schema comes from the signature's type hints, the
        description from the docstring's summary (its ``Args:`` section
        describes the parameters), the output schema and ``structuredContent``
        from the return annotation.  A parameter annotated ``Context`` gets
        the request's context and is not part of the schema.

        Args:
            name: the tool's name (default: the function's).
            title: a display name.
            description: overrides the docstring's summary.
            annotations: MCP's tool annotations (``readOnlyHint``, ...).
            meta: the tool's ``_meta``.
            output_schema: ``None`` for none; a dict to use that schema; by
                default derived from the return annotation.
            input_schema: a schema to show instead of the derived one (the
                arguments are still bound to the signature).
            icons: the tool's icons.
            timeout: seconds after which a call is answered as timed out
                (``isError``) and its ``Context.cancelled`` set; the function
                runs on a thread of its own then.
            task_support: the tasks extension: ``"optional"`` (a call from a
                client that declared it runs as a task), ``"required"`` (any
                other call is refused, ``-32021``) or ``None`` (never a task);
                the rules are in ``jsonrpc_threads.mcp.server.tasks``.
            task_start: ``"call"`` (the task begins before the function runs)
                or ``"explicit"`` (at ``Context.start_task()``).

        Raises:
            ValueError: a name MCP does not allow, a ``task_support`` or ``task_start`` not listed.
            TypeError: a signature with ``*args`` or ``**kwargs``.
        """
        if callable(name):
            return self.tool()(name)
        seconds = check_timeout(timeout) if timeout is not None else None

        def define(fn: F) -> F:
            self.catalog.add_tool(
                ToolDefinition.make(
                    fn,
                    name=name,
                    title=title,
                    description=description,
                    annotations=annotations,
                    meta=meta,
                    output_schema=output_schema,
                    input_schema=input_schema,
                    icons=icons,
                    timeout=seconds,
                    task_support=task_support,
                    task_start=task_start,
                )
            )
            self.notify_tools_changed()
            return fn

        return define

    def remove_tool(self, name: str) -> bool:
        """Stop offering a tool (clients are told); False when there was none."""
        removed = self.catalog.remove_tool(name)
        if removed:
            self.notify_tools_changed()
        return removed

    def resource(
        self,
        uri_or_template: str,
        *,
        name: Optional[str] = None,
        title: Optional[str] = None,
        description: Optional[str] = None,
        mime_type: Optional[str] = None,
        icons: Optional[List[Mapping[str, Any]]] = None,
        meta: Optional[Mapping[str, Any]] = None,
    ) -> Callable[[F], F]:
        """Make a function a resource: ``@server.resource("test://static")``, or a template ``"file:///{path}"``.

        The function returns a ``str`` (text), ``bytes`` (a blob), or a list of
        them; a template's variables are its keyword arguments.  A URI that is
        no resource is the specification's not-found error.

        Raises:
            ValueError: a URI without a scheme, or template variables that are not the function's parameters.
        """

        def define(fn: F) -> F:
            self.catalog.add_resource(
                ResourceDefinition.make(
                    fn,
                    uri_or_template,
                    name=name,
                    title=title,
                    description=description,
                    mime_type=mime_type,
                    icons=icons,
                    meta=meta,
                )
            )
            self.notify_resources_changed()
            return fn

        return define

    def prompt(
        self,
        name: Optional[str] = None,
        *,
        title: Optional[str] = None,
        description: Optional[str] = None,
        icons: Optional[List[Mapping[str, Any]]] = None,
        meta: Optional[Mapping[str, Any]] = None,
    ) -> Callable[[F], F]:
        """Make a function a prompt: its parameters are the prompt's arguments.

        It returns a string (one user message), a content block, a message
        dict (``{"role", "content"}``), or a list of these.
        """
        if callable(name):
            return self.prompt()(name)

        def define(fn: F) -> F:
            self.catalog.add_prompt(
                PromptDefinition.make(fn, name=name, title=title, description=description, icons=icons, meta=meta)
            )
            self.notify_prompts_changed()
            return fn

        return define

    def completion(self, ref: Union[str, Mapping[str, Any]]) -> Callable[[F], F]:
        """Complete the arguments of a prompt (its name) or resource template (its URI template).

        The function is called as ``fn(argument, value, context_arguments)``
        and returns a list of strings (at most 100 are sent) or
        ``{"values", "total"?, "hasMore"?}``.

        Raises:
            InvalidParams: ``ref`` is not a reference.
        """
        key = CompletionDefinition.ref_of(ref)

        def define(fn: F) -> F:
            self.catalog.add_completion(CompletionDefinition(key, fn))
            return fn

        return define

    def add_skill(self, directory: Union[str, os.PathLike[str]], *, prefix: Optional[str] = None) -> str:
        """Serve the skill in ``directory`` read-only (the skills extension, SEP-2640; see ``mcp.server.skills``).

        A skill is a directory holding a ``SKILL.md`` whose frontmatter has a
        ``name`` (the directory's name) and a ``description``, and its files.
        It is served at ``skill://[prefix/]<name>/SKILL.md``, each file beside
        it, read at each request; nothing outside the directory is served.
        The server then declares the extension and answers ``skills/list``,
        ``skills/get`` and ``resources/directory/read``.  The frontmatter is
        read with the standard library: a value YAML parsers read differently
        must be quoted (see ``mcp.server.frontmatter``).

        Returns:
            The URI of its ``SKILL.md``.

        Raises:
            ValueError: not a directory, no valid ``SKILL.md``, a name that is
                not the directory's, over 512 files or 16 MiB, a bad prefix, or
                a skill already served there.
        """
        uri = self.skills.add(os.fspath(directory), prefix)
        self.notify_resources_changed()
        return uri

    def add_skills(self, root: Union[str, os.PathLike[str]], *, prefix: Optional[str] = None) -> List[str]:
        """Serve every skill under ``root`` (each directory holding a ``SKILL.md``, at any depth), as ``add_skill``.

        ``root/acme/refunds`` (after ``prefix``) is ``skill://acme/refunds/SKILL.md``.

        Returns:
            The URIs of their ``SKILL.md``, sorted.

        Raises:
            ValueError: ``root`` holds no skill, or an invalid one (then none is added).
        """
        uris = self.skills.add_tree(os.fspath(root), prefix)
        self.notify_resources_changed()
        return uris

    # -- change notifications --------------------------------------------------------------

    def notify_tools_changed(self) -> None:
        """Tell clients the tool list changed (sessions, and stateless listeners that asked)."""
        self._broadcast("notifications/tools/list_changed", {})

    def notify_prompts_changed(self) -> None:
        """Tell clients the prompt list changed."""
        self._broadcast("notifications/prompts/list_changed", {})

    def notify_resources_changed(self) -> None:
        """Tell clients the resource list changed."""
        self._broadcast("notifications/resources/list_changed", {})

    def notify_resource_updated(self, uri: str) -> None:
        """Tell the clients subscribed to ``uri`` that it changed."""
        self._broadcast("notifications/resources/updated", {"uri": uri})

    def _broadcast(self, method: str, params: Dict[str, Any]) -> None:
        self.engine.broadcast(method, params, self._lines.sessions() + self.sessions.all())

    # -- ways to run -----------------------------------------------------------------------

    def run_stdio(self, *, stdin: Optional[IO[bytes]] = None, stdout: Optional[IO[bytes]] = None) -> None:
        """Serve one client over stdio (one JSON message per line) until end of input.

        Requests run on up to ``max_workers`` worker threads; a line too long,
        not JSON, or not a message is answered with its error and the loop
        goes on; ``print()`` in a tool goes to stderr, never into the protocol.

        Args:
            stdin: a binary stream to read (default: the process's stdin).
            stdout: a binary stream to write (default: the process's stdout).
        """
        self._lines.serve_stdio(stdin, stdout, self.max_workers)

    def test_client(self, **client_kwargs: Any) -> Any:
        """An ``McpClient`` connected to this server in memory: no process, no socket.

        Use it in a ``with`` block (it connects on entry and closes on exit);
        the keyword arguments are ``McpClient``'s (``mode="session"`` for the
        2025 era; the default, ``"auto"``, speaks 2026-07-28 with this server).

        Returns:
            A ``jsonrpc_threads.mcp.McpClient``.
        """
        from ..session import McpClient  # noqa: PLC0415

        return McpClient(self._lines.memory_transport(f"mcp-server[{self.name}]", self.max_workers), **client_kwargs)

    def wsgi_app(
        self,
        *,
        path: Optional[str] = "/mcp",
        allowed_hosts: Optional[List[str]] = None,
        allowed_origins: Any = (),
        json_response: Optional[bool] = None,
        max_body_bytes: Optional[int] = None,
        heartbeat: float = 10.0,
        max_workers: int = 256,
    ) -> Any:
        """This server as a WSGI application speaking MCP Streamable HTTP (see ``mcp.server.http``).

        Args:
            path: the endpoint's path (``None``: any path, for mounting under a framework's route).
            allowed_hosts: the ``Host`` names accepted (DNS-rebinding protection; default: loopback names).
            allowed_origins: browser origins allowed besides the server's own.
            json_response: ``True``: always answer JSON (progress and logs are
                dropped); ``False``: always SSE; ``None`` (default): JSON unless
                the request sends something before its result.
            max_body_bytes: the largest request body (default 4 MiB).
            heartbeat: seconds of silence after which a request's answer
                becomes an SSE stream with a comment line at each heartbeat
                (so a client that went away is noticed, and its run cancelled).
            max_workers: the most requests running at once on the app's pool
                (the WSGI server's own threads bound them first).

        Returns:
            A WSGI application (``app(environ, start_response)``).
        """
        from .http import McpWsgiApp  # noqa: PLC0415

        return McpWsgiApp(
            self,
            path=path,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            json_response=json_response,
            max_body_bytes=max_body_bytes,
            heartbeat=heartbeat,
            max_workers=max_workers,
        )

    def close(self) -> None:
        """Cancel the tasks still running and stop their workers (as closing the last way of serving does).

        A later task starts new workers.  Idempotent.
        """
        self.engine.tasks.close()

    def run_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        path: str = "/mcp",
        on_listening: Optional[Callable[[str], None]] = None,
        **app_kwargs: Any,
    ) -> None:
        """Serve Streamable HTTP on ``host:port`` until Ctrl-C, with the standard library's threaded server.

        On the calling thread, a thread per HTTP request, until a
        ``KeyboardInterrupt`` (Ctrl-C, or a signal handler that raises it):
        then the socket and the app (every session) are closed.  For
        development and small deployments; in production mount ``wsgi_app()``.

        Args:
            host: the address to listen on (loopback by default; another needs ``allowed_hosts``).
            port: the port (0: a free one; ``on_listening`` says which).
            path: the endpoint's path.
            on_listening: called with the endpoint's URL once the socket
                listens; by default the URL is logged (INFO).
            app_kwargs: more keyword arguments of ``wsgi_app``.

        Raises:
            OSError: the address cannot be bound.
        """
        from .http_runner import serve_until_interrupted  # noqa: PLC0415

        serve_until_interrupted(self.wsgi_app(path=path, **app_kwargs), host, port, path, on_listening)
