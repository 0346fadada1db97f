"""The runtime under the client and the server: threads that know nothing of requests.

Internal: ``scheduler`` (the process's one timer thread over a heap of deadlines),
``workers`` (the daemon threads that run user code: pools, a queue drained by one,
the serial lane, and the waiter a blocking ``call()`` sleeps on) and ``dispatch``
(running a handler for an incoming request or notification, one policy for the
client and the server alike).  Nothing here is public API.
"""
