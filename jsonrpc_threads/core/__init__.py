"""The protocol core and its threaded shell: a request's life, from the public call to the transport.

- ``protocol`` decides (ids, the pending table, ordering, expiry) and does
  no I/O and starts no thread; ``events`` is what it reports.
- ``shell`` acts on what it decides: one lock around it, the timer, the
  workers, the settling of waiters and futures.
- ``futures`` is the ``concurrent.futures.Future`` of a ``request()``;
  ``streams``, the iterator of a ``request_stream()`` (many responses to one id).
- ``client`` is the public face: ``JsonRpcClient``.

Imports point one way: ``events`` <- ``protocol`` <- ``shell`` <- ``futures``,
``streams`` <- ``client``.  Below them: the message envelopes (``jsonrpc_threads.messages``),
the timer thread (``jsonrpc_threads.runtime.scheduler``) and the worker pools
(``jsonrpc_threads.runtime.workers``), which know nothing of requests.
"""
