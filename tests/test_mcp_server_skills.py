"""The skills extension (SEP-2640) served by McpServer, in both eras, read by our own McpClient.

The pure tier over ``test_client()`` (no process, no socket): the capability,
``skills/list`` (complete manifests, digests of the bytes on disk, whole
entries per page), ``skills/get``, ``resources/directory/read``, the
``SKILL.md`` resources, files read at request time, and confinement (no
symbolic link out of a skill, no ``..``, no hidden file).  Our client's
``load_skill`` verifies every size, digest and frontmatter it reads, so a
load that succeeds is an interop check.  The frontmatter subset is checked
against PyYAML.  One real peer: the same over HTTP (wsgiref on 127.0.0.1);
the official suite's three skills scenarios run in
test_mcp_server_conformance.py.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest
import yaml

from jsonrpc_threads import HttpTransport
from jsonrpc_threads.errors import JsonRpcError
from jsonrpc_threads.mcp import McpClient, McpServer
from jsonrpc_threads.mcp.server.frontmatter import parse_frontmatter

from .wsgi_support import WsgirefServer

ERAS = ["auto", "session"]
PDF_SKILL = """---
name: pdf-tools
description: "Fill and check PDF forms: invoices, orders."
license: Apache-2.0
metadata:
  author: example
  version: "2.1"
  tags:
    - pdf
    - forms
compatibility: 3 # a comment
---

# PDF tools

