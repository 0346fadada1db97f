"""Runnable examples: ``python -m jsonrpc_threads.examples.<name>``.

- ``demo``: what ``make demo`` runs (the client against ``tool_server``);
- ``tool_server``: a JSON-RPC tool server over stdio, on ``jsonrpc_threads.server``;
- ``mcp_tool_server``: a small MCP server over stdio, on ``jsonrpc_threads.server``;
- ``http_server``: a JSON-RPC server over HTTP on 127.0.0.1 (``ExampleHttpServer`` runs it in a thread);
- ``acp_agent``: a tiny ACP agent over stdio, on ``jsonrpc_threads.server`` (answers word by word);
- ``a2a_agent``: a tiny A2A 1.0 agent over HTTP on 127.0.0.1 (``ExampleAgent`` runs it in threads).

Start them from Python with ``[sys.executable, "-m", "jsonrpc_threads.examples.<name>"]``:
``sys.executable`` is the interpreter that has this package installed.
"""
