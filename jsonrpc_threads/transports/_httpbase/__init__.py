"""What the two HTTP transports share: settings, connections, requests, errors, and the one resumable SSE stream.

Theory of operation.  Streamable HTTP (``http``) and the legacy HTTP+SSE
transport (``sse``) differ in where messages go and come from, not in
how an HTTP request is made, bounded, interrupted or read.  That part lives
here, once, and both import it (neither reaches into the other):

- ``settings``: ``HttpSettings``, the constructors'
  keywords as one immutable object, checked where it is made;
- ``endpoint``: the server's URL over one ``requests.Session``: the
  headers of each request, and the request itself, sent only while its
  exchange stands;
- ``exchange``: one exchange (its requests, its deadline) and how it
  ends early, freeing its thread;
- ``connections``: connections whose sockets ``close()`` and a stopped
  exchange can shut down, so a blocked read ends at once;
- ``reading``: a body read as it arrives, every socket read bounded by
  its exchange's deadline;
- ``stream``: the one resumable SSE stream (a POST's answer, the listen
  stream, the legacy transport's stream);
- ``errors``: the one place where HTTP failures become this library's
  exceptions;
- ``hooks``: where a transport whose hooks may block sends what must
  still end by a deadline;
- ``sink``: the guarded calls into the client's sink;
- ``wire``: header names, media types, and every named limit and delay.

Secrets are kept out of log lines by ``jsonrpc_threads.transports.redact``.
"""
