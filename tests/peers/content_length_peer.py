"""A JSON-RPC peer framed with Content-Length headers, as language servers are (stdlib only).

Answers ``echo`` with its params and anything else with -32601; a line on
stderr at start (``content-length peer ready``), so tests can see it in the
transport's stderr tail.  Exits at end of input.
"""

import json
import sys

from content_length_framing import read_message  # beside this file: the script's own directory is on sys.path


def send(stream, message):  # type: ignore[no-untyped-def]
    body = json.dumps(message).encode("utf-8")
    stream.write(b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" % len(body))
    stream.write(body)
    stream.flush()


def main() -> None:
    sys.stderr.write("content-length peer ready\n")
    sys.stderr.flush()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        body = read_message(stdin)
        if body is None:
            return
        message = json.loads(body)
        if "id" not in message:
            continue
        if message.get("method") == "echo":
            send(stdout, {"jsonrpc": "2.0", "id": message["id"], "result": message.get("params")})
        else:
            send(stdout, {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}})


if __name__ == "__main__":
    main()
