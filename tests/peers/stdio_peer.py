"""A JSON-RPC 2.0 peer over stdio for tests: well-behaved or faulty on demand.

Standard library only (it must not import jsonrpc_threads).  Run it as::

    [sys.executable, "tests/peers/stdio_peer.py", *flags]

One JSON text per line on stdin and stdout (UTF-8, written with
``ensure_ascii=False`` so U+2028 travels raw).  Each request runs in its own
thread, so a slow one does not hold up the others; writes are serialized and
flushed.  Batches (JSON arrays) are answered with one array.  Notifications are
never answered, only recorded (see ``notifications_log``).  Responses from the
client are routed to the ``reverse_call`` waiting for them.  On stdin EOF the
peer exits at once with status 0 (``os._exit``), unless ``--ignore-sigterm``.

Methods (result in parentheses):

- ``echo`` (the params as given), ``add`` [a, b] (a + b), ``pid`` (its pid),
  ``env`` (its environment), ``cwd`` (its working directory)
- ``sleep`` {"seconds": s, "result": x} (x, after s seconds)
- ``never`` (never answers)
- ``exit`` {"code": n, "stderr": "msg", "notes": k} (sends k notifications ``note``
  {"n": i}, writes msg to stderr, exits n, no answer)
- ``notify`` {"method": m, "params": p, "count": n} (sends n notifications, then n)
- ``reverse_call`` {"method": m, "params": p} (sends request "peer-<k>" to the
  client, then answers {"result": ...} or {"error": ...} as it came back)
- ``garbage`` (writes ``this is not json`` and ``{"jsonrpc": "2.0"}``, then "ok")
- ``oversized`` {"bytes": n, "response": false} (writes a notification
  ``oversized`` of about n bytes, then "ok"; with "response": true the answer
  itself is a string of n bytes instead; with "result_first": true the answer
  holds n bytes and is written as the TypeScript SDK orders it, ``result``
  before ``id``, its result holding an object with the id "nested_id")
- ``stderr_flood`` {"bytes": n} (n bytes of 100-byte lines on stderr, then the
  line ``stderr flood done``, then n)
- ``spawn_grandchild`` {"new_session": bool} (starts ``sleep(3600)`` in a
  grandchild that inherits stdout and stderr; its pid)
- ``wrong_id`` (first an answer with id + 1000, or "x" + id for a string id,
  then the right one with "ok")
- ``duplicate`` (answers twice: "first", then "second")
- ``wrong_id_type`` {"as": "string"|"true"|"float"} (first an answer whose id has
  the wrong type but may compare equal in Python: "1" for 1, true for 1, 1.0
  for 1; then the right one with "ok")
- ``stall`` (stops reading stdin for good: the client's writes block; no answer)
- ``pause_reading`` {"seconds": s} (stops reading stdin for s seconds, then answers
  "resumed" and reads on)
- ``raw_write`` {"hex": [h, ...]} (writes each hex-encoded chunk to stdout as is,
  one flushed write each, no newline added; no answer)
- ``notifications_log`` {"wait_for": n, "timeout": s} (every notification received:
  [{"method", "params"}], once at least n arrived or the timeout passed)
- ``unicode`` ("line\\u2028sep\\u2029para \\U0001F600 é" followed by the params:
  a list of strings is joined, an object's "text" appended)
- anything else: error -32601.

Flags:

- ``--ignore-sigterm``: ignore SIGTERM, and keep running after stdin EOF;
- ``--exit-at-start CODE``: write ``dying at start`` to stderr, exit CODE;
- ``--close-stdout``: close stdout at start (nothing is ever answered), keep
  reading stdin until EOF;
- ``--no-newline``: write messages without the trailing newline;
- ``--spawn-grandchild-at-start``: start a grandchild (as ``spawn_grandchild``)
  before reading anything; ``grandchild=<pid>`` goes to stderr.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional

GRANDCHILD_CODE = "import time; time.sleep(3600)"
REVERSE_CALL_TIMEOUT_S = 60.0
UNICODE_TEXT = "line\u2028sep\u2029para \U0001f600 é"
NO_ANSWER = object()
#: Grandchildren started, kept so that no Popen is collected while running.
GRANDCHILDREN: List[subprocess.Popen] = []  # type: ignore[type-arg]


class PeerError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class Peer:
    def __init__(self, *, newline: bool, stdout_open: bool) -> None:
        self.out = sys.stdout.buffer
        self.newline = b"\n" if newline else b""
        self.stdout_open = stdout_open
        self.write_lock = threading.Lock()
        self.state_lock = threading.Lock()  # guards notifications, waiting
        self.notified = threading.Condition(self.state_lock)
        self.notifications: List[Dict[str, Any]] = []
        self.waiting: Dict[str, Dict[str, Any]] = {}
        self.reverse_ids = itertools.count(1)

    # -- output --------------------------------------------------------------

    def write_raw(self, data: bytes) -> None:
        if not self.stdout_open:
            return
        with self.write_lock:
            try:
                self.out.write(data + self.newline)
                self.out.flush()
            except (OSError, ValueError):
                os._exit(0)  # the client is gone

    def send(self, message: Any) -> None:
        self.write_raw(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))

    # -- input ---------------------------------------------------------------

    def serve(self, ignore_eof: bool) -> None:
        for line in sys.stdin.buffer:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
                continue
            if isinstance(message, list):
                threading.Thread(target=self.handle_batch, args=(message,), daemon=True).start()
            else:
                self.dispatch(message)
        if ignore_eof:
            threading.Event().wait()
        os._exit(0)

    def dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            self.send(invalid_request(None))
        elif message.get("method") == "stall" and "id" in message:
            threading.Event().wait()  # stop reading stdin for good (never answered)
        elif message.get("method") == "pause_reading" and "id" in message:
            # Stop reading stdin for a while (the client's writes queue up), then answer.
            time.sleep(float((message.get("params") or {}).get("seconds", 1.0)))
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": "resumed"})
        elif "method" in message and "id" in message:
            threading.Thread(target=self.answer, args=(message,), daemon=True).start()
        elif "method" in message:
            with self.state_lock:
                self.notifications.append({"method": message["method"], "params": message.get("params")})
                self.notified.notify_all()
        elif "result" in message or "error" in message:
            with self.state_lock:
                slot = self.waiting.get(str(message.get("id")))
            if slot is not None:
                slot["message"] = message
                slot["event"].set()
        else:
            self.send(invalid_request(message.get("id")))

    def answer(self, message: Dict[str, Any]) -> None:
        response = self.respond(message)
        if response is not None:
            self.send(response)

    def handle_batch(self, batch: List[Any]) -> None:
        if not batch:
            self.send(invalid_request(None))
            return
        responses: List[Optional[Dict[str, Any]]] = [None] * len(batch)

        def run(index: int, item: Any) -> None:
            responses[index] = self.respond(item)

        threads = []
        for index, item in enumerate(batch):
            if isinstance(item, dict) and "method" in item and "id" in item:
                thread = threading.Thread(target=run, args=(index, item), daemon=True)
                thread.start()
                threads.append(thread)
            elif isinstance(item, dict) and "method" in item:
                self.dispatch(item)
            else:
                responses[index] = invalid_request(item.get("id") if isinstance(item, dict) else None)
        for thread in threads:
            thread.join()
        answers = [response for response in responses if response is not None]
        if answers:
            self.send(answers)

    def respond(self, message: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        request_id = message["id"]
        handler = getattr(self, "m_" + str(message["method"]), None)
        try:
            if handler is None:
                raise PeerError(-32601, "Method not found", {"method": message["method"]})
            result = handler(message.get("params"), request_id)
        except PeerError as exc:
            error: Dict[str, Any] = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
            return {"jsonrpc": "2.0", "id": request_id, "error": error}
        except Exception as exc:
            return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": repr(exc)}}
        if result is NO_ANSWER:
            return None
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    # -- methods -------------------------------------------------------------

    def m_echo(self, params: Any, request_id: Any) -> Any:
        return params

    def m_add(self, params: Any, request_id: Any) -> Any:
        if not isinstance(params, list) or len(params) != 2:
            raise PeerError(-32602, "Invalid params", {"expected": "[a, b]"})
        return params[0] + params[1]

    def m_pid(self, params: Any, request_id: Any) -> Any:
        return os.getpid()

    def m_env(self, params: Any, request_id: Any) -> Any:
        return dict(os.environ)

    def m_cwd(self, params: Any, request_id: Any) -> Any:
        return os.getcwd()

    def m_sleep(self, params: Any, request_id: Any) -> Any:
        params = params or {}
        time.sleep(float(params.get("seconds", 0)))
        return params.get("result")

    def m_never(self, params: Any, request_id: Any) -> Any:
        threading.Event().wait()
        return NO_ANSWER

    def m_exit(self, params: Any, request_id: Any) -> Any:
        params = params or {}
        for number in range(int(params.get("notes", 0))):
            self.send({"jsonrpc": "2.0", "method": "note", "params": {"n": number}})
        text = params.get("stderr")
        if text:
            sys.stderr.write(text if text.endswith("\n") else text + "\n")
            sys.stderr.flush()
        os._exit(int(params.get("code", 0)))

    def m_notify(self, params: Any, request_id: Any) -> Any:
        params = params or {}
        count = int(params.get("count", 1))
        note: Dict[str, Any] = {"jsonrpc": "2.0", "method": params.get("method", "note")}
        if params.get("params") is not None:
            note["params"] = params["params"]
        for _ in range(count):
            self.send(note)
        return count

    def m_reverse_call(self, params: Any, request_id: Any) -> Any:
        params = params or {}
        peer_id = f"peer-{next(self.reverse_ids)}"
        slot: Dict[str, Any] = {"event": threading.Event()}
        with self.state_lock:
            self.waiting[peer_id] = slot
        request: Dict[str, Any] = {"jsonrpc": "2.0", "id": peer_id, "method": params.get("method", "ping")}
        if params.get("params") is not None:
            request["params"] = params["params"]
        self.send(request)
        arrived = slot["event"].wait(REVERSE_CALL_TIMEOUT_S)
        with self.state_lock:
            del self.waiting[peer_id]
        if not arrived:
            raise PeerError(-32000, "no response to the reverse call")
        response = slot["message"]
        if "error" in response:
            return {"error": response["error"]}
        return {"result": response.get("result")}

    def m_garbage(self, params: Any, request_id: Any) -> Any:
        self.write_raw(b"this is not json")
        self.write_raw(b'{"jsonrpc": "2.0"}')
        return "ok"

    def m_oversized(self, params: Any, request_id: Any) -> Any:
        params = params or {}
        size = int(params.get("bytes", 1024 * 1024))
        if params.get("result_first"):
            content = {"type": "text", "text": "x" * size, "id": params.get("nested_id")}
            self.send({"result": {"content": [content]}, "jsonrpc": "2.0", "id": request_id})
            return NO_ANSWER
        if params.get("response"):
            return "x" * size
        self.send({"jsonrpc": "2.0", "method": "oversized", "params": {"data": "x" * size}})
        return "ok"

    def m_stderr_flood(self, params: Any, request_id: Any) -> Any:
        size = int((params or {}).get("bytes", 1024 * 1024))
        line = b"stderr flood " + b"." * 86 + b"\n"  # 100 bytes
        block = line * 655  # 65500 bytes
        err = sys.stderr.buffer
        left = size
        while left > 0:
            piece = block[:left]
            err.write(piece)
            left -= len(piece)
        err.write(b"stderr flood done\n")
        err.flush()
        return size

    def m_spawn_grandchild(self, params: Any, request_id: Any) -> Any:
        return spawn_grandchild(bool((params or {}).get("new_session", False)))

    def m_wrong_id(self, params: Any, request_id: Any) -> Any:
        wrong = request_id + 1000 if isinstance(request_id, int) else "x" + str(request_id)
        self.send({"jsonrpc": "2.0", "id": wrong, "result": "wrong"})
        return "ok"

    def m_duplicate(self, params: Any, request_id: Any) -> Any:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": "first"})
        self.send({"jsonrpc": "2.0", "id": request_id, "result": "second"})
        return NO_ANSWER

    def m_wrong_id_type(self, params: Any, request_id: Any) -> Any:
        self.send({"jsonrpc": "2.0", "id": wrong_id_type(request_id, (params or {}).get("as")), "result": "wrong"})
        return "ok"

    def m_raw_write(self, params: Any, request_id: Any) -> Any:
        with self.write_lock:
            for chunk in (params or {}).get("hex", []):
                self.out.write(bytes.fromhex(chunk))
                self.out.flush()
        return NO_ANSWER

    def m_notifications_log(self, params: Any, request_id: Any) -> Any:
        # {"wait_for": n, "timeout": s} waits (bounded) until n notifications arrived.
        wanted = params.get("wait_for", 0) if isinstance(params, dict) else 0
        timeout = params.get("timeout", 5.0) if isinstance(params, dict) else 0
        with self.state_lock:
            self.notified.wait_for(lambda: len(self.notifications) >= wanted, timeout)
            return list(self.notifications)

    def m_unicode(self, params: Any, request_id: Any) -> Any:
        if isinstance(params, list):
            return UNICODE_TEXT + "".join(str(item) for item in params)
        if isinstance(params, dict):
            return UNICODE_TEXT + str(params.get("text", ""))
        return UNICODE_TEXT


def invalid_request(request_id: Any) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32600, "message": "Invalid Request"}}


def wrong_id_type(request_id: Any, kind: Any) -> Any:
    """``request_id`` in another JSON type: "1" for 1 (or 1 for "1"), true, or 1.0."""
    if kind == "true":
        return True
    if kind == "float":
        return float(request_id) if isinstance(request_id, int) else 1.0
    if isinstance(request_id, int):
        return str(request_id)
    return int(request_id) if str(request_id).isdigit() else 0


def spawn_grandchild(new_session: bool) -> int:
    # Inherits stdout and stderr, as helpers of real servers often do: the
    # client sees end of stream only once the grandchild is gone too.
    proc = subprocess.Popen(
        [sys.executable, "-c", GRANDCHILD_CODE], stdin=subprocess.DEVNULL, start_new_session=new_session
    )
    GRANDCHILDREN.append(proc)
    return proc.pid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ignore-sigterm", action="store_true")
    parser.add_argument("--exit-at-start", type=int, default=None, metavar="CODE")
    parser.add_argument("--close-stdout", action="store_true")
    parser.add_argument("--no-newline", action="store_true")
    parser.add_argument("--spawn-grandchild-at-start", action="store_true")
    args = parser.parse_args()

    if args.exit_at_start is not None:
        sys.stderr.write("dying at start\n")
        sys.stderr.flush()
        os._exit(args.exit_at_start)
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.spawn_grandchild_at_start:
        sys.stderr.write(f"grandchild={spawn_grandchild(False)}\n")
        sys.stderr.flush()
    if args.close_stdout:
        # Point fd 1 at /dev/null: the pipe's write end closes, and fd 1 is not
        # free for a later open() to take.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    peer = Peer(newline=not args.no_newline, stdout_open=not args.close_stdout)
    peer.serve(ignore_eof=args.ignore_sigterm)


if __name__ == "__main__":
    main()
