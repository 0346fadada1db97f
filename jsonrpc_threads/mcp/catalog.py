"""What an MCP server offers besides tools (resources, prompts, completions, skills), as calls of McpClient.

Theory of operation.  ``CatalogCalls`` is the part of
``McpClient`` that asks a server about its
resources, prompts, argument completions and skills, and sends any other
request (``CatalogCalls.request``).  Each call does what
every call of the client does: it makes its deadline as it enters (its
``timeout``, else the client's ``default_timeout``), holds a lease on the
session while it runs (``leases``), and hands both to the connection
(``connection``), which settles the era first if needed.  A paginated
list follows ``nextCursor`` through every page within that one deadline.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Union, cast

from .._deadlines import DEFAULT_TIMEOUT, Deadline, Timeout
from . import protocol, skills
from .cache import ResultCache
from .connection import McpConnection
from .leases import Leases
from .listing import LISTS, MAX_PAGES, Listing, fetch_list
from .subscriptions import ListenFilter, Subscriptions
from .types import CompleteResult, GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool

logger = logging.getLogger(__name__)


class CatalogCalls:
    """Resources, prompts, completions, skills, any request: these calls of ``McpClient``.

    Attributes:
        default_timeout: seconds a call may take unless it says otherwise.
        leases: the calls running on the session now.
    """

    default_timeout: Optional[float]
    leases: Leases
    _connection: McpConnection
    _cache: Optional[ResultCache]
    _filter: ListenFilter
    _subscriptions: Subscriptions
    _listen: bool

    def list_resources(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[Resource]:
        """Every resource of the server, through all pages (``timeout`` bounds them all)."""
        return cast(List[Resource], self._paginate("resources/list", timeout))

    def list_resource_templates(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[ResourceTemplate]:
        """Every resource template of the server, through all pages (``timeout`` bounds them all)."""
        return cast(List[ResourceTemplate], self._paginate("resources/templates/list", timeout))

    def read_resource(self, uri: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> ReadResourceResult:
        """Read one resource: ``{"contents": [...]}``."""
        return cast(ReadResourceResult, self._call("resources/read", {"uri": uri}, timeout))

    def subscribe_resource(self, uri: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (see ``on_resource_updated``).

        In the stateless era this (re)opens ``subscriptions/listen`` with the
        resource added, and returns once the server acknowledged it (or
        ``timeout`` passed).
        """
        self._resources("resources/subscribe", self._filter.add, uri, timeout)

    def unsubscribe_resource(self, uri: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        """Stop the updates asked for by ``subscribe_resource``."""
        self._resources("resources/unsubscribe", self._filter.remove, uri, timeout)

    def list_prompts(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[Prompt]:
        """Every prompt of the server, through all pages (``timeout`` bounds them all)."""
        return cast(List[Prompt], self._paginate("prompts/list", timeout))

    def get_prompt(
        self, name: str, arguments: Optional[Mapping[str, str]] = None, *, timeout: Timeout = DEFAULT_TIMEOUT
    ) -> GetPromptResult:
        """Render a prompt with its arguments."""
        params: Dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = protocol.arguments_object(arguments)
        return cast(GetPromptResult, self._call("prompts/get", params, timeout))

    def complete(
        self,
        ref: Mapping[str, Any],
        argument: Mapping[str, Any],
        *,
        context: Optional[Mapping[str, Any]] = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
    ) -> CompleteResult:
        """Ask for completions of a prompt or resource-template argument.

        Args:
            ref: ``{"type": "ref/prompt", "name": ...}`` or
                ``{"type": "ref/resource", "uri": ...}``.
            argument: ``{"name": ..., "value": ...}``.
            context: ``{"arguments": {...}}`` already chosen (2025-06-18 and later).
        """
        params: Dict[str, Any] = {"ref": dict(ref), "argument": dict(argument)}
        if context is not None:
            params["context"] = dict(context)
        return cast(CompleteResult, self._call("completion/complete", params, timeout))

    def list_skills(self, *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[Dict[str, Any]]:
        """The skill entries of a server with the skills extension (``skills/list``, every page); no file is read.

        ``timeout`` bounds every page; ``None`` waits forever.  See ``jsonrpc_threads.mcp.skills``.
        """
        return skills.list_skills(self, timeout=timeout)

    def get_skill(self, uri: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Dict[str, Any]:
        """The entry of the skill whose ``SKILL.md`` is at ``uri`` (``skills/get``)."""
        return skills.get_skill(self, uri, timeout=timeout)

    def load_skill(
        self, entry_or_uri: Union[str, Mapping[str, Any]], *, timeout: Timeout = DEFAULT_TIMEOUT
    ) -> skills.LoadedSkill:
        """Read a skill's ``SKILL.md``, verified (size, digest, frontmatter) against its entry.

        ``timeout`` bounds the whole load: ``skills/get`` (given a URI), then
        ``resources/read``; ``None`` waits forever.

        Raises:
            SkillVerificationError: the content does not match the entry (it is not used).
            ImportError: PyYAML (the ``skills`` extra) is missing.
        """
        return skills.load_skill(self, entry_or_uri, timeout=timeout)

    def listing(self, method: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Listing:
        """A whole list (every page, ``timeout`` bounding them all), and how long the server says it stays fresh.

        What ``list_tools()`` and the other ``list_*`` calls return is its
        ``items``; its ``ttl_ms``, ``expires_at`` and ``stale`` tell when to
        ask again: the smallest ``ttlMs`` of the pages (MCP 2026-07-28; in that
        era a page without one is stale at once), or no hint (``None``) from
        a server of the session era.

        Args:
            method: ``"tools/list"``, ``"prompts/list"``, ``"resources/list"``,
                ``"resources/templates/list"`` or ``"skills/list"``.

        Raises:
            ValueError: another method.
            ProtocolError: a malformed page (it names the server, the page and the field).
            RequestTimeout, JsonRpcError: as any request.
        """
        if method not in LISTS:
            raise ValueError(f"{method!r} is not a list this client follows (one of: {', '.join(LISTS)})")
        deadline = self._deadline(timeout)
        with self.leases:
            return self._listing(method, deadline)

    def request(
        self, method: str, params: Optional[Mapping[str, Any]] = None, *, timeout: Timeout = DEFAULT_TIMEOUT
    ) -> Any:
        """Send any MCP request and return its result (settling the era first if needed).

        In the stateless era the request gets its ``_meta``, an
        ``input_required`` answer is fulfilled and the request sent again,
        and a fresh cached result may answer it.  ``timeout`` bounds all of it.

        Raises:
            JsonRpcError: as ``JsonRpcClient.call``; the MCP codes as their
                classes (``UnsupportedProtocolVersion``, ...).
        """
        return self._call(method, dict(params) if params is not None else None, timeout)

    # -- shared by every call of the client -------------------------------------------------

    def _deadline(self, timeout: Timeout) -> Deadline:
        """The deadline of a call that enters now with ``timeout`` (the client's default for the default)."""
        return Deadline.after(timeout, self.default_timeout)

    def _call(self, method: str, params: Optional[Dict[str, Any]], timeout: Timeout) -> Any:
        """One request within the call's deadline, holding a lease."""
        deadline = self._deadline(timeout)
        with self.leases:
            return self._connection.request(method, params, deadline)

    def _paginate(self, method: str, timeout: Timeout) -> List[Dict[str, Any]]:
        deadline = self._deadline(timeout)
        with self.leases:
            return self._listing(method, deadline).items

    def _listing(self, method: str, deadline: Deadline) -> Listing:
        """Every page of ``method``'s list within ``deadline``; the cached pages of it expire together."""
        connection = self._connection

        def stateless() -> bool:
            return connection.handshake.era == protocol.MODE_STATELESS

        listing = fetch_list(connection.request, method, deadline, server=connection.label, stateless=stateless)
        if method == "tools/list" and stateless():
            tools = connection.stateless.learn_tools(cast(List[Tool], listing.items))
            listing = replace(listing, items=cast(List[Dict[str, Any]], tools))
        fresh_for = listing.fresh_for()
        if self._cache is not None and fresh_for is not None:
            self._cache.hold_list(method, fresh_for)
        return listing

    def _resources(self, method: str, change: Callable[[str], None], uri: str, timeout: Timeout) -> None:
        """(Un)subscribe: ``resources/(un)subscribe`` in the session era; the listen filter in the stateless era."""
        deadline = self._deadline(timeout)
        with self.leases:
            handshake = self._connection.handshake
            handshake.settle(deadline)
            if handshake.era != protocol.MODE_STATELESS:
                self._connection.request(method, {"uri": uri}, deadline)
                return
            change(uri)
            if self._listen:
                self._subscriptions.listen(self._filter.filters(), wait=deadline.remaining())


__all__ = ["MAX_PAGES", "CatalogCalls", "Listing"]
