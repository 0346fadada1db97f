"""The performance strategies as test parameters: the default of each, and the plain reference.

Every strategy of the package is a constructor choice (``docs/internals.md``,
"Strategies"), and the plain choice is the reference the default must behave
like.  A test module that covers a strategy's layer runs all its tests with
both, through an autouse parametrized fixture that puts the choice in the
module's ``CHOSEN`` dict; the module's own factories build its clients and
transports with it (``JsonRpcClient(transport, **CHOSEN)``), through the
public keywords only.
"""

from __future__ import annotations

from typing import Dict, List

#: ``JsonRpcClient(waiter=, futures=)``: the defaults, then the plain reference.
CLIENT_CHOICES: List[Dict[str, str]] = [
    {"waiter": "wake_pipe", "futures": "lean"},
    {"waiter": "plain", "futures": "plain"},
]
CLIENT_IDS = ["wake_pipe-lean", "plain"]
#: ``StdioTransport(reads=)``: the default, then the plain reference.
READS = ["caller", "reader_thread"]
#: ``HttpTransport(sender=)`` (and ``SseTransport``): the default, then the plain reference.
SENDERS = ["direct", "requests"]

__all__ = ["CLIENT_CHOICES", "CLIENT_IDS", "READS", "SENDERS"]
