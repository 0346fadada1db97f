"""``FileService``: ``fs/read_text_file`` and ``fs/write_text_file`` confined to one root, on its own.

These tests call the service the way the client's handlers do, with no agent
and no process, so they run in the fast tier and on every Python the library
supports (the tests through a real agent, tests/test_acp_files.py, need the
official ACP SDK, Python 3.10+).  Every refusal is a JSON-RPC error and leaves
the file it named untouched: a path outside the root, one that climbs out
with ``..``, one that is relative, one that leads out through a symbolic link
(to a file or through a directory), and a link swapped in after the check.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Iterator, List, Tuple

import pytest

from jsonrpc_threads.acp import files as files_module
from jsonrpc_threads.acp.files import FileService
from jsonrpc_threads.acp.wire import RESOURCE_NOT_FOUND
from jsonrpc_threads.errors import InvalidParams, JsonRpcError

TIMEOUT_S = 30.0
SECRET = "the secret outside the root\n"

#: Paths that lead out of the root, read or written (``{root}``, ``{outside}`` filled in).
LEADING_OUT = (
    "{outside}/secret.txt",  # absolute, elsewhere
    "{root}/../outside/secret.txt",  # climbs out
    "{root}/src/../../outside/secret.txt",
    "{root}/link-to-secret",  # a link to a file outside
    "{root}/link-to-outside/secret.txt",  # through a linked directory
    "{root}/link-to-outside/new.txt",
    "secret.txt",  # relative
)


def make_places(tmp_path: Path) -> Tuple[Path, Path]:
    """``root`` (the agent's) with a few files, and ``outside`` beside it with a secret."""
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    (root / "src").mkdir(parents=True)
    outside.mkdir()
    (root / "src" / "main.py").write_text("line 1\nline 2\nline 3\nline 4\n", encoding="utf-8")
    (outside / "secret.txt").write_text(SECRET, encoding="utf-8")
    (root / "link-to-secret").symlink_to(outside / "secret.txt")
    (root / "link-to-outside").symlink_to(outside, target_is_directory=True)
    (root / "link-inside").symlink_to(root / "src" / "main.py")
    return root, outside


@pytest.fixture
def places(tmp_path: Path) -> Tuple[Path, Path]:
    return make_places(tmp_path)


@pytest.fixture
def service(places: Tuple[Path, Path]) -> Iterator[FileService]:
    yield FileService(places[0], write=True)


def test_reads_inside_the_root_honour_line_and_limit(service: FileService, places: Tuple[Path, Path]) -> None:
    root, _ = places
    main = str(root / "src" / "main.py")
    assert service.read_text_file({"sessionId": "s", "path": main}) == {"content": "line 1\nline 2\nline 3\nline 4\n"}
    assert service.read_text_file({"path": main, "line": 2, "limit": 2}) == {"content": "line 2\nline 3\n"}
    assert service.read_text_file({"path": main, "line": 9}) == {"content": ""}
    link = str(root / "link-inside")  # a link that stays inside is followed
    assert service.read_text_file({"path": link}) == {"content": "line 1\nline 2\nline 3\nline 4\n"}


@pytest.mark.parametrize("path", LEADING_OUT)
def test_reads_that_lead_out_of_the_root_are_refused(
    service: FileService, places: Tuple[Path, Path], path: str
) -> None:
    root, outside = places
    with pytest.raises(InvalidParams) as refused:
        service.read_text_file({"sessionId": "s", "path": path.format(root=root, outside=outside)})
    assert SECRET.strip() not in str(refused.value)


@pytest.mark.parametrize("path", LEADING_OUT)
def test_writes_that_lead_out_of_the_root_are_refused_and_touch_nothing(
    service: FileService, places: Tuple[Path, Path], path: str
) -> None:
    root, outside = places
    with pytest.raises(InvalidParams):
        service.write_text_file({"sessionId": "s", "path": path.format(root=root, outside=outside), "content": "x"})
    assert (outside / "secret.txt").read_text(encoding="utf-8") == SECRET
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert sorted(p.name for p in root.iterdir()) == ["link-inside", "link-to-outside", "link-to-secret", "src"]


def test_a_missing_file_is_acps_resource_not_found(service: FileService, places: Tuple[Path, Path]) -> None:
    with pytest.raises(JsonRpcError) as missing:
        service.read_text_file({"path": str(places[0] / "nope.txt")})
    assert missing.value.code == RESOURCE_NOT_FOUND


def test_a_fifo_a_directory_and_binary_content_are_refused_without_blocking(
    service: FileService, places: Tuple[Path, Path]
) -> None:
    root, _ = places
    os.mkfifo(root / "pipe")
    (root / "blob.bin").write_bytes(b"\xff\xfe\x00binary")
    for name in ("pipe", "src", "blob.bin"):
        with pytest.raises(InvalidParams):
            service.read_text_file({"path": str(root / name)})


def test_writes_create_the_file_and_its_directories(service: FileService, places: Tuple[Path, Path]) -> None:
    root, _ = places
    target = root / "new" / "dir" / "notes.md"
    assert service.write_text_file({"path": str(target), "content": "héllo\nwörld\n"}) == {}
    assert target.read_text(encoding="utf-8") == "héllo\nwörld\n"
    service.write_text_file({"path": str(target), "content": "short"})
    assert target.read_text(encoding="utf-8") == "short"  # replaced, not appended to


@pytest.mark.skipif(not files_module._BENEATH, reason="no O_NOFOLLOW with dir_fd on this platform")
def test_a_link_swapped_in_after_the_check_is_refused_not_followed(
    places: Tuple[Path, Path], service: FileService, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = places
    (root / "swap").mkdir()
    (root / "swap" / "secret.txt").write_text("inside", encoding="utf-8")
    checked = service.resolve(str(root / "swap" / "secret.txt"))
    real_resolve = service.resolve

    def resolve_then_swap(path: Any) -> str:
        resolved = real_resolve(path)
        (root / "swap" / "secret.txt").unlink()
        (root / "swap").rmdir()
        (root / "swap").symlink_to(outside, target_is_directory=True)  # the race, lost on purpose
        return resolved

    monkeypatch.setattr(service, "resolve", resolve_then_swap)
    for method, extra in ((service.read_text_file, {}), (service.write_text_file, {"content": "overwritten"})):
        with pytest.raises(InvalidParams, match="outside"):
            method({"sessionId": "s", "path": checked, **extra})
        (root / "swap").unlink()
        (root / "swap").mkdir()
        (root / "swap" / "secret.txt").write_text("inside", encoding="utf-8")
    assert (outside / "secret.txt").read_text(encoding="utf-8") == SECRET


@pytest.mark.skipif(not files_module._BENEATH, reason="no O_NOFOLLOW with dir_fd on this platform")
def test_the_last_component_swapped_for_a_link_is_refused(
    places: Tuple[Path, Path], service: FileService, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = places
    main = root / "src" / "main.py"
    real_resolve = service.resolve

    def resolve_then_swap(path: Any) -> str:
        resolved = real_resolve(path)
        main.unlink(missing_ok=True)
        main.symlink_to(outside / "secret.txt")  # the race, lost on purpose
        return resolved

    monkeypatch.setattr(service, "resolve", resolve_then_swap)
    with pytest.raises(InvalidParams, match="outside"):
        service.read_text_file({"sessionId": "s", "path": str(main)})
    with pytest.raises(InvalidParams, match="outside"):
        service.write_text_file({"sessionId": "s", "path": str(main), "content": "overwritten"})
    assert (outside / "secret.txt").read_text(encoding="utf-8") == SECRET


def test_bad_params_are_invalid_params(service: FileService, places: Tuple[Path, Path]) -> None:
    main = str(places[0] / "src" / "main.py")
    for params in (
        None,
        {"path": 42},
        {"path": ""},
        {"path": main, "line": 0},
        {"path": main, "limit": -1},
        {"path": main, "line": True},
    ):
        with pytest.raises(InvalidParams):
            service.read_text_file(params)
    with pytest.raises(InvalidParams):
        service.write_text_file({"path": main, "content": 42})
    with pytest.raises(InvalidParams):
        service.write_text_file({"path": main, "content": "\ud800 a lone surrogate"})
    assert Path(main).read_text(encoding="utf-8").startswith("line 1")


def test_a_file_too_large_for_one_answer_is_read_in_parts(
    service: FileService, places: Tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files_module, "MAX_READ_CHARS", 20)
    main = str(places[0] / "src" / "main.py")  # 28 bytes
    with pytest.raises(InvalidParams, match="in parts"):
        service.read_text_file({"path": main})
    assert service.read_text_file({"path": main, "line": 3, "limit": 2}) == {"content": "line 3\nline 4\n"}
    with pytest.raises(InvalidParams, match="fewer"):
        service.read_text_file({"path": main, "line": 1})


def test_concurrent_reads_and_writes_of_many_files(service: FileService, places: Tuple[Path, Path]) -> None:
    root = places[0]
    errors: List[BaseException] = []

    def work(number: int) -> None:
        path = str(root / "many" / f"{number}.txt")
        try:
            for version in range(20):
                service.write_text_file({"path": path, "content": f"{number}:{version}"})
                assert service.read_text_file({"path": path}) == {"content": f"{number}:{version}"}
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT_S)
    assert not errors
    assert len(list((root / "many").iterdir())) == 8


def test_concurrent_writes_to_one_file_replace_it_whole(service: FileService, places: Tuple[Path, Path]) -> None:
    """Issue #47, item 4: a reader sees one write's content or another's, never a mix.

    Before: the file was opened in place, truncated and written in separate
    steps, so a reader met it empty or half written, and two writers interleaved.
    """
    path = places[0] / "shared.txt"
    size = 256 * 1024
    contents = [letter * size for letter in "abcdef"]
    path.write_text(contents[0], encoding="utf-8")
    seen_bad: List[str] = []
    errors: List[BaseException] = []
    writers_done = threading.Event()

    def write(content: str) -> None:
        try:
            for _ in range(10):
                service.write_text_file({"path": str(path), "content": content})
        except BaseException as exc:  # reported below
            errors.append(exc)

    def read() -> None:
        try:
            reads = 0
            while not writers_done.is_set() or reads < 10:
                text = service.read_text_file({"path": str(path)})["content"]
                reads += 1
                if text not in contents:
                    seen_bad.append(f"{len(text)} characters, {sorted(set(text))}")
        except BaseException as exc:  # reported below
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(2)]
    writers = [threading.Thread(target=write, args=(content,)) for content in contents]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join(TIMEOUT_S)
    writers_done.set()
    for thread in readers:
        thread.join(TIMEOUT_S)
    assert not errors
    assert not seen_bad, f"{len(seen_bad)} reads saw a mix or a part: {seen_bad[:3]}"
    assert path.read_text(encoding="utf-8") in contents
    assert sorted(p.name for p in path.parent.iterdir() if p.name.startswith(".shared")) == []  # no temporary left


def test_a_write_keeps_the_mode_and_the_links_and_leaves_no_temporary_on_failure(
    service: FileService, places: Tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = places
    main = root / "src" / "main.py"
    main.chmod(0o640)
    service.write_text_file({"path": str(root / "link-inside"), "content": "through the link\n"})
    assert (root / "link-inside").is_symlink()  # the link is kept; the file it names is replaced
    assert main.read_text(encoding="utf-8") == "through the link\n"
    assert main.stat().st_mode & 0o777 == 0o640

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)  # the OS refuses the rename (not the code under test)
    with pytest.raises(JsonRpcError):
        service.write_text_file({"path": str(main), "content": "never written"})
    monkeypatch.undo()
    assert main.read_text(encoding="utf-8") == "through the link\n"
    assert sorted(p.name for p in main.parent.iterdir()) == ["main.py"]


def test_the_root_must_be_a_directory(places: Tuple[Path, Path]) -> None:
    with pytest.raises(ValueError):
        FileService(places[0] / "src" / "main.py")
    with pytest.raises(JsonRpcError):
        FileService(places[0]).read_text_file({"path": str(places[0])})  # the root itself is no file
