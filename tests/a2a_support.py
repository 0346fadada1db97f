"""What the A2A tests share: the SDK-served agent (tests/peers/a2a_agent.py) as a child process.

Not a test module.  ``AgentProcess`` starts the agent with its flags and
learns its URLs from what it prints (no port is guessed); ``seen`` reads
the headers each of its ports received.
"""

from __future__ import annotations

import importlib.util
from typing import Any, Dict, List, Optional

import pytest
import requests

from .conftest import peer_command
from .peers.mcp_launch import ServerProcess

#: The A2A tests run the official SDK's server (a2a-sdk needs Python 3.10+).
needs_a2a_sdk = pytest.mark.skipif(
    importlib.util.find_spec("a2a") is None or importlib.util.find_spec("uvicorn") is None,
    reason="the official A2A SDK (a2a-sdk, Python 3.10+) is not installed",
)
#: Seconds a test's look at a peer's records may take.
PEEK_TIMEOUT_S = 10.0


class AgentProcess:
    """The SDK-served agent as a child process.  A context manager.

    Attributes:
        url: the agent's base URL (its card under it).
        interface: where the card puts the JSON-RPC interface (another port with ``--split``).
    """

    def __init__(self, *flags: str) -> None:
        self.process = ServerProcess(peer_command("a2a_agent", *flags), name="a2a-agent")
        try:
            self.interface: Optional[str] = None
            if "--split" in flags:
                self.interface = self.process.wait_for(r"interface on (\S+)").group(1)
            self.url = self.process.wait_for(r"listening on (\S+)").group(1)
            self.interface = self.interface or self.url
        except BaseException:
            self.process.close()
            raise

    @property
    def returncode(self) -> Optional[int]:
        return self.process.proc.poll()

    def wait_exit(self, timeout: float) -> Optional[int]:
        return self.process.proc.wait(timeout)

    def close(self) -> None:
        self.process.close()

    def __enter__(self) -> AgentProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def seen(base: str) -> List[Dict[str, Any]]:
    """The requests (method, path, headers) the agent's port at ``base`` received, in order."""
    answer = requests.get(f"{base}/_seen", timeout=PEEK_TIMEOUT_S)
    answer.raise_for_status()
    records: List[Dict[str, Any]] = answer.json()
    answer.close()
    return records


__all__ = ["PEEK_TIMEOUT_S", "AgentProcess", "needs_a2a_sdk", "seen"]
