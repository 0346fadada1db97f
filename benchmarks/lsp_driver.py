"""The clients of the language-server benchmark (case 8), one mode per way of driving the server.

Usage: ``python benchmarks/lsp_driver.py MODE ROOT FILE LINE CHARACTER -- SERVER ARGV...``

- ``ours-cold`` / ``bare-cold`` / ``multilspy-cold``: one cold start in this
  fresh interpreter: import the client, start the server, ``initialize``, open
  ``FILE``, wait for the first ``hover`` answer, shut the server down and reap
  it.  It prints the wall-clock time (``time.time()``) of the first answer;
  the parent times the whole from spawn to exit.
- ``multilspy-serve``: start the server with multilspy's ``SyncLanguageServer``,
  keep ``FILE`` open, print ``ready``, then for each line ``hover N`` or
  ``definition N`` on stdin make N calls and print the microseconds per call;
  ``quit`` (or end of input) closes.  Runs in a virtual environment of its
  own (multilspy pins its own ``requests`` and ``jedi-language-server``).

:class:`BareLsp` is the floor: ``Content-Length`` frames written and read by
hand on the pipes, no threads, no futures; it answers the server's own
requests with ``null`` (``workspace/configuration`` with one ``null`` per
item), and is also used in-process by :mod:`benchmarks.cases`.

Standard library only, except what each mode drives.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

#: Seconds any answer may take.
ANSWER_TIMEOUT_S = 60.0
#: What every client sends as settings (pylsp: no black formatting of signatures on hover).
SETTINGS: Dict[str, Any] = {"pylsp": {"signature": {"formatter": None}}}


#: The bare client declares what LspClient declares (a server's work depends on it: jedi
#: formats hovers as markdown when told the client reads markdown), given as JSON here.
CAPABILITIES_VARIABLE = "JSONRPC_THREADS_BENCH_LSP_CAPABILITIES"


class BareLsp:
    """A language server on bare pipes: write a frame, read frames until the answer."""

    def __init__(self, argv: List[str], root: str, capabilities: Dict[str, Any]) -> None:
        self.capabilities = capabilities
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=server_env()
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.stdout = self.proc.stdout
        self.next_id = 1
        self.root = root

    def send(self, message: Dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":")).encode()
        self.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.stdin.flush()

    def read(self) -> Dict[str, Any]:
        length = None
        while True:
            line = self.stdout.readline()
            if not line:
                raise RuntimeError("the server closed its output")
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length is None:
            raise RuntimeError("a frame without Content-Length")
        message: Dict[str, Any] = json.loads(self.stdout.read(length))
        return message

    def call(self, method: str, params: Any) -> Any:
        request_id = self.next_id
        self.next_id += 1
        self.send({"id": request_id, "method": method, "params": params})
        while True:
            message = self.read()
            if "method" not in message:
                if message.get("id") == request_id:
                    if "error" in message:
                        raise RuntimeError(f"{method}: {message['error']}")
                    return message.get("result")
                continue
            if "id" in message:  # the server's own request
                items = (message.get("params") or {}).get("items")
                result = [None] * len(items) if message["method"] == "workspace/configuration" and items else None
                self.send({"id": message["id"], "result": result})

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def start(self) -> None:
        root_uri = Path(self.root).as_uri()
        self.call(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root_uri,
                "workspaceFolders": [{"uri": root_uri, "name": Path(self.root).name}],
                "capabilities": self.capabilities,
            },
        )
        self.notify("initialized", {})
        self.notify("workspace/didChangeConfiguration", {"settings": SETTINGS})

    def open(self, path: str) -> str:
        uri = Path(path).as_uri()
        text = Path(path).read_text(encoding="utf-8")
        self.notify(
            "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}
        )
        return uri

    def sequential(self, method: str, params: Any, n: int) -> float:
        """Microseconds per call of n calls, one after the other."""
        start = time.perf_counter()
        for _ in range(n):
            self.call(method, params)
        return (time.perf_counter() - start) / n * 1e6

    def close(self) -> None:
        """``shutdown``, ``exit``, then SIGTERM at once (the floor: no grace for a slow exit), reap."""
        try:
            self.call("shutdown", None)
            self.notify("exit", None)
        except (OSError, RuntimeError):
            pass
        self.stdin.close()
        self.proc.terminate()
        try:
            self.proc.wait(ANSWER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stdout.close()


def server_env() -> Dict[str, str]:
    """The server's environment: ours without ``PYTHONPATH`` (which points at the client's packages)."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop(CAPABILITIES_VARIABLE, None)
    return env


def position_params(uri: str, line: int, character: int) -> Dict[str, Any]:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}


def ours_cold(server: List[str], root: str, path: str, line: int, character: int) -> None:
    from jsonrpc_threads.lsp import LspClient  # noqa: PLC0415  (the import is what is measured)

    with LspClient(server, root_uri=root, settings=SETTINGS, default_timeout=ANSWER_TIMEOUT_S) as lsp:
        uri = lsp.open(path)
        if lsp.hover(uri, line, character) is None:
            raise RuntimeError("no hover")
        print(time.time(), flush=True)


def bare_cold(server: List[str], root: str, path: str, line: int, character: int) -> None:
    bare = BareLsp(server, root, json.loads(os.environ[CAPABILITIES_VARIABLE]))
    bare.start()
    uri = bare.open(path)
    if bare.call("textDocument/hover", position_params(uri, line, character)) is None:
        raise RuntimeError("no hover")
    print(time.time(), flush=True)
    bare.close()


def _multilspy(server: List[str], root: str) -> Any:
    from multilspy import SyncLanguageServer  # type: ignore[import-not-found]  # noqa: PLC0415
    from multilspy.multilspy_config import Language, MultilspyConfig  # type: ignore[import-not-found]  # noqa: PLC0415
    from multilspy.multilspy_logger import MultilspyLogger  # type: ignore[import-not-found]  # noqa: PLC0415

    config = MultilspyConfig(code_language=Language.PYTHON, server_binary=server[0])
    return SyncLanguageServer.create(config, MultilspyLogger(), root, timeout=int(ANSWER_TIMEOUT_S))


def multilspy_cold(server: List[str], root: str, path: str, line: int, character: int) -> None:
    lsp = _multilspy(server, root)
    relative = os.path.relpath(path, root)
    with lsp.start_server(), lsp.open_file(relative):
        if lsp.request_hover(relative, line, character) is None:
            raise RuntimeError("no hover")
        print(time.time(), flush=True)


def multilspy_serve(server: List[str], root: str, path: str, line: int, character: int) -> None:
    lsp = _multilspy(server, root)
    relative = os.path.relpath(path, root)
    calls = {"hover": lsp.request_hover, "definition": lsp.request_definition}
    with lsp.start_server(), lsp.open_file(relative):  # open once, as the other clients do
        print("ready", flush=True)
        for command in sys.stdin:
            words = command.split()
            if not words or words[0] == "quit":
                break
            call, n = calls[words[0]], int(words[1])
            start = time.perf_counter()
            for _ in range(n):
                call(relative, line, character)
            print((time.perf_counter() - start) / n * 1e6, flush=True)


MODES = {
    "ours-cold": ours_cold,
    "bare-cold": bare_cold,
    "multilspy-cold": multilspy_cold,
    "multilspy-serve": multilspy_serve,
}


def main(argv: Optional[List[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    split = args.index("--")
    mode, root, path, line, character = args[:split]
    os.environ.pop("PYTHONPATH", None)  # read already (sys.path); the server must not inherit it
    MODES[mode](args[split + 1 :], root, path, int(line), int(character))
    return 0


if __name__ == "__main__":
    sys.exit(main())
