"""The baseline of a tool server's start-up: a bare-Python line echo server (stdlib ``json`` only).

One JSON-RPC request per line on stdin, answered on stdout with its
``params.text`` as the result (what ``echo`` of the example tool server
answers); exits at end of input.  :func:`benchmarks.cases.startup_cases`
times its first answer against a tool server written on
:mod:`jsonrpc_threads.server`.
"""

import json
import sys

for line in sys.stdin:
    request = json.loads(line)
    answer = {"jsonrpc": "2.0", "id": request.get("id"), "result": request["params"]["text"]}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
