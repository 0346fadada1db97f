"""Security properties: no shell, a minimal child environment, bounded messages, no secret in a
log line, no traceback on the wire, no redirect followed.

Against real peers: ``tests/peers/stdio_peer.py`` and small ``serve()`` scripts as child
processes, ``tests/peers/http_peer.py`` on 127.0.0.1 (in a thread, or as a child process
where memory is measured, so that only the client's allocations count).
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple
from urllib.parse import urlsplit

import pytest
import requests

from jsonrpc_threads import (
    HttpError,
    HttpTransport,
    InternalError,
    JsonRpcClient,
    MessageTooLarge,
    SseTransport,
    StdioTransport,
    transport_from_config,
)
from jsonrpc_threads.a2a import A2aClient
from jsonrpc_threads.a2a.card import Origins, choose_interface, origin_of
from jsonrpc_threads.auth import CrossAppAccess, OAuth, WorkloadIdentity
from jsonrpc_threads.auth._context import Trigger
from jsonrpc_threads.auth._metadata import origin, resource_matches
from jsonrpc_threads.errors import ProtocolError
from jsonrpc_threads.mcp import McpClient, ToolRegistry
from jsonrpc_threads.mcp.config import load_config
from jsonrpc_threads.transports.config import parse_entry
from jsonrpc_threads.transports.redact import LogScope, Secrets, install_log_filter
from jsonrpc_threads.transports.stdio import DEFAULT_ENV_ALLOWLIST

from .conftest import PEERS_DIR, peer_command
from .peers.http_peer import HttpPeer, HttpPeerProcess
from .wsgi_support import WsgirefServer

PACKAGE = Path(__file__).resolve().parent.parent / "jsonrpc_threads"
REPO = PACKAGE.parent
WAIT_S = 10.0


@pytest.fixture
def peer() -> Iterator[HttpPeer]:
    server = HttpPeer().start()
    try:
        yield server
    finally:
        server.close()


# -- no shell anywhere ---------------------------------------------------------------------------

#: Calls that run a command line through a shell.
SHELL_CALLS = {
    ("os", "system"),
    ("os", "popen"),
    ("subprocess", "getoutput"),
    ("subprocess", "getstatusoutput"),
    ("asyncio", "create_subprocess_shell"),
    ("pty", "spawn"),
}


def shell_uses(source: str, filename: str = "<source>") -> List[str]:
    """Every use of a shell in ``source``: ``shell=`` anything but ``False``, and the calls above."""
    found = []
    tree = ast.parse(source, filename)
    for node in ast.walk(tree):
        where = f"{filename}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.keyword) and node.arg == "shell":
            if not (isinstance(node.value, ast.Constant) and node.value.value is False):
                found.append(f"{where}: shell={ast.unparse(node.value)}")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in SHELL_CALLS:
                found.append(f"{where}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            for alias in node.names:
                if (node.module, alias.name) in SHELL_CALLS:
                    found.append(f"{where}: from {node.module} import {alias.name}")
    return found


def test_the_shell_detector_detects() -> None:
    source = textwrap.dedent(
        """
        import os, subprocess
        from os import system
        subprocess.run("ls", shell=True)
        subprocess.Popen(["ls"], shell=flag)
        os.system("ls")
        os.popen("ls")
        subprocess.run(["ls"], shell=False)  # fine
        """
    )
    assert len(shell_uses(source)) == 5


def test_no_shell_anywhere_in_the_package() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 10
    found = [use for path in files for use in shell_uses(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))]
    assert found == []


# -- the child's environment ----------------------------------------------------------------------

SECRETS = {
    "JSONRPC_TEST_API_KEY": "s3cret-api-key",
    "AWS_SECRET_ACCESS_KEY": "s3cret-aws",
    "GITHUB_TOKEN": "s3cret-gh",
    "OPENAI_API_KEY": "s3cret-openai",
}
#: Variables that change what a child process runs: never passed on implicitly.
DANGEROUS = (
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "DYLD_INSERT_LIBRARIES",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "NODE_OPTIONS",
    "BASH_ENV",
    "ENV",
    "PERL5OPT",
    "RUBYOPT",
)


def child_env(entry_or_transport: Any) -> Dict[str, str]:
    transport = (
        entry_or_transport
        if isinstance(entry_or_transport, StdioTransport)
        else transport_from_config(entry_or_transport)
    )
    with JsonRpcClient(transport) as client:
        return client.call("env", timeout=WAIT_S)  # type: ignore[no-any-return]


def test_allowlist_holds_no_secret_and_nothing_that_changes_what_runs() -> None:
    for name in DEFAULT_ENV_ALLOWLIST:
        assert not any(word in name.upper() for word in ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"))
    assert not set(DANGEROUS) & set(DEFAULT_ENV_ALLOWLIST)


def test_parent_secrets_stay_behind_unless_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PYTHONPATH", "/nonexistent/injected")
    monkeypatch.setenv("NODE_OPTIONS", "--require /nonexistent/injected.js")
    entry = {"command": sys.executable, "args": [str(PEERS_DIR / "stdio_peer.py")]}

    env = child_env(entry)  # the mcp.json way
    assert not set(SECRETS) & set(env)
    assert "PYTHONPATH" not in env and "NODE_OPTIONS" not in env
    assert env["PATH"] == os.environ["PATH"]

    env = child_env(dict(entry, env={"JSONRPC_TEST_API_KEY": "passed-on-purpose"}))
    assert env["JSONRPC_TEST_API_KEY"] == "passed-on-purpose"
    assert not (set(SECRETS) - {"JSONRPC_TEST_API_KEY"}) & set(env)

    env = child_env(StdioTransport(peer_command("stdio_peer"), inherit_env=True))
    assert all(env[name] == value for name, value in SECRETS.items())


def test_an_allowlisted_variable_holding_a_shell_function_is_not_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "() { :; }; echo pwned")  # the Shellshock form
    env = child_env(StdioTransport(peer_command("stdio_peer")))
    assert "TERM" not in env


# -- message size limits on every path ---------------------------------------------------------------

LIMIT = 1024 * 1024
HUGE = 32 * LIMIT
#: The most the client may allocate at once while refusing a message of HUGE bytes.
PEAK_MAX = 6 * LIMIT


def peak_while(action: Any) -> Tuple[Optional[BaseException], int]:
    """Run ``action()``; return what it raised and the peak of memory allocated meanwhile."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        error: Optional[BaseException] = None
        try:
            action()
        except Exception as exc:
            error = exc
        return error, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def assert_clear_too_large(error: Optional[BaseException], limit: int, what: str) -> None:
    assert isinstance(error, MessageTooLarge), repr(error)
    assert error.limit == limit
    assert f"{what} larger than the limit of {limit} bytes" in str(error)


