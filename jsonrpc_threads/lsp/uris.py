"""Document URIs: from paths, to paths, and one spelling of each.

A language server names documents by URI (``file:///home/me/project/main.py``),
and it need not spell a URI the way the client did: one percent-encodes a
character the other leaves alone.  ``normalize_uri`` gives every ``file:``
URI one spelling (decoded, then encoded as ``pathlib.PurePath.as_uri``
does), so the client finds the document a server's notification speaks of
whichever way the server wrote it.  Other schemes (``untitled:``) are kept as
they are.

Pure: no I/O beyond ``os.path.abspath`` (which reads the working directory).
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Union
from urllib.parse import unquote, urlsplit

#: A URI starts with a scheme and a colon (RFC 3986); a Windows drive (``C:``) is not one.
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")

PathOrUri = Union[str, "os.PathLike[str]"]


def is_uri(value: str) -> bool:
    """True when ``value`` starts with a URI scheme (two letters or more, then ``:``)."""
    return bool(_SCHEME.match(value))


def path_to_uri(path: Union[str, os.PathLike[str]]) -> str:
    """The ``file:`` URI of a local path (made absolute against the working directory).

    Raises:
        ValueError: for an empty path.
    """
    text = os.fspath(path)
    if not text:
        raise ValueError("an empty path has no URI")
    return Path(os.path.abspath(text)).as_uri()


def uri_to_path(uri: str) -> Path:
    """The local path of a ``file:`` URI.

    Raises:
        ValueError: for a URI of another scheme, or one naming another host.
    """
    parts = urlsplit(uri)
    if parts.scheme.lower() != "file":
        raise ValueError(f"not a file: URI: {uri!r}")
    if parts.netloc not in ("", "localhost"):
        raise ValueError(f"a file: URI on another host: {uri!r}")
    path = unquote(parts.path)
    if os.name == "nt":  # pragma: no cover - the tests run on POSIX
        return Path(PureWindowsPath(path.lstrip("/")))
    return Path(PurePosixPath(path))


def as_uri(path_or_uri: PathOrUri) -> str:
    """A URI for a path or a URI: a ``os.PathLike`` or a string without a scheme is a path.

    Raises:
        ValueError: for an empty path.
    """
    if isinstance(path_or_uri, str) and is_uri(path_or_uri):
        return path_or_uri
    return path_to_uri(path_or_uri)


def normalize_uri(uri: str) -> str:
    """One spelling of a URI: a ``file:`` URI re-encoded from its path; any other kept as is."""
    try:
        return uri_to_path(uri).as_uri()
    except ValueError:
        return uri


__all__ = ["PathOrUri", "as_uri", "is_uri", "normalize_uri", "path_to_uri", "uri_to_path"]