Pick a template from `templates/`.
"""
REFUNDS_SKILL = "---\nname: refunds\ndescription: Process refunds per policy.\n---\nBody.\n"
PNG = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"


def write(path: Path, content: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", newline="")
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """Two skills: ``pdf-tools`` (files, subdirectories, a blob, a hidden file) and ``acme/refunds``."""
    root = tmp_path / "skills"
    pdf = root / "pdf-tools"
    write(pdf / "SKILL.md", PDF_SKILL)
    write(pdf / "templates" / "invoice.md", "# Invoice\r\nTotal: {total}\n")
    write(pdf / "templates" / "regional" / "eu.md", "EU invoice\n")
    write(pdf / "scripts" / "fill.py", "print('fill')\n")
    write(pdf / "assets" / "logo.png", PNG)
    write(pdf / ".secret", "not part of the skill\n")
    write(root / "acme" / "refunds" / "SKILL.md", REFUNDS_SKILL)
    return root


@pytest.fixture(params=ERAS)
def client(request: pytest.FixtureRequest, tree: Path) -> Iterator[Any]:
    server = McpServer("skills-test")
    server.add_skills(tree)
    with server.test_client(mode=request.param) as connected:
        yield connected


def digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def error_code(call: Any) -> int:
    with pytest.raises(JsonRpcError) as caught:
        call()
    return caught.value.code


def test_the_extension_is_declared_with_directory_read_and_resources(client: Any) -> None:
    assert client.server_extensions["io.modelcontextprotocol/skills"] == {"directoryRead": True}
    assert "resources" in client.server_capabilities


def test_each_entry_lists_every_file_with_the_digest_and_size_of_its_bytes(client: Any, tree: Path) -> None:
    entries = {entry["uri"]: entry for entry in client.list_skills()}
    assert sorted(entries) == ["skill://acme/refunds/SKILL.md", "skill://pdf-tools/SKILL.md"]
    pdf = entries["skill://pdf-tools/SKILL.md"]
    assert pdf["frontmatter"] == yaml.safe_load(PDF_SKILL.split("---")[1])
    files = ["SKILL.md", "assets/logo.png", "scripts/fill.py", "templates/invoice.md", "templates/regional/eu.md"]
    expected = [
        {"uri": f"skill://pdf-tools/{name}", "digest": digest(tree / "pdf-tools" / name), "size": len(data)}
        for name in files
        for data in [(tree / "pdf-tools" / name).read_bytes()]
    ]
    assert pdf["resources"] == expected  # complete, sorted, no hidden file
    assert client.get_skill("skill://pdf-tools/SKILL.md") == pdf


def test_our_client_loads_and_verifies_a_skill_and_its_files(client: Any) -> None:
    loaded = client.load_skill("skill://pdf-tools/SKILL.md")
    assert loaded.name == "pdf-tools"
    assert loaded.text == PDF_SKILL
    assert loaded.read("templates/invoice.md") == "# Invoice\r\nTotal: {total}\n"
    assert loaded.read("assets/logo.png") == PNG  # not UTF-8: a blob
    refunds = client.load_skill(next(e for e in client.list_skills() if e["frontmatter"]["name"] == "refunds"))
    assert refunds.uri == "skill://acme/refunds/SKILL.md"


def test_an_unknown_skill_is_invalid_params(client: Any) -> None:
    assert error_code(lambda: client.get_skill("skill://nothing/SKILL.md")) == -32602
    assert error_code(lambda: client.get_skill("skill://pdf-tools/templates/invoice.md")) == -32602


def test_skill_md_is_a_resource_named_and_described_by_its_frontmatter(client: Any) -> None:
    listed = {resource["uri"]: resource for resource in client.list_resources()}
    manifest = listed["skill://pdf-tools/SKILL.md"]
    assert manifest["name"] == "pdf-tools"
    assert manifest["description"] == "Fill and check PDF forms: invoices, orders."
    assert manifest["mimeType"] == "text/markdown"
    contents = client.read_resource("skill://pdf-tools/SKILL.md")["contents"]
    assert contents[0]["mimeType"] == "text/markdown"
    assert contents[0]["text"] == PDF_SKILL


def test_directories_list_their_direct_children(client: Any) -> None:
    def read(uri: str) -> Dict[str, Any]:
        result: Dict[str, Any] = client.request("resources/directory/read", {"uri": uri})
        return {child["uri"]: child.get("mimeType") for child in result["resources"]}

    assert read("skill://pdf-tools") == {
        "skill://pdf-tools/SKILL.md": "text/markdown",
        "skill://pdf-tools/assets": "inode/directory",
        "skill://pdf-tools/scripts": "inode/directory",
        "skill://pdf-tools/templates": "inode/directory",
    }
    assert read("skill://pdf-tools/templates") == {
        "skill://pdf-tools/templates/invoice.md": "text/markdown",
        "skill://pdf-tools/templates/regional": "inode/directory",
    }
    assert read("skill://acme") == {"skill://acme/refunds": "inode/directory"}  # a prefix above skills
    for not_a_directory in ("skill://pdf-tools/SKILL.md", "skill://pdf-tools/nothing", "skill://other", "test://x"):
        with pytest.raises(JsonRpcError) as caught:
            client.request("resources/directory/read", {"uri": not_a_directory})
        assert caught.value.code == -32602, not_a_directory


def test_listings_are_paginated_by_whole_entries(tmp_path: Path) -> None:
    for number in range(53):
        name = f"skill-{number:02d}"
        write(tmp_path / name / "SKILL.md", f"---\nname: {name}\ndescription: number {number}\n---\n")
    server = McpServer("many")
    server.add_skills(tmp_path)
    with server.test_client() as client:
        first = client.request("skills/list", {})
        assert len(first["skills"]) == 50
        second = client.request("skills/list", {"cursor": first["nextCursor"]})
        assert [entry["frontmatter"]["name"] for entry in second["skills"]] == ["skill-50", "skill-51", "skill-52"]
        assert "nextCursor" not in second
        assert len(client.list_skills()) == 53
        assert error_code(lambda: client.request("skills/list", {"cursor": "not-ours"})) == -32602


def test_files_are_read_at_each_request(client: Any, tree: Path) -> None:
    invoice = tree / "pdf-tools" / "templates" / "invoice.md"
    before = client.get_skill("skill://pdf-tools/SKILL.md")
    write(invoice, "# Invoice, second edition\n")
    write(tree / "pdf-tools" / "templates" / "order.md", "# Order\n")
    after = client.get_skill("skill://pdf-tools/SKILL.md")
    assert before != after
    changed = {"uri": "skill://pdf-tools/templates/invoice.md", "digest": digest(invoice), "size": 26}
    assert changed in after["resources"]
    assert client.load_skill(after).read("templates/order.md") == "# Order\n"


def test_a_skill_broken_on_disk_is_left_out_of_listings_and_get_is_an_internal_error(
    client: Any, tree: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tree / "acme" / "refunds" / "SKILL.md", "---\nname: renamed\ndescription: x\n---\n")
    with caplog.at_level(logging.WARNING, logger="jsonrpc_threads.mcp.server"):
        assert [entry["uri"] for entry in client.list_skills()] == ["skill://pdf-tools/SKILL.md"]
    assert "is not its directory's" in caplog.text
    assert error_code(lambda: client.get_skill("skill://acme/refunds/SKILL.md")) == -32603


# -- confinement -----------------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="symbolic links")
@pytest.mark.parametrize("mode", ERAS)
def test_symbolic_links_out_of_a_skill_are_neither_listed_nor_read(tmp_path: Path, mode: str) -> None:
    outside = write(tmp_path / "outside" / "secret.txt", "the host's secret\n")
    skill = tmp_path / "skills" / "linked"
    write(skill / "SKILL.md", "---\nname: linked\ndescription: links in and out\n---\n")
    write(skill / "notes" / "real.md", "real\n")
    (skill / "leak.txt").symlink_to(outside)
    (skill / "leaky-dir").symlink_to(outside.parent, target_is_directory=True)
    (skill / "alias.md").symlink_to(skill / "notes" / "real.md")  # inside: served
    server = McpServer("confined")
    uri = server.add_skill(skill)
    assert uri == "skill://linked/SKILL.md"
    not_found = -32602 if mode == "auto" else -32002
    with server.test_client(mode=mode) as client:
        files = [item["uri"] for item in client.get_skill(uri)["resources"]]
        assert files == ["skill://linked/SKILL.md", "skill://linked/alias.md", "skill://linked/notes/real.md"]
        assert client.read_resource("skill://linked/alias.md")["contents"][0]["text"] == "real\n"
        for refused in (
            "skill://linked/leak.txt",
            "skill://linked/leaky-dir/secret.txt",
            "skill://linked/../outside/secret.txt",
            "skill://linked/notes/../../outside/secret.txt",
            "skill://linked/%2e%2e/outside/secret.txt",
            "skill://linked/notes%2F..%2F..%2Foutside%2Fsecret.txt",
            "skill://linked//SKILL.md",
            "skill://linked/notes",
            "skill://linked",
        ):
            with pytest.raises(JsonRpcError) as caught:
                client.read_resource(refused)
            assert caught.value.code == not_found, refused
        leaky = client.request("resources/directory/read", {"uri": "skill://linked"})
        assert "skill://linked/leaky-dir" not in [child["uri"] for child in leaky["resources"]]
        code = error_code(lambda: client.request("resources/directory/read", {"uri": "skill://linked/leaky-dir"}))
        assert code == -32602


def test_hidden_files_are_not_served(client: Any) -> None:
    assert error_code(lambda: client.read_resource("skill://pdf-tools/.secret")) in (-32602, -32002)


# -- what add_skill refuses --------------------------------------------------------------------------


def test_add_skill_refuses_what_cannot_be_served(tmp_path: Path) -> None:
    server = McpServer("refusals")
    cases = {
        "no-manifest": None,
        "mismatch": "---\nname: other-name\ndescription: d\n---\n",
        "no-description": "---\nname: no-description\n---\n",
        "Bad_Name": "---\nname: Bad_Name\ndescription: d\n---\n",
        "ambiguous": "---\nname: ambiguous\ndescription: d\nenabled: yes\n---\n",
        "no-frontmatter": "# just markdown\n",
    }
    for name, manifest in cases.items():
        directory = tmp_path / name
        directory.mkdir()
        if manifest is not None:
            write(directory / "SKILL.md", manifest)
        with pytest.raises(ValueError):
            server.add_skill(directory)
    big = tmp_path / "big"
    write(big / "SKILL.md", "---\nname: big\ndescription: too many files\n---\n")
    for number in range(512):
        write(big / "files" / f"{number}.txt", "")
    with pytest.raises(ValueError, match="limits"):
        server.add_skill(big)
    good = write(tmp_path / "good" / "SKILL.md", "---\nname: good\ndescription: d\n---\n").parent
    assert server.add_skill(good, prefix="team/a") == "skill://team/a/good/SKILL.md"
    with pytest.raises(ValueError, match="already served"):
        server.add_skill(good, prefix="team/a")
    with pytest.raises(ValueError):
        server.add_skill(good, prefix="../up")
    with pytest.raises(ValueError):
        server.add_skills(tmp_path / "no-manifest")


# -- the frontmatter subset, against PyYAML --------------------------------------------------------

ACCEPTED = [
    PDF_SKILL,
    "---\nname: a\ndescription: 'it''s quoted' # trailing\nnum: 12\nflt: -1.5\nzero: 0\nflag: true\n"
    "nothing:\ntilde: ~\n---\n",
    '---\nname: a\ndescription: "tab\\tand \\u00e9 and \\"q\\""\nversion: 1.2.3\nurl: http://x.y/z\n---\n',
    "---\r\nname: a\r\ndescription: CRLF lines\r\nlist:\r\n- one\r\n- 'two'\r\n---\r\nbody\r\n",
    "\ufeff---\nname: a\ndescription: d\nmetadata:\n  io.modelcontextprotocol/x: value\n  deep:\n    deeper: 3\n---\n",
]
REFUSED = [
    "---\nname: a\ndescription: d\nx: yes\n---\n",
    "---\nname: a\ndescription: d\nx: 010\n---\n",
    "---\nname: a\ndescription: d\nx: 1e3\n---\n",
    "---\nname: a\ndescription: d\nx: 2024-01-01\n---\n",
    "---\nname: a\ndescription: d\nx: [a, b]\n---\n",
    "---\nname: a\ndescription: >\n  folded\n---\n",
    "---\nname: a\ndescription: over\n  two lines\n---\n",
    "---\nname: a\nname: b\ndescription: d\n---\n",
    "---\nname: a\ndescription: a: b\n---\n",
    "---\nname: &anchor a\ndescription: d\n---\n",
    "---\non: a\ndescription: d\n---\n",
    "no frontmatter at all\n",
]


@pytest.mark.parametrize("text", ACCEPTED)
def test_the_frontmatter_subset_reads_what_pyyaml_reads(text: str) -> None:
    block = text.lstrip("\ufeff").replace("\r\n", "\n").split("---\n")[1]
    assert parse_frontmatter(text) == yaml.safe_load(block)


@pytest.mark.parametrize("text", REFUSED)
def test_the_frontmatter_subset_refuses_what_parsers_may_read_differently(text: str) -> None:
    with pytest.raises(ValueError):
        parse_frontmatter(text)


# -- a real peer: HTTP ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ERAS)
def test_our_client_loads_a_skill_over_http(tree: Path, mode: str) -> None:
    server = McpServer("skills-http")
    server.add_skills(tree)
    app = server.wsgi_app()
    try:
        with WsgirefServer(app) as http, McpClient(HttpTransport(http.url), mode=mode) as client:
            entry = next(entry for entry in client.list_skills() if entry["uri"] == "skill://pdf-tools/SKILL.md")
            loaded = client.load_skill(entry)
            assert loaded.read("templates/regional/eu.md") == "EU invoice\n"
            children = client.request("resources/directory/read", {"uri": "skill://pdf-tools/templates/regional"})
            assert [child["uri"] for child in children["resources"]] == ["skill://pdf-tools/templates/regional/eu.md"]
    finally:
        app.close()
