"""The serving side: the parts of the stdio server loop and of the WSGI application.

Theory of operation: ``jsonrpc_threads.server`` (``serve``, the stdio loop) and
``jsonrpc_threads.wsgi`` (``JsonRpcApp``) are the public faces; this folder
holds what they are made of, one concern a module: the server's logger and its
stderr handler (``logs.py``), the output side of a loop (``connection.py``),
what a handler's thread knows of the request it serves (``context.py``), the
turning of input lines into answers and handler jobs (``dispatcher.py``) and
the reading of lines with a limit (``lines.py``).  Nothing is imported here:
a tool server loads only the modules it uses.
"""