def test_stdio_line_over_the_limit_is_refused_without_being_held(caplog: pytest.LogCaptureFixture) -> None:
    with JsonRpcClient(StdioTransport(peer_command("stdio_peer"), max_line_bytes=LIMIT)) as client:
        error, peak = peak_while(lambda: client.call("oversized", {"bytes": HUGE, "response": True}, timeout=WAIT_S))
        assert_clear_too_large(error, LIMIT, "response")
        assert peak < PEAK_MAX, f"{peak} bytes allocated for a line that was refused"
        assert f"over the limit of {LIMIT} bytes (max_line_bytes)" in caplog.text
        assert client.call("echo", ["still fine"], timeout=WAIT_S) == ["still fine"]


def test_stdio_an_oversized_answer_with_its_result_before_its_id_fails_its_request_at_once() -> None:
    # Issue 37, item 5: the TypeScript SDK writes "result" before "id"; the result holds an "id" too,
    # that of another pending request, which must not be failed in its place.
    with JsonRpcClient(StdioTransport(peer_command("stdio_peer"), max_line_bytes=LIMIT)) as client:
        innocent = client.request("never", timeout=None)
        started = time.monotonic()
        params = {"bytes": 4 * LIMIT, "result_first": True, "nested_id": innocent.request_id}
        with pytest.raises(MessageTooLarge):
            client.call("oversized", params, timeout=WAIT_S / 2)
        assert time.monotonic() - started < WAIT_S / 2  # at once, not at its deadline
        assert not innocent.done()
        assert client.call("echo", ["still fine"], timeout=WAIT_S) == ["still fine"]
        assert innocent.cancel()


