"""The bundled example MCP server with one handler worker: a ``slow`` call blocks everything after it.

So a server that is alive but answers nothing (not even ``ping``) while its
one worker is busy: what a hung server looks like to a health ping.
"""

from jsonrpc_threads.examples.mcp_tool_server import handle
from jsonrpc_threads.server import serve

if __name__ == "__main__":
    serve(handle, max_workers=1)
