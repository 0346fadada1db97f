"""Where ``OAuth`` keeps tokens and client registrations.

A store maps a key (the canonical URL of an MCP server) to one JSON-compatible
dict: the tokens for that server and the client registrations made with its
authorization servers.  The flow reads a server's entry when it first needs it
and writes the whole entry back after every change; it never logs it.

``MemoryTokenStore`` (the default) forgets everything with the process.
``FileTokenStore`` keeps a JSON file that only its owner can read or
write (0600, created that way, never widened); each write replaces the file
atomically.  Both are thread-safe.  Any object with the same three methods
can be used instead (a keyring, a database).
"""

from __future__ import annotations

import copy
import json
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Dict, Optional, Protocol, Union

logger = logging.getLogger(__name__)

#: Permission bits of a token file (owner read and write only).
FILE_MODE = 0o600
#: Permission bits of a directory the store creates.
DIR_MODE = 0o700

Entry = Dict[str, Any]


class TokenStore(Protocol):
    """What ``OAuth`` needs from a token store.

    Implementations must be thread-safe and must not log what they hold.
    """

    def load(self, key: str) -> Optional[Entry]:
        """The entry saved under ``key``, or ``None``."""

    def save(self, key: str, entry: Entry) -> None:
        """Replace the entry under ``key``."""

    def delete(self, key: str) -> None:
        """Forget the entry under ``key`` (no error when there is none)."""


class MemoryTokenStore:
    """Entries in a dict, for the life of the process.  Thread-safe."""

    def __init__(self) -> None:
        # _lock guards _entries.
        self._lock = threading.Lock()
        self._entries: Dict[str, Entry] = {}

    def load(self, key: str) -> Optional[Entry]:
        with self._lock:
            entry = self._entries.get(key)
            return copy.deepcopy(entry) if entry is not None else None

    def save(self, key: str, entry: Entry) -> None:
        with self._lock:
            self._entries[key] = copy.deepcopy(entry)

    def delete(self, key: str) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def __repr__(self) -> str:
        return f"<MemoryTokenStore with {len(self._entries)} entr{'y' if len(self._entries) == 1 else 'ies'}>"


class FileTokenStore:
    """Entries in one JSON file readable by its owner only.  Thread-safe.

    The file (and its directory, when the store creates it) is created with
    mode 0600 (0700); a file found with wider permissions is narrowed to 0600
    on the next write.  Every write goes to a temporary file in the same
    directory, created 0600, then replaces the old file atomically, so a crash
    never leaves a half-written file and no other user can read it at any time.

    Args:
        path: the JSON file (created on the first write).

    Raises:
        OSError: from ``save`` when the file cannot be written.  A file
            that cannot be read or parsed loads as empty (logged as a warning).
    """

    def __init__(self, path: Union[str, os.PathLike[str]]) -> None:
        self.path = Path(path)
        # _lock guards the file (one reader or writer at a time in this process).
        self._lock = threading.Lock()

    def load(self, key: str) -> Optional[Entry]:
        with self._lock:
            entry = self._read().get(key)
        return entry if isinstance(entry, dict) else None

    def save(self, key: str, entry: Entry) -> None:
        with self._lock:
            entries = self._read()
            entries[key] = entry
            self._write(entries)

    def delete(self, key: str) -> None:
        with self._lock:
            entries = self._read()
            if entries.pop(key, None) is not None:
                self._write(entries)

    def _read(self) -> Dict[str, Any]:
        try:
            with open(self.path, encoding="utf-8") as file:
                data = json.load(file)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            logger.warning("token file %s unreadable (%s): starting empty", self.path, type(exc).__name__)
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, entries: Dict[str, Any]) -> None:
        directory = self.path.parent
        if not directory.exists():
            directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        # mkstemp creates the file 0600, whatever the umask.
        fd, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(entries, file, indent=1, sort_keys=True)
                file.flush()
                os.fsync(file.fileno())
            os.chmod(temporary, FILE_MODE)
            os.replace(temporary, self.path)
        except BaseException:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise

    def __repr__(self) -> str:
        return f"<FileTokenStore {str(self.path)!r}>"


__all__ = ["DIR_MODE", "FILE_MODE", "FileTokenStore", "MemoryTokenStore", "TokenStore"]
