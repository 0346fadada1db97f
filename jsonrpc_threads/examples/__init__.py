"""Runnable examples: ``python -m jsonrpc_threads.examples.<name>`` (``demo``, ``tool_server``)."""
