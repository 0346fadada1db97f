"""``fs/read_text_file`` and ``fs/write_text_file``, confined to one directory.

Theory of operation.  A ``FileService`` serves the agent's file requests
inside ``root`` and nowhere else.  A path must be absolute; its real path
(``os.path.realpath``: every symbolic link resolved, every ``..`` gone)
must lie inside the real path of ``root``.  So ``root/../etc/passwd``, an
absolute path elsewhere and a link that points out are all refused, and the
file they name is neither read nor written.  The checked path is then opened
one component at a time from a descriptor of ``root``, refusing to follow any
link (``O_NOFOLLOW`` with ``dir_fd``, where the platform has them): a link
swapped in between the check and the open is refused too, not followed.  Only
regular files are read or written (a FIFO would block the worker forever).

Refusals are JSON-RPC errors the agent receives: ``-32602`` (invalid params:
outside the root, not absolute, not a regular file, not UTF-8, too large) or
``-32002`` (ACP's resource not found); any other failure of the OS is ``-32603``.
A write creates the directories missing before the file (inside the root)
and replaces the file whole: the text goes, as UTF-8, to a new temporary file
in the same directory (opened beneath the root as above, its name hidden and
random), which is flushed to disk and renamed over the checked path.  A reader
(another request, the editor, the agent) sees the old content or the new,
never a part or a mix of two writes, and the last rename wins.  An existing
file keeps its permission bits (not its owner, nor its hard links: it is a new
file); a new one gets the umask's.  A refused or failed write leaves the file
as it was and removes its temporary.  Reads honour ``line`` (from 1) and
``limit`` (a number of lines).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from typing import Any, Dict, List, Optional, Tuple, Union

from ..errors import InternalError, InvalidParams, JsonRpcError
from .wire import RESOURCE_NOT_FOUND

#: The most text one ``fs/read_text_file`` answer carries (characters): a
#: larger file is read in parts, with ``line`` and ``limit``.
MAX_READ_CHARS = 16 * 1024 * 1024

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
#: How many random names a write tries for its temporary file before it gives up.
TEMP_NAME_ATTEMPTS = 8
#: Opening (and renaming, statting, unlinking) beneath a directory descriptor, links refused: POSIX platforms.
_BENEATH = all(call in os.supports_dir_fd for call in (os.open, os.rename, os.stat, os.unlink)) and bool(
    _O_NOFOLLOW and _O_DIRECTORY
)


class FileService:
    """Reads and writes text files under one root directory.  Thread-safe (no state changes).

    Args:
        root: the directory the agent may use; its real path is taken now.
        write: serve ``fs/write_text_file`` too.

    Raises:
        ValueError: ``root`` is not a directory.
    """

    def __init__(self, root: Union[str, os.PathLike[str]], *, write: bool = False) -> None:
        real = os.path.realpath(os.fspath(root))
        if not os.path.isdir(real):
            raise ValueError(f"fs_root is not a directory: {os.fspath(root)!r}")
        self.root = real
        self.write = write

    def resolve(self, path: Any) -> str:
        """The real path that ``path`` names, when it lies inside the root.

        Raises:
            InvalidParams: not an absolute path, or one outside the root.
        """
        if not isinstance(path, str) or not path or "\x00" in path:
            raise InvalidParams(f"path must be a non-empty string, not {path!r:.100}")
        if not os.path.isabs(path):
            raise InvalidParams(f"path must be absolute: {path!r}")
        real = os.path.realpath(path)
        if not _inside(self.root, real):
            raise InvalidParams(f"path is outside the client's fs_root: {path!r}")
        return real

    def read_text_file(self, params: Any) -> Dict[str, Any]:
        """The ``fs/read_text_file`` handler: ``{"content": text}``.

        Raises:
            InvalidParams: a refused path or bad ``line``/``limit``; a file that
                is not regular, not UTF-8, or larger than ``MAX_READ_CHARS``.
            JsonRpcError: ``-32002`` when the file does not exist; ``-32603`` for
                another failure of the OS.
        """
        params = _mapping(params, "fs/read_text_file")
        line = _optional_count(params, "line", minimum=1)
        limit = _optional_count(params, "limit", minimum=0)
        path = params.get("path")
        real = self.resolve(path)
        with _os_errors(path):
            fd = _open_beneath(self.root, real, os.O_RDONLY | _O_NONBLOCK | _O_CLOEXEC)
            try:
                size = _regular_file_size(fd, path)
                if line is None and limit is None and size > MAX_READ_CHARS:
                    raise InvalidParams(
                        f"{path!r} has {size} bytes, more than one answer carries: read it in parts (line, limit)"
                    )
                os.set_blocking(fd, True)
                stream = os.fdopen(fd, "r", encoding="utf-8", errors="strict", newline="")
            except BaseException:
                os.close(fd)
                raise
            with stream:
                try:
                    content = _read_lines(stream, line, limit, path)
                except UnicodeDecodeError:
                    raise InvalidParams(f"{path!r} is not UTF-8 text") from None
        return {"content": content}

    def write_text_file(self, params: Any) -> Dict[str, Any]:
        """The ``fs/write_text_file`` handler: replaces the file with ``content`` (UTF-8); ``{}`` when done.

        Safe to call from many threads at once, for one file too: each write
        replaces the file whole (a temporary file, then a rename).

        Raises:
            InvalidParams: a refused path, ``content`` that is not a string (or
                not encodable), a path that names something other than a regular file.
            JsonRpcError: ``-32603`` for a failure of the OS (the file is left as it was).
        """
        params = _mapping(params, "fs/write_text_file")
        content = params.get("content")
        if not isinstance(content, str):
            raise InvalidParams(f"content must be a string, not {type(content).__name__}")
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidParams(f"content cannot be written as UTF-8: {exc.reason}") from None
        path = params.get("path")
        real = self.resolve(path)
        with _os_errors(path):
            directory, name = _parent_beneath(self.root, real, make_dirs=True)
            try:
                _replace(directory, name, data, path)
            finally:
                if directory is not None:
                    os.close(directory)
        return {}


def _inside(root: str, real: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _mapping(params: Any, method: str) -> Dict[str, Any]:
    if not isinstance(params, dict):
        raise InvalidParams(f"{method} needs params")
    return params


def _optional_count(params: Dict[str, Any], name: str, *, minimum: int) -> Optional[int]:
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidParams(f"{name} must be an integer >= {minimum}, not {value!r:.50}")
    return value


def _regular_file_size(fd: int, path: Any) -> int:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise InvalidParams(f"{path!r} is not a regular file")
    return info.st_size


def _read_lines(stream: Any, line: Optional[int], limit: Optional[int], path: Any) -> str:
    if line is None and limit is None:
        text: str = stream.read()
        return text
    for _ in range((line or 1) - 1):
        if not stream.readline():
            return ""
    parts: List[str] = []
    size = 0
    while limit is None or len(parts) < limit:
        text = stream.readline()
        if not text:
            break
        size += len(text)
        if size > MAX_READ_CHARS:
            raise InvalidParams(f"the lines asked of {path!r} are more than one answer carries: ask for fewer (limit)")
        parts.append(text)
    return "".join(parts)


def _open_beneath(root: str, real: str, flags: int) -> int:
    """Open ``real`` (inside ``root``) one component at a time, following no link."""
    directory, name = _parent_beneath(root, real, make_dirs=False)
    try:
        return os.open(name, flags | _O_NOFOLLOW, 0o666, dir_fd=directory)
    finally:
        if directory is not None:
            os.close(directory)


def _parent_beneath(root: str, real: str, *, make_dirs: bool) -> Tuple[Optional[int], str]:
    """The directory of ``real`` (inside ``root``), opened one component at a time following no link, and its last name.

    Returns ``(descriptor, name)``, the caller closing the descriptor; where the
    platform cannot open beneath a descriptor, ``(None, real)``.
    """
    relative = os.path.relpath(real, root)
    if relative == os.curdir:
        raise IsADirectoryError(errno.EISDIR, "Is a directory", real)
    if not _BENEATH:
        if make_dirs:
            os.makedirs(os.path.dirname(real), exist_ok=True)
        return None, real
    parts = relative.split(os.sep)
    fd = os.open(root, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    try:
        for part in parts[:-1]:
            inner = _open_directory(part, fd, make_dirs)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def _replace(directory: Optional[int], name: str, data: bytes, path: Any) -> None:
    """Write ``data`` to a new file beside ``name`` (in ``directory``), then rename it over ``name``.

    ``name`` must be a regular file or nothing (a link there was swapped in
    after the check: refused, as ``ELOOP``).  The temporary is removed when
    anything fails before the rename.
    """
    try:
        info = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        mode: Optional[int] = None
    else:
        if stat.S_ISLNK(info.st_mode):
            raise OSError(errno.ELOOP, "a symbolic link where the checked path had none", name)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidParams(f"{path!r} is not a regular file")
        mode = stat.S_IMODE(info.st_mode)
    head, tail = os.path.split(name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
    for _ in range(TEMP_NAME_ATTEMPTS):
        temporary = os.path.join(head, f".{tail}.{secrets.token_hex(8)}.tmp")
        try:
            fd = os.open(temporary, flags, 0o600 if mode is not None else 0o666, dir_fd=directory)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(errno.EEXIST, "no free name for a temporary file", name)
    try:
        try:
            if mode is not None and os.chmod in os.supports_fd:
                os.chmod(fd, mode)  # the existing file's bits, which the umask must not narrow
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=directory)
        except OSError:
            pass
        raise


def _open_directory(name: str, parent_fd: int, make: bool) -> int:
    flags = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
    try:
        return os.open(name, flags, dir_fd=parent_fd)
    except FileNotFoundError:
        if not make:
            raise
    except NotADirectoryError:  # a file, or a link that O_NOFOLLOW met: say which
        if stat.S_ISLNK(os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode):
            raise OSError(errno.ELOOP, "a symbolic link where the checked path had none", name) from None
        raise
    try:
        os.mkdir(name, 0o777, dir_fd=parent_fd)
    except FileExistsError:  # made meanwhile by another request
        pass
    return os.open(name, flags, dir_fd=parent_fd)


class _os_errors:
    """Turns an OSError into the JSON-RPC error the agent receives."""

    def __init__(self, path: Any) -> None:
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        if not isinstance(error, OSError):
            return
        if isinstance(error, FileNotFoundError):
            raise JsonRpcError(RESOURCE_NOT_FOUND, f"Resource not found: {self.path}", {"path": self.path}) from None
        if error.errno == errno.ELOOP:  # a link met where the checked path had none: swapped in meanwhile
            raise InvalidParams(f"path is outside the client's fs_root: {self.path!r}") from None
        if isinstance(error, (IsADirectoryError, NotADirectoryError)):
            raise InvalidParams(f"{self.path!r}: {error.strerror}") from None
        raise InternalError(f"{self.path!r}: {error.strerror or error}") from None


__all__ = ["MAX_READ_CHARS", "FileService"]
