"""Transports move bytes between a client and one peer: a child process or an HTTP server."""
