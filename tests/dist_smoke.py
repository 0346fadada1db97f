"""The smoke test of a built package, run by ``make dist`` inside a fresh venv.

Usage: ``<venv>/bin/python tests/dist_smoke.py CHECKOUT`` from a directory
outside the checkout, so that the installed copy (not the source tree) runs.
It checks the version against the checkout's ``_version.py``, that the package
was installed (not found in the checkout), that ``py.typed`` ships, that the
console script answers ``--version``, that the example skills ship (the
conformance fixture serves them), and one call to the bundled tool server.
Exit code 0 when everything holds.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

#: Seconds the console script and the tool server may take.
RUN_TIMEOUT_S = 60.0


def main(checkout: str) -> int:
    source = Path(checkout, "jsonrpc_threads", "_version.py").read_text(encoding="utf-8")
    expected = ast.literal_eval(source.split("__version__ =", 1)[1].strip().splitlines()[0])

    import jsonrpc_threads  # noqa: PLC0415  (after sys.path is what the venv gives)
    from jsonrpc_threads import JsonRpcClient, StdioTransport  # noqa: PLC0415

    location = Path(jsonrpc_threads.__file__).resolve()
    assert Path(sys.prefix).resolve() in location.parents, f"not the installed copy: {location}"
    assert location.parent != Path(checkout, "jsonrpc_threads").resolve(), f"imported from the checkout: {location}"
    assert jsonrpc_threads.__version__ == expected, (jsonrpc_threads.__version__, expected)
    assert (location.parent / "py.typed").is_file(), "py.typed is missing"

    script = Path(sys.executable).with_name("jsonrpc-threads")
    shown = subprocess.run(
        [str(script), "--version"], capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=True
    ).stdout.strip()
    assert shown == f"jsonrpc-threads {expected}", shown

    from jsonrpc_threads.examples import conformance_server  # noqa: PLC0415  (it serves the packaged skills)

    manifest = conformance_server.SKILLS_DIR / "release-notes" / "SKILL.md"
    assert manifest.is_file() and location.parent in manifest.parents, f"the example skill is missing: {manifest}"

    server = [sys.executable, "-m", "jsonrpc_threads.examples.tool_server"]
    with JsonRpcClient(StdioTransport(server), default_timeout=RUN_TIMEOUT_S) as client:
        assert client.call("add", {"a": 2, "b": 3}) == 5
    print(f"smoke test passed: jsonrpc_threads {expected} from {location.parent} ({os.path.basename(sys.prefix)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
