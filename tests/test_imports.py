"""Start-up costs nothing: importing the package loads no HTTP stack and no psutil.

Each check runs in a fresh interpreter (``python -c ...``), which imports one
thing and prints the heavy modules it finds in ``sys.modules``.  The public
names stay importable from ``jsonrpc_threads`` (lazily, on first use) and are
all listed in ``__all__``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import List

import pytest

import jsonrpc_threads

#: Modules a stdio-only program, or a tool server, must not pay for.
HEAVY = ("requests", "urllib3", "sseclient", "psutil", "jsonrpc_threads.transports.http")
#: Seconds one fresh interpreter may take.
RUN_TIMEOUT_S = 60.0

PROBE = """
import json, sys
{statement}
heavy = {heavy!r}
print(json.dumps(sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))))
"""


def loaded_after(statement: str, heavy: tuple = HEAVY) -> List[str]:
    """The heavy modules in ``sys.modules`` of a fresh interpreter after ``statement``."""
    completed = subprocess.run(
        [sys.executable, "-c", PROBE.format(statement=statement, heavy=heavy)],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    modules: List[str] = json.loads(completed.stdout)
    return modules


@pytest.mark.parametrize(
    "statement",
    [
        "import jsonrpc_threads",
        "import jsonrpc_threads.server",
        "from jsonrpc_threads import JsonRpcClient, JsonRpcError, RequestTimeout, TransportClosed, __version__",
        "from jsonrpc_threads.server import serve, notify",
        "import jsonrpc_threads.examples.tool_server",
        "import jsonrpc_threads.wsgi",
        "import jsonrpc_threads.observe",
    ],
)
def test_importing_loads_no_http_stack_and_no_psutil(statement: str) -> None:
    assert loaded_after(statement) == []


#: Standard-library modules a tool server does without: each costs its start-up a few
#: hundred microseconds (json, threading and contextvars are all it needs).
STDLIB_A_TOOL_SERVER_SKIPS = ("typing", "logging", "math", "collections.abc", "dataclasses", "inspect", "traceback")


def test_a_tool_server_skips_the_standard_library_modules_it_does_not_need() -> None:
    assert loaded_after("import jsonrpc_threads.examples.tool_server", STDLIB_A_TOOL_SERVER_SKIPS) == []


def test_a_stdio_client_loads_no_http_stack() -> None:
    assert loaded_after("from jsonrpc_threads import JsonRpcClient, StdioTransport", HEAVY[:3] + HEAVY[4:]) == []


def test_a_stdio_client_loads_psutil_only_when_it_reclaims_a_process_tree() -> None:
    assert loaded_after("from jsonrpc_threads import JsonRpcClient, StdioTransport") == []


def test_transport_from_config_loads_the_http_stack_only_for_a_url() -> None:
    statement = "from jsonrpc_threads import transport_from_config"
    assert loaded_after(statement, ("requests", "urllib3", "sseclient", "jsonrpc_threads.transports.http")) == []


def test_http_names_are_imported_on_first_use() -> None:
    modules = loaded_after("from jsonrpc_threads import HttpTransport", ("requests", "jsonrpc_threads.transports.http"))
    assert modules[0] == "jsonrpc_threads.transports.http" and "requests" in modules


def test_every_public_name_is_importable_and_listed() -> None:
    for name in jsonrpc_threads.__all__:
        assert getattr(jsonrpc_threads, name) is not None, name
    assert set(jsonrpc_threads.__all__) <= set(dir(jsonrpc_threads))
    namespace: dict = {}
    exec("from jsonrpc_threads import *", namespace)  # noqa: S102  (the star import itself is the test)
    assert set(jsonrpc_threads.__all__) <= set(namespace)
    from jsonrpc_threads.client import JsonRpcClient  # noqa: PLC0415
    from jsonrpc_threads.transports.http import HttpTransport  # noqa: PLC0415

    assert jsonrpc_threads.JsonRpcClient is JsonRpcClient and jsonrpc_threads.HttpTransport is HttpTransport


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        jsonrpc_threads.no_such_name  # noqa: B018
    with pytest.raises(ImportError):
        exec("from jsonrpc_threads import no_such_name", {})  # noqa: S102
