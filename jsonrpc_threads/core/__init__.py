"""The protocol core and its threaded shell: a request's life, from the public call to the transport.

- :mod:`.protocol` decides (ids, the pending table, ordering, expiry) and does
  no I/O and starts no thread; :mod:`.events` is what it reports.
- :mod:`.shell` acts on what it decides: one lock around it, the timer, the
  workers, the settling of waiters and futures.
- :mod:`.futures` is the ``concurrent.futures.Future`` of a ``request()``.
- :mod:`.client` is the public face: :class:`~.client.JsonRpcClient`.

Imports point one way: ``events`` <- ``protocol`` <- ``shell`` <- ``futures``
<- ``client``.  Below them: the message envelopes (:mod:`jsonrpc_threads.messages`),
the timer thread (:mod:`jsonrpc_threads._scheduler`) and the worker pools
(:mod:`jsonrpc_threads._workers`), which know nothing of requests.
"""
