"""Benchmarks of jsonrpc_threads against the physical limit and the official MCP SDK.

Run ``make bench`` (everything, a few minutes) or ``make bench-quick`` (a reduced
run, well under a minute); see ``benchmarks/README.md``.
"""
