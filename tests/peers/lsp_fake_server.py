"""A small language server for the protocol corners real servers do not show on demand (stdlib only).

Content-Length framing on stdin/stdout.  It answers ``initialize`` (with the
position encoding given by ``--encoding``), ``shutdown`` and ``exit``, keeps
open documents and publishes one diagnostic per line holding ``error`` after
each open and change, and offers test hooks:

- ``test/received``: every message the client sent so far, in order;
- ``test/ask {method, params}``: sends the client that request and answers
  with the client's response (``{"result": ...}`` or ``{"error": ...}``);
- ``test/notify {method, params}``: sends the client that notification;
- ``test/hang``: never answered, unless the client cancels it
  (``$/cancelRequest``): then answered -32800, and ``test/cancelled {id}``
  is sent to the client;
- ``textDocument/references`` with a ``partialResultToken``: two partial
  results under it, a work-done ``end`` under the ``workDoneToken``, then ``[]``.

Flags: ``--ignore-shutdown`` (never answer it), ``--stubborn`` (also ignore
``exit``, end of input and SIGTERM: only SIGKILL ends it), ``--slow-exit``
(answer ``shutdown`` but ignore ``exit`` and end of input, as
jedi-language-server does for seconds; SIGTERM ends it), ``--grandchild``
(start a child of its own at start-up that waits until it is killed),
``--encoding NAME``,
``--no-versions`` (publish diagnostics without a version), ``--sync-options``
(``textDocumentSync`` as options with ``openClose``), ``--no-sync`` (no
``textDocumentSync`` at all), ``--initialize-delay S`` (answer ``initialize``
after ``S`` seconds), ``--hover-hangs`` (hover is never answered unless
cancelled, as ``test/hang``), ``--queries-hang`` (every ``textDocument/*`` and
``workspace/*`` request is never answered unless cancelled).  It writes ``fake server ready`` to stderr.
"""

import json
import signal
import subprocess
import sys
import threading

from content_length_framing import read_message  # beside this file: the script's own directory is on sys.path


