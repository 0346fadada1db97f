"""McpClient as a newcomer uses it: logs in both eras, a model's arguments, skills' timeouts (issue 37, items 8-10).

Every case runs over a real peer, tests/peers/mcp_pages_peer.py as a child
process: its tool ``chatty`` sends one log line per level at or above the one
asked for (in the stateless era only when a request asks), and its skills
methods may be slow (``--slow``).
"""

from __future__ import annotations

import importlib.util
import inspect
import threading
import time
from typing import Any, Dict, List

import pytest

from jsonrpc_threads import RequestTimeout
from jsonrpc_threads.mcp import McpClient
from jsonrpc_threads.mcp.client_features import DEFAULT_LOG_LEVEL
from jsonrpc_threads.mcp.skills import get_skill, list_skills, load_skill

from .conftest import peer_command
from .registry_support import baseline, make_registry, openai_call  # noqa: F401 - an autouse fixture

LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
#: How late past its deadline a call may return on a loaded machine.
LATE_S = 1.0
WAIT_S = 10.0


def pages_peer(*flags: str) -> Dict[str, Any]:
    argv = peer_command("mcp_pages_peer", *flags)
    return {"command": argv[0], "args": argv[1:]}


class Logs:
    """``on_log``: the levels of the lines received, and a wait for a number of them."""

    def __init__(self) -> None:
        self.levels: List[str] = []
        self._cond = threading.Condition()

    def __call__(self, params: Dict[str, Any]) -> None:
        with self._cond:
            self.levels.append(params["level"])
            self._cond.notify_all()

    def wait_for(self, count: int) -> List[str]:
        with self._cond:
            self._cond.wait_for(lambda: len(self.levels) >= count, WAIT_S)
            return list(self.levels)


def chatty(client: McpClient) -> int:
    return int(client.call_tool("chatty")["content"][0]["text"])


# -- item 8: on_log gets the server's logs in both eras --------------------------------------------


@pytest.mark.parametrize("era", ["stateless", "session"])
def test_on_log_gets_every_line_in_both_eras(era: str) -> None:
    logs = Logs()
    flags = ("--stateless",) if era == "stateless" else ()
    with McpClient(pages_peer(*flags), on_log=logs) as client:
        assert client.era == era
        assert chatty(client) == len(LEVELS)
        assert logs.wait_for(len(LEVELS)) == LEVELS


def test_set_logging_level_still_chooses_the_level_in_the_stateless_era() -> None:
    logs = Logs()
    with McpClient(pages_peer("--stateless"), on_log=logs) as client:
        client.set_logging_level("error")
        assert chatty(client) == 4
        assert logs.wait_for(4) == ["error", "critical", "alert", "emergency"]


def test_without_on_log_nothing_is_asked_for_in_the_stateless_era() -> None:
    with McpClient(pages_peer("--stateless")) as client:
        assert chatty(client) == 0  # the server's lines would only go to a logger: not asked for
    assert DEFAULT_LOG_LEVEL == "debug"


# -- item 9: arguments as a JSON string ------------------------------------------------------------


@pytest.mark.parametrize("arguments", ['{"text": "hi"}', b'{"text": "hi"}'])
def test_call_tool_with_a_json_string_says_what_to_pass(arguments: Any) -> None:
    with McpClient(pages_peer()) as client:
        with pytest.raises(TypeError, match=r"must be a dict of the arguments, not a JSON string: pass json\.loads"):
            client.call_tool("echo", arguments)
        with pytest.raises(TypeError, match=r"json\.loads"):
            client.submit_tool("echo", arguments)
        with pytest.raises(TypeError, match=r"json\.loads"):
            client.get_prompt("a prompt", arguments)
        with pytest.raises(TypeError, match=r"must be a dict of the arguments \(or None\), not list"):
            client.call_tool("echo", [("text", "hi")])  # type: ignore[arg-type]
        assert client.call_tool("echo", {"text": "hi"})["content"][0]["text"] == "hi"


def test_the_registry_call_tool_says_the_same_and_execute_takes_a_models_json() -> None:
    with make_registry({"mcpServers": {"p": pages_peer()}}) as registry:
        with pytest.raises(TypeError, match=r"json\.loads"):
            registry.call_tool("p", "echo", '{"text": "hi"}')  # type: ignore[arg-type]
        assert not registry.started("p")  # refused before the server was started
        message = registry.execute(openai_call("mcp__p__echo", '{"text": "hi"}'))
        assert message["content"] == "hi"


# -- item 10: the skills' timeout=None waits forever; the default is the client's -----------------


def test_skills_timeouts_mean_what_they_mean_everywhere() -> None:
    for method in (McpClient.list_skills, McpClient.get_skill, McpClient.load_skill, list_skills, get_skill):
        default = inspect.signature(method).parameters["timeout"].default
        assert repr(default) == "DEFAULT_TIMEOUT", method
    slow_s = 1.0
    with McpClient(pages_peer("--slow", str(slow_s)), default_timeout=0.3) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as caught:
            client.list_skills()  # the client's default: 0.3 s
        assert caught.value.timeout == 0.3 and time.monotonic() - started < slow_s
        entries = client.list_skills(timeout=None)  # no deadline: waits as long as it takes
        assert [entry["uri"] for entry in entries] == ["skill://today/SKILL.md"]
        assert client.get_skill("skill://today/SKILL.md", timeout=None)["uri"] == "skill://today/SKILL.md"
        if importlib.util.find_spec("yaml") is not None:
            assert client.load_skill("skill://today/SKILL.md", timeout=None).name == "today"


def test_load_skill_spends_one_deadline_on_all_its_requests() -> None:
    pytest.importorskip("yaml")
    slow_s = 1.0
    with McpClient(pages_peer("--slow", str(slow_s)), default_timeout=30.0) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as caught:
            load_skill(client, "skill://today/SKILL.md", timeout=1.5)  # skills/get, then resources/read
        elapsed = time.monotonic() - started
        assert caught.value.timeout == 1.5  # the whole call's timeout, not what was left of it
        assert 1.5 <= elapsed < 1.5 + LATE_S
