"""What the two HTTP transports share: settings, connections, requests, errors, and the one resumable SSE stream.

Theory of operation.  Streamable HTTP (:mod:`..http`) and the legacy HTTP+SSE
transport (:mod:`..sse`) differ in where messages go and come from, not in
how an HTTP request is made, bounded, interrupted or read.  That part lives
here, once, and both import it (neither reaches into the other):

- :mod:`.settings`: :class:`~.settings.HttpSettings`, the constructors'
  keywords as one immutable object, checked where it is made;
- :mod:`.endpoint`: the server's URL over one ``requests.Session``: the
  headers of each request, and the request itself, sent only while its
  exchange stands;
- :mod:`.exchange`: one exchange (its requests, its deadline) and how it
  ends early, freeing its thread;
- :mod:`.connections`: connections whose sockets ``close()`` and a stopped
  exchange can shut down, so a blocked read ends at once;
- :mod:`.reading`: a body read as it arrives, every socket read bounded by
  its exchange's deadline;
- :mod:`.stream`: the one resumable SSE stream (a POST's answer, the listen
  stream, the legacy transport's stream);
- :mod:`.errors`: the one place where HTTP failures become this library's
  exceptions;
- :mod:`.hooks`: where a transport whose hooks may block sends what must
  still end by a deadline;
- :mod:`.sink`: the guarded calls into the client's sink;
- :mod:`.wire`: header names, media types, and every named limit and delay.

Secrets are kept out of log lines by :mod:`jsonrpc_threads.transports.redact`.
"""
