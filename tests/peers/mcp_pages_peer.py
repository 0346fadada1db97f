"""An MCP server over stdio whose list pages the test writes, for the pagination, freshness and log tests.

Standard library only (it must not import jsonrpc_threads).  Run it as a real
child process::

    [sys.executable, "tests/peers/mcp_pages_peer.py", *flags]

Flags:

- ``--stateless``: a server of the stateless era (2026-07-28): it answers
  ``server/discover``, every result carries ``resultType``; otherwise one of
  the session era (``initialize``; its ``server/discover`` answers -32601).
- ``--pages JSON``: ``{method: [page, ...]}``, the pages of ``tools/list``,
  ``prompts/list``, ``resources/list`` or ``resources/templates/list``,
  answered as written (malformed ones too).  A request without a cursor gets
  the first page; a cursor ``"N"`` gets page ``N`` (so a page says
  ``"nextCursor": "1"`` to lead to the second).  By default ``tools/list`` is
  one page with the tools ``echo``, ``add_tool`` and ``chatty``,
  ``skills/list`` one page with the entry of ``SKILL_URI``, and every
  other list is one empty page.
- ``--slow S``: ``skills/list``, ``skills/get`` and ``resources/read`` answer
  after ``S`` seconds (each request runs on a thread of its own);
  ``--slow-tools-list`` makes ``tools/list`` that slow too.

Skills: ``skills/get`` answers the entry of ``SKILL_URI`` (a dynamic
skill), ``resources/read`` of that URI its ``SKILL.md``.

Tools:

- ``echo {text}``: the text;
- ``add_tool {name}``: adds a tool of that name to the last page of
  ``tools/list``, and sends no ``list_changed`` (a server that cannot);
- ``chatty``: sends one ``notifications/message`` per log level at or above
  the level asked for, then answers how many it sent.  Session era: the level
  of ``logging/setLevel``, every level until one was set.  Stateless era: the
  level in the request's ``_meta`` (``io.modelcontextprotocol/logLevel``);
  none at all when the request names none, as that era's servers do.

``test/requests`` answers every list request so far: ``[[method, cursor], ...]``.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import threading
from typing import Any, Dict, List, Optional

SESSION_VERSION = "2025-11-25"
STATELESS_VERSION = "2026-07-28"
LOG_LEVEL_META = "io.modelcontextprotocol/logLevel"
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
LISTS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list", "skills/list")
SLOW_METHODS = ("skills/list", "skills/get", "resources/read")
SKILL_URI = "skill://today/SKILL.md"
SKILL_ENTRY = {"uri": SKILL_URI, "frontmatter": {"name": "today", "description": "Today"}, "resources": "dynamic"}
SKILL_MD = "---\nname: today\ndescription: Today\n---\n\nA good day.\n"


def _tool(name: str) -> Dict[str, Any]:
    return {"name": name, "description": f"the {name} tool", "inputSchema": {"type": "object"}}


DEFAULT_TOOLS_PAGE = {"tools": [_tool("echo"), _tool("add_tool"), _tool("chatty")]}
EMPTY_PAGES = {
    "prompts/list": {"prompts": []},
    "resources/list": {"resources": []},
    "resources/templates/list": {"resourceTemplates": []},
    "skills/list": {"skills": [SKILL_ENTRY]},
}


class PagesPeer:
    def __init__(self, stateless: bool, pages: Dict[str, List[Any]], slow: float, slow_tools_list: bool) -> None:
        self.stateless = stateless
        self.slow = slow
        self.slow_tools_list = slow_tools_list
        self.pages: Dict[str, List[Any]] = {"tools/list": [copy.deepcopy(DEFAULT_TOOLS_PAGE)]}
        for method, empty in EMPTY_PAGES.items():
            self.pages[method] = [dict(empty)]
        self.pages.update(pages)
        self.requests: List[List[Any]] = []
        self.level: Optional[str] = None  # session era: set by logging/setLevel
        self._lock = threading.Lock()

    def write(self, message: Dict[str, Any]) -> None:
        line = json.dumps({"jsonrpc": "2.0", **message}) + "\n"
        with self._lock:
            sys.stdout.write(line)
            sys.stdout.flush()

    def result(self, rid: Any, result: Any) -> None:
        if self.stateless and isinstance(result, dict):
            result = {"resultType": "complete", **result}
        self.write({"id": rid, "result": result})

    def error(self, rid: Any, code: int, message: str) -> None:
        self.write({"id": rid, "error": {"code": code, "message": message}})

    def handle(self, message: Dict[str, Any]) -> None:
        rid, method, params = message.get("id"), message.get("method"), message.get("params") or {}
        if rid is None:
            return  # a notification
        if method in SLOW_METHODS or (method == "tools/list" and self.slow_tools_list):
            threading.Event().wait(self.slow)
        if method == "initialize" and not self.stateless:
            capabilities = {"tools": {}, "prompts": {}, "resources": {}, "logging": {}}
            info = {"name": "pages-peer", "version": "1"}
            self.result(rid, {"protocolVersion": SESSION_VERSION, "capabilities": capabilities, "serverInfo": info})
        elif method == "server/discover" and self.stateless:
            self.result(
                rid,
                {
                    "supportedVersions": [STATELESS_VERSION],
                    "capabilities": {"tools": {}, "prompts": {}, "resources": {}, "logging": {}},
                    "ttlMs": 0,
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "pages-peer", "version": "1"}},
                },
            )
        elif method in LISTS:
            self.list_page(rid, method, params.get("cursor"))
        elif method == "logging/setLevel" and not self.stateless:
            with self._lock:
                self.level = params.get("level")
            self.result(rid, {})
        elif method == "ping" and not self.stateless:
            self.result(rid, {})
        elif method == "tools/call":
            self.call(rid, params)
        elif method == "skills/get":
            self.result(rid, {"skill": SKILL_ENTRY})
        elif method == "resources/read":
            self.result(rid, {"contents": [{"uri": params.get("uri"), "mimeType": "text/markdown", "text": SKILL_MD}]})
        elif method == "test/requests":
            with self._lock:
                requests = list(self.requests)
            self.result(rid, {"requests": requests})
        else:
            self.error(rid, -32601, f"Method not found: {method}")

    def list_page(self, rid: Any, method: str, cursor: Any) -> None:
        with self._lock:
            self.requests.append([method, cursor])
            pages = self.pages[method]
            index = 0 if cursor is None else int(cursor) if str(cursor).isdigit() else -1
            page = copy.deepcopy(pages[index]) if 0 <= index < len(pages) else None
        if page is None:
            self.error(rid, -32602, f"no page for cursor {cursor!r}")
        else:
            self.result(rid, page)

    def call(self, rid: Any, params: Dict[str, Any]) -> None:
        name, arguments = params.get("name"), params.get("arguments") or {}
        if name == "echo":
            self.result(rid, _text(str(arguments.get("text"))))
        elif name == "add_tool":
            with self._lock:
                self.pages["tools/list"][-1]["tools"].append(_tool(str(arguments.get("name"))))
            self.result(rid, _text("added"))
        elif name == "chatty":
            if self.stateless:
                meta = params.get("_meta") or {}
                level = meta.get(LOG_LEVEL_META) if isinstance(meta, dict) else None
            else:
                with self._lock:
                    level = self.level or LEVELS[0]
            sent = 0
            if level in LEVELS:
                for name in LEVELS[LEVELS.index(level) :]:
                    self.write(
                        {"method": "notifications/message", "params": {"level": name, "data": f"{name} message"}}
                    )
                    sent += 1
            self.result(rid, _text(str(sent)))
        else:
            self.error(rid, -32602, f"Unknown tool: {name}")


def _text(text: str) -> Dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stateless", action="store_true")
    parser.add_argument("--pages", default="{}")
    parser.add_argument("--slow", type=float, default=0.0)
    parser.add_argument("--slow-tools-list", action="store_true")
    args = parser.parse_args()
    peer = PagesPeer(args.stateless, json.loads(args.pages), args.slow, args.slow_tools_list)
    for line in sys.stdin:
        if line.strip():
            threading.Thread(target=peer.handle, args=(json.loads(line),), daemon=True).start()


if __name__ == "__main__":
    main()
