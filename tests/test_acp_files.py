"""``fs/read_text_file`` and ``fs/write_text_file`` confined to ``fs_root``, asked by a real agent.

The agent (tests/peers/acp_agent.py, official Python SDK) reads and writes
through the client; every refusal must reach it as a JSON-RPC error and leave
the file it named untouched: a path outside the root, one that climbs out with
``..``, one that is relative, one that leads out through a symbolic link (to a
file or through a directory), a write without ``fs_write``.  The service itself
(and the race of a link swapped in after the check) is tested without an agent in
tests/test_acp_file_service.py, in the fast tier and on every Python.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from jsonrpc_threads.acp import AcpClient

from .conftest import peer_command
from .test_acp_file_service import SECRET, make_places

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("acp") is None,
    reason="the official ACP SDK (agent-client-protocol, Python 3.10+) is not installed",
)

TIMEOUT_S = 30.0


@pytest.fixture
def places(tmp_path: Path) -> Tuple[Path, Path]:
    return make_places(tmp_path)


def _ask(root: Path, steps: List[Dict[str, Any]], **options: Any) -> List[str]:
    with AcpClient(peer_command("acp_agent"), fs_root=root, default_timeout=TIMEOUT_S, **options) as agent:
        session = agent.new_session(root)
        result = agent.prompt(session, json.dumps(steps))
    return [u["content"]["text"] for u in result["updates"] if u["sessionUpdate"] == "agent_message_chunk"]


def _read(path: Any, **extra: Any) -> Dict[str, Any]:
    return {"read": {"path": str(path), **extra}}


def test_reads_inside_the_root_honour_line_and_limit(places: Tuple[Path, Path]) -> None:
    root, _ = places
    main = root / "src" / "main.py"
    said = _ask(root, [_read(main), _read(main, line=2, limit=2), _read(main, line=9), _read(root / "link-inside")])
    assert said == [
        "read: " + json.dumps("line 1\nline 2\nline 3\nline 4\n"),
        "read: " + json.dumps("line 2\nline 3\n"),
        "read: " + json.dumps(""),
        "read: " + json.dumps("line 1\nline 2\nline 3\nline 4\n"),  # a link that stays inside is followed
    ]


@pytest.mark.parametrize(
    "path",
    [
        "{outside}/secret.txt",  # absolute, elsewhere
        "{root}/../outside/secret.txt",  # climbs out
        "{root}/src/../../outside/secret.txt",
        "{root}/link-to-secret",  # a link to a file outside
        "{root}/link-to-outside/secret.txt",  # through a linked directory
        "secret.txt",  # relative
    ],
)
def test_reads_that_lead_out_of_the_root_are_refused(places: Tuple[Path, Path], path: str) -> None:
    root, outside = places
    (said,) = _ask(root, [_read(path.format(root=root, outside=outside))])
    assert said.startswith("error -32602:")
    assert SECRET.strip() not in said


def test_a_missing_file_is_acps_resource_not_found(places: Tuple[Path, Path]) -> None:
    root, _ = places
    (said,) = _ask(root, [_read(root / "nope.txt")])
    assert said.startswith("error -32002:")


def test_a_fifo_a_directory_and_binary_content_are_refused_without_blocking(places: Tuple[Path, Path]) -> None:
    root, _ = places
    os.mkfifo(root / "pipe")
    (root / "blob.bin").write_bytes(b"\xff\xfe\x00binary")
    said = _ask(root, [_read(root / "pipe"), _read(root / "src"), _read(root / "blob.bin")])
    assert [text.split(":", 1)[0] for text in said] == ["error -32602"] * 3


def test_writes_create_the_file_and_its_directories_only_with_fs_write(places: Tuple[Path, Path]) -> None:
    root, _ = places
    target = root / "new" / "dir" / "notes.md"
    step = {"write": {"path": str(target), "content": "héllo\nwörld\n"}}
    (refused,) = _ask(root, [step])
    assert refused.startswith("error -32601:")  # not served, not declared
    assert not (root / "new").exists()
    assert _ask(root, [step, _read(target)], fs_write=True) == ["write: ok", "read: " + json.dumps("héllo\nwörld\n")]
    assert target.read_text(encoding="utf-8") == "héllo\nwörld\n"
    assert _ask(root, [{"write": {"path": str(target), "content": "short"}}], fs_write=True) == ["write: ok"]
    assert target.read_text(encoding="utf-8") == "short"  # replaced, not appended to


@pytest.mark.parametrize(
    "path",
    [
        "{outside}/secret.txt",
        "{root}/../outside/secret.txt",
        "{root}/link-to-secret",
        "{root}/link-to-outside/secret.txt",
        "{root}/link-to-outside/new.txt",
    ],
)
def test_writes_that_lead_out_of_the_root_are_refused_and_touch_nothing(places: Tuple[Path, Path], path: str) -> None:
    root, outside = places
    target = path.format(root=root, outside=outside)
    (said,) = _ask(root, [{"write": {"path": target, "content": "overwritten"}}], fs_write=True)
    assert said.startswith("error -32602:")
    assert (outside / "secret.txt").read_text(encoding="utf-8") == SECRET
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
