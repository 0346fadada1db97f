"""The one place the version of jsonrpc_threads is written (read by the build and by ``--version``)."""

__version__ = "0.1.0"
