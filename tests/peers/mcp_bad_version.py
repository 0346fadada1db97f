"""A tiny hand-written MCP peer over stdio that speaks a protocol revision nobody knows.

Standard library only.  It answers ``initialize`` with ``protocolVersion``
``"1999-01-01"`` (or the first argument), every other request with an empty
result, and exits at end of input.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    version = sys.argv[1] if len(sys.argv) > 1 else "1999-01-01"
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue
        result = {}
        if message["method"] == "initialize":
            result = {
                "protocolVersion": version,
                "capabilities": {},
                "serverInfo": {"name": "bad-version-peer", "version": "0"},
            }
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
