"""One skill's directory on disk: what is served of it, read now, and never anything outside it.

Theory of operation.  A ``Skill`` is a directory (every symbolic link of its
path resolved once, when it was added) and its *skill path* (an optional
prefix and the skill's name), which gives its URIs:
``skill://<skill-path>/SKILL.md`` for the manifest,
``skill://<skill-path>/<file-path>`` for each file, ``skill://<skill-path>``
and its subdirectories for the directories.  Nothing is cached: each call
reads the directory as it is then, so an entry's digests describe the bytes a
read returns at that time.

Confinement: only what lies under the directory is served.  A path is taken
segment by segment (the caller refuses empty, ``.``, ``..`` and hidden
segments); every directory on the way must be a real directory (a symbolic
link to a directory is neither listed nor followed); a file may be a symbolic
link only when its target, resolved, is a regular file inside the skill's
directory.  Hidden files and directories (names starting with ``.``) are not
part of a skill.  A file is opened without following a final symbolic link,
then checked to be a regular file of at most ``MAX_SKILL_BYTES``.

Thread-safety: a ``Skill`` is immutable; its methods only read the file system.
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
import re
import stat
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import quote

from .frontmatter import parse_frontmatter

__all__ = [
    "MAX_SKILL_BYTES",
    "MAX_SKILL_FILES",
    "SCHEME",
    "SKILL_FILE",
    "Skill",
    "SkillUnavailable",
    "mime_type",
    "read_file",
]

SKILL_FILE = "SKILL.md"
SCHEME = "skill://"
#: The specification's per-skill limits: files (SKILL.md included), and their total size.
MAX_SKILL_FILES = 512
MAX_SKILL_BYTES = 16 * 1024 * 1024
#: The Agent Skills naming rule: 1 to 64 lowercase letters, digits and single inner hyphens.
SKILL_NAME = re.compile(r"(?!.*--)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")
_PATH_SAFE = "!$&'()*+,;=:@-._~"
_MIME_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".py": "text/x-python",
    ".sh": "text/x-sh",
    ".json": "application/json",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".csv": "text/csv",
    ".html": "text/html",
}


class SkillUnavailable(Exception):
    """A skill that was added cannot be served as it now is on disk (the message says why)."""


@dataclass(frozen=True)
class Skill:
    """One skill: its directory (resolved) and its skill path.

    Attributes:
        root: the skill's directory, every symbolic link resolved.
        path: its skill path (``name``, or ``prefix/name``).
    """

    root: str
    path: str

    @property
    def uri(self) -> str:
        """The URI of its ``SKILL.md``."""
        return f"{self.base}/{SKILL_FILE}"

    @property
    def base(self) -> str:
        """The URI of its directory (no trailing slash)."""
        return SCHEME + self.path

    @property
    def name(self) -> str:
        """Its name: the last segment of its path."""
        return self.path.rsplit("/", 1)[-1]

    def file_uri(self, relative: str) -> str:
        """The URI of a file or directory at ``relative`` (``/``-separated) in the skill."""
        return f"{self.base}/{quote(relative, safe=_PATH_SAFE + '/')}" if relative else self.base

    # -- reading the directory ------------------------------------------------------------

    def manifest(self) -> Tuple[bytes, Dict[str, Any]]:
        """Its ``SKILL.md`` (bytes) and frontmatter, checked.

        Raises:
            SkillUnavailable: no SKILL.md, a frontmatter that cannot be read,
                or one whose name is not the skill's.
        """
        found = self.locate([SKILL_FILE])
        if found is None:
            raise SkillUnavailable(f"{self.root} has no {SKILL_FILE}")
        data = read_file(found)
        try:
            frontmatter = parse_frontmatter(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise SkillUnavailable(f"{found}: {exc}") from None
        name, description = frontmatter.get("name"), frontmatter.get("description")
        if not isinstance(name, str) or not SKILL_NAME.fullmatch(name):
            raise SkillUnavailable(f"{found}: name must be 1-64 of a-z 0-9 and inner single hyphens, not {name!r}")
        if name != self.name:
            raise SkillUnavailable(f"{found}: its name {name!r} is not its directory's, {self.name!r}")
        if not isinstance(description, str) or not description:
            raise SkillUnavailable(f"{found}: the frontmatter needs a description (a non-empty string)")
        return data, frontmatter

    def files(self) -> List[Tuple[str, str]]:
        """Every file of the skill: ``(relative path, path on disk)``, sorted, within the limits.

        Raises:
            SkillUnavailable: more than ``MAX_SKILL_FILES`` files or ``MAX_SKILL_BYTES`` bytes.
        """
        found: List[Tuple[str, str]] = []
        total = 0
        pending = [""]
        while pending:
            relative_dir = pending.pop()
            for name, kind, path, size in self.children(relative_dir):
                relative = f"{relative_dir}/{name}" if relative_dir else name
                if kind == "dir":
                    pending.append(relative)
                    continue
                found.append((relative, path))
                total += size
                if len(found) > MAX_SKILL_FILES or total > MAX_SKILL_BYTES:
                    raise SkillUnavailable(
                        f"{self.root} is over the limits of a skill ({MAX_SKILL_FILES} files, {MAX_SKILL_BYTES} bytes)"
                    )
        return sorted(found)

    def entry(self) -> Dict[str, Any]:
        """Its ``skills/list`` entry, read now.

        Raises:
            SkillUnavailable: see ``manifest`` and ``files``.
        """
        manifest, frontmatter = self.manifest()
        resources = []
        for relative, path in self.files():
            data = manifest if relative == SKILL_FILE else read_file(path)
            digest = "sha256:" + hashlib.sha256(data).hexdigest()
            resources.append({"uri": self.file_uri(relative), "digest": digest, "size": len(data)})
        return {"uri": self.uri, "frontmatter": frontmatter, "resources": resources}

    def children(self, relative_dir: str) -> List[Tuple[str, str, str, int]]:
        """The served children of a directory of the skill: ``(name, "dir"|"file", path, size)``."""
        directory = os.path.join(self.root, *relative_dir.split("/")) if relative_dir else self.root
        children = []
        try:
            with os.scandir(directory) as entries:
                listed = sorted(entries, key=lambda entry: entry.name)
        except OSError as exc:
            raise SkillUnavailable(f"{directory}: {exc.strerror or exc}") from None
        for entry in listed:
            if entry.name.startswith("."):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode):
                    children.append((entry.name, "dir", entry.path, 0))
                elif stat.S_ISREG(info.st_mode):
                    children.append((entry.name, "file", entry.path, info.st_size))
                elif stat.S_ISLNK(info.st_mode):
                    target = self._inside(entry.path)
                    if target is not None:
                        children.append((entry.name, "file", target, os.stat(target).st_size))
            except OSError:
                continue  # gone since the scan: not served
        return children

    def _inside(self, link: str) -> Optional[str]:
        """Where a symbolic link leads, when that is a regular file inside the skill (else ``None``)."""
        target = os.path.realpath(link)
        if os.path.commonpath([self.root, target]) != self.root or not os.path.isfile(target):
            return None
        return target

    def locate(self, segments: List[str]) -> Optional[str]:
        """The path on disk of the served file at ``segments`` (already checked), or ``None``."""
        path = self.root
        for segment in segments[:-1]:
            path = os.path.join(path, segment)
            try:
                if not stat.S_ISDIR(os.lstat(path).st_mode):
                    return None
            except OSError:
                return None
        path = os.path.join(path, segments[-1])
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            return None
        if stat.S_ISREG(mode):
            return path
        return self._inside(path) if stat.S_ISLNK(mode) else None

    def directory(self, segments: List[str]) -> Optional[str]:
        """The relative path of the served directory at ``segments`` (``""``: the root), or ``None``."""
        path = self.root
        for segment in segments:
            path = os.path.join(path, segment)
            try:
                if not stat.S_ISDIR(os.lstat(path).st_mode):
                    return None
            except OSError:
                return None
        return "/".join(segments)


def read_file(path: str) -> bytes:
    """The bytes of a served file, opened without following a final link, at most ``MAX_SKILL_BYTES``."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as exc:
        raise SkillUnavailable(f"{path}: {exc.strerror or exc}") from None
    with os.fdopen(descriptor, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise SkillUnavailable(f"{path} is not a regular file")
        if info.st_size > MAX_SKILL_BYTES:
            raise SkillUnavailable(f"{path} is over {MAX_SKILL_BYTES} bytes")
        return file.read(MAX_SKILL_BYTES + 1)[:MAX_SKILL_BYTES]


def mime_type(name: str) -> str:
    extension = os.path.splitext(name)[1].lower()
    known = _MIME_TYPES.get(extension) or mimetypes.guess_type(name)[0]
    return known or "application/octet-stream"
