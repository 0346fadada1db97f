"""Reading one Content-Length framed message, for the test peers that speak as language servers do (stdlib only)."""


def read_message(stream):  # type: ignore[no-untyped-def]
    """The next message's body, ``b""`` for a head without Content-Length, ``None`` at end of input."""
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    return stream.read(length) if length is not None else b""
