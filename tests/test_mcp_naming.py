"""The names a model sees (jsonrpc_threads/mcp/naming.py): kept when they fit, rewritten stably otherwise."""

from __future__ import annotations

import re

from jsonrpc_threads.mcp.naming import assign_names, namespaced_name, server_prefix

from .registry_support import LONG_NAME, NAME_RE


def test_names_are_kept_when_they_fit() -> None:
    assert namespaced_name("files", "read_file") == "mcp__files__read_file"
    assert namespaced_name("a-b", "C-9_x") == "mcp__a-b__C-9_x"
    fits = "t" * (64 - len("mcp__s__"))
    assert namespaced_name("s", fits) == f"mcp__s__{fits}"


def test_invalid_characters_become_underscores() -> None:
    assert namespaced_name("files", "read.file") == "mcp__files__read_file"
    assert namespaced_name("my server", "a/b") == "mcp__my_server__a_b"
    assert namespaced_name("café", "ü") == "mcp__caf_" + "__" + "_"


def test_long_names_are_truncated_with_a_stable_hash() -> None:
    name = namespaced_name("sdk", LONG_NAME)
    assert len(name) == 64 and NAME_RE.fullmatch(name)
    assert name.startswith(f"mcp__sdk__{LONG_NAME}"[:55] + "_")
    assert name == namespaced_name("sdk", LONG_NAME)  # stable
    assert name != namespaced_name("sdk", LONG_NAME + "2")  # the hash tells them apart
    assert re.fullmatch(r"[0-9a-f]{8}", name[-8:])


def test_clashes_rewrite_only_the_rewritten_names() -> None:
    pairs = [("files", "read.file"), ("files", "read_file"), ("files", "read file")]
    names = assign_names(pairs)
    assert names[("files", "read_file")] == "mcp__files__read_file"  # exact: kept
    for pair in (("files", "read.file"), ("files", "read file")):
        assert re.fullmatch(r"mcp__files__read_file_[0-9a-f]{8}", names[pair])
    assert len(set(names.values())) == 3
    # The same tools in another order get the same names.
    assert assign_names(list(reversed(pairs))) == names


def test_double_underscore_ambiguity_goes_to_the_first_server() -> None:
    pairs = [("a", "b__c"), ("a__b", "c")]  # both spell mcp__a__b__c
    names = assign_names(pairs)
    assert names[("a", "b__c")] == "mcp__a__b__c"
    assert re.fullmatch(r"mcp__a__b__c_[0-9a-f]{8}", names[("a__b", "c")])


def test_every_assigned_name_is_valid_and_unique() -> None:
    pairs = [(server, tool) for server in ("s", "s.", "s!", "x" * 70) for tool in ("t", "t.", "t!", "y" * 70, "")]
    names = assign_names(pairs)
    assert len(set(names.values())) == len(pairs)
    assert all(NAME_RE.fullmatch(name) for name in names.values())


def test_every_name_starts_with_its_servers_prefix() -> None:
    pairs = [("files", "read"), ("my server", "x" * 80), ("a.b", "c"), ("s" * 70, "t")]
    for pair, name in assign_names(pairs).items():
        assert name.startswith(server_prefix(pair[0])), (pair, name)