@pytest.mark.parametrize(
    ("how", "what"),
    [("content-length", "HTTP answer body"), ("chunked", "HTTP answer body"), ("sse", "SSE event")],
)
def test_http_message_over_the_limit_is_refused_without_being_held(how: str, what: str) -> None:
    chunk = "x" * 65536
    if how == "content-length":
        method, params = "oversized", {"bytes": HUGE, "response": True}
    elif how == "chunked":
        method, params = "raw_answer", {"chunks": [chunk], "repeat": HUGE // len(chunk)}
    else:
        method, params = (
            "raw_answer",
            {"content_type": "text/event-stream", "chunks": ["data: " + chunk + "\n"], "repeat": HUGE // len(chunk)},
        )
    with HttpPeerProcess() as server, JsonRpcClient(HttpTransport(server.url, max_message_bytes=LIMIT)) as client:
        error, peak = peak_while(lambda: client.call(method, params, timeout=WAIT_S))
        assert_clear_too_large(error, LIMIT, what)
        assert peak < PEAK_MAX, f"{peak} bytes allocated for an answer that was refused"
        assert client.call("echo", ["still fine"], timeout=WAIT_S) == ["still fine"]


def test_listen_stream_event_over_the_limit_ends_that_stream_with_a_warning(
    peer: HttpPeer, caplog: pytest.LogCaptureFixture
) -> None:
    transport = HttpTransport(peer.url, max_message_bytes=10_000)
    with JsonRpcClient(transport) as client:
        transport.open_listen_stream(wait=WAIT_S)
        listener = next(t for t in threading.enumerate() if t.name.startswith("jsonrpc-http-listen["))
        peer.push({"jsonrpc": "2.0", "method": "note", "params": {"data": "x" * 50_000}})
        listener.join(WAIT_S)
        assert not listener.is_alive()
        assert peer.listen_count == 1  # not reopened: the next event would be just as large
        assert "SSE event larger than the limit of 10000 bytes" in caplog.text
        assert client.call("echo", [1]) == [1]


# -- no secret in any log line ---------------------------------------------------------------------------


class _HeaderAuth(requests.auth.AuthBase):
    def __init__(self, value: str) -> None:
        self.value = value

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self.value}"
        return request


def test_no_secret_in_any_log_record_across_a_full_exchange(peer: HttpPeer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # every logger: ours, requests', urllib3's
    secret = {
        "static": "S3CRET-static-bearer",
        "auth": "S3CRET-auth-object",
        "apikey": "S3CRET-api-key",
        "cookie": "S3CRET-cookie",
        "provider": "S3CRET-provider-token",
        "set-cookie": "S3CRET-set-cookie",
        "userinfo": "S3CRET-password",
        "location": "S3CRET-in-location",
        "query": "S3CRET-query-token",
    }
    url = peer.url_with("session", "sse", "priming", "cut", retry=20).replace(
        "127.0.0.1", f"user:{secret['userinfo']}@127.0.0.1"
    )
    url += f"&token={secret['query']}"  # some servers take their token in the query string
    transport = HttpTransport(
        url,
        headers={
            "Authorization": f"Bearer {secret['static']}",
            "X-Api-Key": secret["apikey"],
            "Cookie": f"c={secret['cookie']}",
        },
        header_provider=lambda: {"X-Upstream-Token": secret["provider"]},
        read_timeout=0.5,
    )
    with JsonRpcClient(transport, default_timeout=WAIT_S) as client:
        client.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}})
        transport.open_listen_stream(wait=WAIT_S)
        client.notify("notifications/initialized")
        assert client.call("echo", ["resumed"]) == ["resumed"]  # cut, then resumed with Last-Event-ID
        cookie = {
            "headers": {"Set-Cookie": f"sid={secret['set-cookie']}; HttpOnly"},
            "chunks": ['{"jsonrpc": "2.0", "id": {id}, "result": 1}'],
        }
        assert client.call("raw_answer", cookie) == 1
        redirect = {
            "status": 307,
            "headers": {"Location": f"http://127.0.0.2/x?token={secret['location']}"},
            "chunked": False,
        }
        failures = [
            ("fault", {"kind": "500"}),
            ("fault", {"kind": "400"}),
            ("fault", {"kind": "reset"}),
            (
                "raw_answer",
                {"status": 401, "headers": {"WWW-Authenticate": 'Bearer error="invalid_token"'}, "chunks": ["no"]},
            ),
            ("raw_answer", redirect),
            ("raw_answer", {"chunks": ['{"jsonrpc": '], "then": "stall"}),  # read timeout
        ]
        for method, params in failures:
            with pytest.raises(HttpError):
                client.call(method, params)
        with pytest.raises(HttpError):
            client.notify("fault", {"kind": "500"})
    # the secrets did travel (so their absence from the logs means something)
    assert peer.records_for("echo")[0].query["token"] == [secret["query"]]
    sent = peer.records_for("echo")[0].headers
    assert sent["authorization"].startswith("Basic ") or secret["static"] in sent["authorization"]
    assert peer.deleted_sessions
    leaked = []
    for record in caplog.records:
        texts = [record.getMessage(), repr(record.args), record.exc_text or ""]
        if record.exc_info:
            texts.append(logging.Formatter().formatException(record.exc_info))
        for name, value in secret.items():
            if any(value in text for text in texts):
                leaked.append((name, record.name, record.getMessage()[:200]))
    assert leaked == []
    assert any("<redacted>" in record.getMessage() for record in caplog.records)
    # urllib3 wrote its request lines (path and query) for our requests, redacted
    request_lines = [
        r.getMessage() for r in caplog.records if r.name == "urllib3.connectionpool" and '"POST ' in r.getMessage()
    ]
    assert request_lines and all("?<redacted>" in line for line in request_lines)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_process_forked_while_the_log_filter_was_being_installed_can_install_it() -> None:
    # A thread holds the install lock at the fork: without the lock made anew in the child
    # (registered with _fork.at_fork_in_child), the child's first transport would deadlock.
    script = textwrap.dedent(
        f"""
        import os, signal, sys, threading, warnings
        warnings.simplefilter("ignore", DeprecationWarning)
        sys.path.insert(0, {str(REPO)!r})
        from jsonrpc_threads.transports import redact
        held, release = threading.Event(), threading.Event()

        def hold():
            with redact._install_lock:
                held.set()
                release.wait(30)

        holder = threading.Thread(target=hold)
        holder.start()
        held.wait(30)
        pid = os.fork()
        if pid == 0:
            signal.alarm(10)  # a deadlocked child dies of SIGALRM
            redact.install_log_filter()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        release.set()
        holder.join()
        print("child:", "installed" if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else status)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "child: installed" in done.stdout, done.stdout + done.stderr


def _log_with_its_stack(logger: logging.Logger) -> None:
    # This line is in the stack text the record carries, and with it the secret it names.
    logger.debug("a line with its stack", stack_info=bool("tok-S3CRET-in-the-stack"))


def test_the_traceback_and_the_stack_of_a_record_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    """The secrets rule holds for a record's ``exc_info`` and ``stack_info``, not only its message (issue 46)."""
    caplog.set_level(logging.DEBUG)
    install_log_filter()
    url = "http://127.0.0.1:1/mcp?api_key=tok-S3CRET-in-the-stack&sig=S3CRET-in-the-traceback"
    logger = logging.getLogger("urllib3.connectionpool")
    with LogScope(Secrets(url, {})):
        try:
            raise ValueError(f"the exchange with {url.split('?')[1]} failed")
        except ValueError:
            logger.debug("an exchange failed", exc_info=True)
        _log_with_its_stack(logger)
    records = [record for record in caplog.records if record.name == "urllib3.connectionpool"]
    assert len(records) == 2
    assert "<redacted>" in (records[0].exc_text or "") and "<redacted>" in (records[1].stack_info or "")
    assert "S3CRET" not in caplog.text


@pytest.mark.parametrize("path", ["call", "request", "notify", "listen"])
def test_urllib3_lines_our_requests_cause_are_redacted_on_every_thread(
    peer: HttpPeer, caplog: pytest.LogCaptureFixture, path: str
) -> None:
    caplog.set_level(logging.DEBUG)
    token = "S3CRET-in-the-query"
    url = peer.url.replace("127.0.0.1", "bob:S3CRET-userinfo@127.0.0.1") + f"?api_key={token}"
    transport = HttpTransport(url, headers={"Authorization": "Bearer S3CRET-header"}, read_timeout=WAIT_S)
    with JsonRpcClient(transport, default_timeout=WAIT_S) as client:
        if path == "call":
            client.call("echo", [1])  # on this thread
        elif path == "request":
            client.request("echo", [1]).result(WAIT_S)  # on a pool thread
        elif path == "notify":
            client.notify("note")
        else:
            transport.open_listen_stream(wait=WAIT_S)  # on the listen thread
            assert peer.wait_for(lambda: peer.listen_count == 1)
    lines = [r for r in caplog.records if r.name.startswith("urllib3")]
    assert any(token not in r.getMessage() and "?<redacted>" in r.getMessage() for r in lines)
    for record in caplog.records:
        text = record.getMessage() + repr(record.args) + (record.exc_text or "")
        assert "S3CRET" not in text, (record.name, text)


def test_urllib3_lines_of_requests_not_ours_are_left_alone(peer: HttpPeer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with JsonRpcClient(HttpTransport(peer.url + "?mine=hidden-by-the-filter"), default_timeout=WAIT_S) as client:
        client.call("echo", [1])
        with requests.Session() as session:  # the application's own request, on the same thread
            session.post(peer.url + "?theirs=left-as-it-is", json={"jsonrpc": "2.0", "id": 1, "method": "echo"})
    text = "\n".join(r.getMessage() for r in caplog.records if r.name == "urllib3.connectionpool")
    assert "theirs=left-as-it-is" in text
    assert "hidden-by-the-filter" not in text


def test_auth_object_secret_is_not_logged(peer: HttpPeer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with JsonRpcClient(
        HttpTransport(peer.url, auth=_HeaderAuth("S3CRET-auth-object")), default_timeout=WAIT_S
    ) as client:
        assert client.call("headers")["authorization"] == "Bearer S3CRET-auth-object"
        with pytest.raises(HttpError):
            client.call("fault", {"kind": "500"})
    assert "S3CRET-auth-object" not in caplog.text


# -- no traceback on the wire ----------------------------------------------------------------------------

SERVER_SCRIPT = """
import sys
from jsonrpc_threads.server import serve

class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no str for you")

def deep(n):
    if n == 0:
        raise RuntimeError("SECRET-DETAIL read from /srv/app/secret_config.py")
    return deep(n - 1)

def handler(method, params):
    if method == "boom":
        deep(20)
    if method == "keyerror":
        return {}["SECRET-KEY"]
    if method == "unprintable":
        raise Unprintable()
    if method == "system-exit":
        raise SystemExit(3)
    if method == "interrupt":
        raise KeyboardInterrupt
    if method == "recursion":
        def again():
            return again()
        return again()
    if method == "unserializable":
        return {"SECRET-DETAIL": object()}
    if method == "nan":
        return float("nan")
    return params

serve(handler)
"""
FAILING_METHODS = ["boom", "keyerror", "unprintable", "system-exit", "interrupt", "recursion", "unserializable", "nan"]


def test_the_server_loop_never_sends_a_traceback() -> None:
    transport = StdioTransport([sys.executable, "-c", SERVER_SCRIPT], env={"PYTHONPATH": str(REPO)})
    with JsonRpcClient(transport, default_timeout=WAIT_S) as client:
        for method in FAILING_METHODS:
            with pytest.raises(InternalError) as info:
                client.call(method)
            wire = repr(info.value.to_error_object())
            for word in ("Traceback", 'File "', "SECRET", "/srv/app", "line "):
                assert word not in wire, (method, wire)
            assert set(info.value.data or {}) <= {"exception"}, (method, wire)
        assert client.call("echo", ["still serving"]) == ["still serving"]
        stderr = transport.stderr_tail()
    assert "Traceback" in stderr and "SECRET-DETAIL" in stderr  # logged where it belongs: the server's stderr


def test_the_clients_request_handlers_never_send_a_traceback() -> None:
    def failing(params: Any) -> Any:
        raise RuntimeError("SECRET-DETAIL read from /srv/app/secret_config.py")

    with JsonRpcClient(StdioTransport(peer_command("stdio_peer")), default_timeout=WAIT_S) as client:
        client.on_request("roots/list", failing)
        answer = client.call("reverse_call", {"method": "roots/list"})
    assert answer == {"error": {"code": -32603, "message": "Internal error", "data": {"exception": "RuntimeError"}}}


# -- redirects: a clear error, once ------------------------------------------------------------------------


def test_redirect_of_a_request_fails_it_once_with_a_clear_error(peer: HttpPeer) -> None:
    with JsonRpcClient(HttpTransport(peer.url), default_timeout=WAIT_S) as client:
        with pytest.raises(HttpError) as info:
            client.call("fault", {"kind": "redirect"})
        assert info.value.status_code == 307
        assert "redirect (307) to 'http://127.0.0.2:" in info.value.message and "not followed" in info.value.message
        with pytest.raises(HttpError):
            client.notify("fault", {"kind": "redirect"})  # the synchronous path
        assert client.call("echo", [1]) == [1]
    assert [r.http_method for r in peer.records] == ["POST", "POST", "POST"]
    assert all(r.path == "/mcp" for r in peer.records)


def test_redirect_when_resuming_an_sse_stream_fails_the_request_once(peer: HttpPeer) -> None:
    url = peer.url_with("sse", "priming", "cut", "getredirect", retry=10)
    with JsonRpcClient(HttpTransport(url), default_timeout=WAIT_S) as client:
        with pytest.raises(HttpError) as info:
            client.call("echo", [1])
        assert info.value.status_code == 307
    assert [r.http_method for r in peer.records] == ["POST", "GET"]


def test_redirect_of_the_listen_stream_is_not_retried(peer: HttpPeer) -> None:
    transport = HttpTransport(peer.url_with("getredirect"))
    with JsonRpcClient(transport, default_timeout=WAIT_S):
        transport.open_listen_stream(wait=WAIT_S)
        listener = [t for t in threading.enumerate() if t.name.startswith("jsonrpc-http-listen[")]
        for thread in listener:
            thread.join(WAIT_S)
        assert not transport.listening
    assert [r.http_method for r in peer.records] == ["GET"]


# -- credentials go where the transport connects, not where a parser reads ---------------------


class _Recorder:
    """A WSGI app that keeps every request's method, path and headers; serves ``card`` at the card's path."""

    def __init__(self) -> None:
        self.card: Optional[Dict[str, Any]] = None
        self._lock = threading.Lock()  # guards seen
        self.seen: List[Tuple[str, str, Dict[str, str]]] = []

    def __call__(self, environ: Dict[str, Any], start_response: Any) -> List[bytes]:
        headers = {
            key[5:].replace("_", "-").lower(): str(value) for key, value in environ.items() if key[:5] == "HTTP_"
        }
        with self._lock:
            self.seen.append((environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), headers))
        if self.card is not None and environ["REQUEST_METHOD"] == "GET":
            body = json.dumps(self.card).encode()
        else:
            answer = {"message": {"role": "ROLE_AGENT", "parts": [{"text": "hi"}], "messageId": "m-1"}}
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": answer}).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]


A2A_SECRETS = ("authorization", "x-api-key", "x-token")


@pytest.mark.parametrize(
    ("spelling", "hazard"),
    [
        ("http://{other}\\@{card}/rpc", "backslash"),  # urllib.parse reads the card's host; requests connects to other
        ("http://{other}\\\\@{card}/rpc", "backslash"),
        ("http://{card}\t/rpc", "control character"),
        ("http://{card}/r\x00pc", "control character"),
        ("http://someone:pw@{card}/rpc", "user info"),
        ("http://{other}@{card}/rpc", "user info"),
    ],
)
def test_a2a_card_urls_that_parsers_read_differently_are_refused_and_get_no_credentials(
    spelling: str, hazard: str
) -> None:
    card_app, other_app = _Recorder(), _Recorder()
    with WsgirefServer(card_app) as card_server, WsgirefServer(other_app) as other_server:
        card, other = (urlsplit(server.url).netloc for server in (card_server, other_server))
        interface = spelling.format(card=card, other=other)
        card_app.card = {
            "name": "two-faced",
            "supportedInterfaces": [{"url": interface, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        }
        with (
            A2aClient(
                f"http://{card}/",
                headers={"X-Api-Key": "S3CRET-key"},
                auth=requests.auth.HTTPBasicAuth("user", "S3CRET-password"),
                header_provider=lambda: {"X-Token": "S3CRET-token"},
                default_timeout=WAIT_S,
            ) as a2a,
            pytest.raises(ProtocolError, match=f"refusing the agent card's JSON-RPC interface: its URL has .*{hazard}"),
        ):
            a2a.send_message("hello")
    assert other_app.seen == [], "the other server was reached"
    assert [(method, path) for method, path, _ in card_app.seen] == [("GET", "/.well-known/agent-card.json")]


def test_a2a_trust_is_decided_on_the_origin_requests_connects_to() -> None:
    origins = Origins.of("http://127.0.0.1:2222/.well-known/agent-card.json")
    # requests prepares this as http://127.0.0.1:1111/%5C@127.0.0.1:2222/rpc: port 1111.
    assert not origins.trust("http://127.0.0.1:1111/%5C@127.0.0.1:2222/rpc")
    with pytest.raises(ValueError, match="backslash"):
        origins.trust("http://127.0.0.1:1111\\@127.0.0.1:2222/rpc")
    with pytest.raises(ValueError, match="backslash"):
        Origins.of("http://127.0.0.1:2222/", ["http://127.0.0.1:1111\\@127.0.0.1:2222"])
    with pytest.raises(ValueError, match="control character"):
        origin_of("http://127.0.0.1:2222/r\x7fpc")


def test_oauth_metadata_on_a_url_that_parsers_read_differently_is_refused() -> None:
    server = "http://127.0.0.1:2222/mcp"
    assert resource_matches("http://127.0.0.1:2222/mcp", server)
    for resource in (
        "http://127.0.0.1:1111\\@127.0.0.1:2222/mcp",
        "http://someone@127.0.0.1:2222/mcp",
        "http://127.0.0.1:2222/m\tcp",
    ):
        assert not resource_matches(resource, server), resource
    # The issuer's origin is where requests connects: port 1111, not the server's.
    assert origin("http://127.0.0.1:1111\\@127.0.0.1:2222/oauth") == "http://127.0.0.1:1111"


# -- no secret in a repr or a str ------------------------------------------------------------------


#: Secrets of every kind a library object may hold: in a URL, a header, an environment, an auth object.
REPR_SECRETS = {
    "password": "S3CRET-url-password",
    "query": "S3CRET-query-token",
    "bearer": "S3CRET-bearer",
    "apikey": "S3CRET-api-key",
    "env": "S3CRET-env-value",
    "basic": "S3CRET-basic-password",
    "client": "S3CRET-client-secret",
    "token": "S3CRET-workload-token",
    "idp": "S3CRET-idp-secret",
}


def _secret_objects(stack: Any) -> Iterator[Any]:
    """Every public object that holds a URL, headers, an environment or auth, each made with secrets."""
    secret = REPR_SECRETS
    url = f"http://user:{secret['password']}@127.0.0.1:9/mcp?token={secret['query']}"
    headers = {"Authorization": f"Bearer {secret['bearer']}", "X-Api-Key": secret["apikey"]}
    basic = requests.auth.HTTPBasicAuth("user", secret["basic"])
    http_entry = {"url": url, "headers": headers}
    stdio_entry = {"command": sys.executable, "args": ["-c", "pass"], "env": {"API_KEY": secret["env"]}}
    config = {"mcpServers": {"remote": http_entry, "local": stdio_entry}}

    def keep(thing: Any) -> Any:
        stack.callback(thing.close)
        return thing

    a2a = keep(A2aClient(url, headers=headers, auth=basic))
    yield a2a
    yield choose_interface({"url": "/rpc", "protocolVersion": "0.3"}, url)
    http = keep(HttpTransport(url, headers=headers, auth=basic))
    yield http
    yield http.settings
    yield keep(SseTransport(url, headers=headers, auth=basic))
    yield keep(JsonRpcClient(HttpTransport(url, headers=headers)))
    yield keep(transport_from_config(http_entry))
    yield keep(McpClient(dict(http_entry)))
    registry = keep(ToolRegistry.from_config(config))
    yield registry
    yield registry.status()
    yield parse_entry("remote", http_entry)
    yield parse_entry("local", stdio_entry)
    yield load_config(config)
    if importlib.util.find_spec("authlib") is not None:
        yield OAuth(client_id="c", client_secret=secret["client"])
    yield WorkloadIdentity(token=secret["token"])
    yield Trigger("expired", secret["token"])
    yield CrossAppAccess(
        idp_token_endpoint=url, idp_client_id="c", id_token=secret["token"], idp_client_secret=secret["idp"]
    )


def test_no_repr_or_str_of_a_library_object_shows_a_secret() -> None:
    shown: List[str] = []
    with contextlib.ExitStack() as stack:
        for thing in _secret_objects(stack):
            shown.append(f"{type(thing).__name__}: repr={thing!r} str={thing!s}")
    leaks = [(name, line) for line in shown for name, value in REPR_SECRETS.items() if value in line]
    assert leaks == [], "\n".join(f"{name}: {line}" for name, line in leaks)
    assert len(shown) >= 15