class Server:
    def __init__(self, argv):  # type: ignore[no-untyped-def]
        self.flags = set(argv)
        self.encoding = argv[argv.index("--encoding") + 1] if "--encoding" in argv else None
        self.initialize_delay = float(argv[argv.index("--initialize-delay") + 1]) if "--initialize-delay" in argv else 0

        self.out = sys.stdout.buffer
        self.received = []
        self.asks = {}  # our request id -> the id of the test/ask waiting for its answer
        self.hanging = set()
        self.next_id = 1
        self.documents = {}

    def send(self, message):  # type: ignore[no-untyped-def]
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.out.flush()

    def answer(self, request_id, result=None, error=None):  # type: ignore[no-untyped-def]
        if error is not None:
            self.send({"id": request_id, "error": error})
        else:
            self.send({"id": request_id, "result": result})

    def capabilities(self):  # type: ignore[no-untyped-def]
        capabilities = {"hoverProvider": True, "referencesProvider": True}
        if "--sync-options" in self.flags:
            capabilities["textDocumentSync"] = {"openClose": True, "change": 1}
        elif "--no-sync" not in self.flags:
            capabilities["textDocumentSync"] = 1
        if self.encoding is not None:
            capabilities["positionEncoding"] = self.encoding
        return capabilities

    def publish(self, uri):  # type: ignore[no-untyped-def]
        version, text = self.documents[uri]
        diagnostics = [
            {
                "range": {"start": {"line": n, "character": 0}, "end": {"line": n, "character": len(line)}},
                "message": f"error on line {n + 1} (version {version})",
                "severity": 1,
            }
            for n, line in enumerate(text.splitlines())
            if "error" in line
        ]
        params = {"uri": uri, "diagnostics": diagnostics}
        if "--no-versions" not in self.flags:
            params["version"] = version
        self.send({"method": "textDocument/publishDiagnostics", "params": params})

    def handle(self, message):  # type: ignore[no-untyped-def]
        self.received.append(message)
        method = message.get("method")
        params = message.get("params")
        if method is None:  # a response to one of our requests
            ask = self.asks.pop(message.get("id"), None)
            if ask is not None:
                reply = {key: message[key] for key in ("result", "error") if key in message}
                self.answer(ask, reply)
            return True
        request_id = message.get("id")
        if method == "initialize":
            threading.Event().wait(self.initialize_delay)
            self.answer(
                request_id, {"capabilities": self.capabilities(), "serverInfo": {"name": "fake", "version": "1"}}
            )
        elif method == "shutdown":
            if "--ignore-shutdown" not in self.flags:
                self.answer(request_id, None)
        elif method == "exit":
            return bool({"--stubborn", "--slow-exit"} & self.flags)
        elif (
            "--queries-hang" in self.flags
            and request_id is not None
            and method.startswith(("textDocument/", "workspace/"))
        ):
            self.hanging.add(request_id)
        elif method == "textDocument/didOpen":
            document = params["textDocument"]
            self.documents[document["uri"]] = (document["version"], document["text"])
            self.publish(document["uri"])
        elif method == "textDocument/didChange":
            document = params["textDocument"]
            self.documents[document["uri"]] = (document["version"], params["contentChanges"][-1]["text"])
            self.publish(document["uri"])
        elif method == "textDocument/didClose":
            self.documents.pop(params["textDocument"]["uri"], None)
        elif method == "textDocument/hover" and "--hover-hangs" in self.flags:
            self.hanging.add(request_id)
        elif method == "textDocument/hover":
            position = params["position"]
            self.answer(request_id, {"contents": f"hover at {position['line']}:{position['character']}"})
        elif method == "textDocument/references":
            uri = params["textDocument"]["uri"]
            location = {"uri": uri, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}}
            token = params.get("partialResultToken")
            if token is None:
                self.answer(request_id, [location, location])
                return True
            for _ in range(2):
                self.send({"method": "$/progress", "params": {"token": token, "value": [location]}})
            work = params.get("workDoneToken")
            if work is not None:
                self.send({"method": "$/progress", "params": {"token": work, "value": {"kind": "end"}}})
            self.answer(request_id, [])
        elif method == "test/received":
            self.answer(request_id, self.received[:-1])
        elif method == "test/ask":
            our_id = f"ask-{self.next_id}"
            self.next_id += 1
            self.asks[our_id] = request_id
            self.send({"id": our_id, "method": params["method"], "params": params.get("params")})
        elif method == "test/notify":
            self.send({"method": params["method"], "params": params.get("params")})
            self.answer(request_id, None)
        elif method == "test/hang":
            self.hanging.add(request_id)
        elif method == "$/cancelRequest":
            cancelled = params.get("id")
            if cancelled in self.hanging:
                self.hanging.discard(cancelled)
                self.answer(cancelled, error={"code": -32800, "message": "cancelled"})
                self.send({"method": "test/cancelled", "params": {"id": cancelled}})
        elif request_id is not None:
            self.answer(request_id, error={"code": -32601, "message": f"no method {method}"})
        return True


def main() -> None:
    server = Server(sys.argv[1:])
    if "--stubborn" in server.flags:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "--grandchild" in server.flags:
        subprocess.Popen([sys.executable, "-c", "import threading; threading.Event().wait()"], stdin=subprocess.DEVNULL)
    sys.stderr.write("fake server ready\n")
    sys.stderr.flush()
    stdin = sys.stdin.buffer
    while True:
        body = read_message(stdin)
        if body is None:
            break
        if body and not server.handle(json.loads(body)):
            return
    if {"--stubborn", "--slow-exit"} & server.flags:
        threading.Event().wait()  # end of input changes nothing: only a signal ends it


if __name__ == "__main__":
    main()
