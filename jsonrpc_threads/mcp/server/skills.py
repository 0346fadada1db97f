"""The skills extension on the server side (``io.modelcontextprotocol/skills``, SEP-2640): directories served read-only.

Theory of operation.  A skill is a directory with a ``SKILL.md`` at its root
(frontmatter with ``name`` and ``description``, read by ``frontmatter``) and
any supporting files.  ``SkillSet`` holds the skills of one server, each
mapped to a *skill path* (an optional prefix and the skill's name) and so to
URIs: ``skill://<skill-path>/SKILL.md`` for the manifest,
``skill://<skill-path>/<file-path>`` for each file, ``skill://<skill-path>``
and its subdirectories as directory resources.  It answers the extension's
three methods and ``resources/read`` of those URIs:

- ``skills/list`` and ``skills/get``: an entry per skill (its ``uri``, its
  ``frontmatter`` as JSON, and ``resources``: every file with its ``size`` and
  ``sha256:<hex>`` ``digest``), paginated by whole entries;
- ``resources/directory/read``: the direct children of a directory (files
  with their metadata, subdirectories as ``inode/directory``), paginated; a
  prefix above skills is a directory too; anything else is ``-32602``;
- ``resources/read``: one file, text when it is UTF-8, a blob otherwise.

Each request reads the directories as they are then (``skill_files``): a
skill that became invalid on disk (its ``SKILL.md`` gone or its name changed,
over the limits of 512 files or 16 MiB) is left out of listings with a
warning in the log, and ``skills/get`` answers ``-32603`` for it.  A URI with
an empty, ``.``, ``..`` or hidden segment is never served; ``skill_files``
keeps every read inside the skill's directory.

Thread-safety: ``SkillSet`` is thread-safe (its table of skills is guarded by
a lock; a request works on a snapshot and reads files without it).
"""

from __future__ import annotations

import base64
import logging
import os
import re
import threading
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import unquote

from ...errors import InvalidParams, JsonRpcError
from ..protocol import SKILLS_EXTENSION
from .skill_files import SCHEME, SKILL_FILE, Skill, SkillUnavailable, mime_type, read_file

__all__ = ["DIRECTORY_MIME_TYPE", "PAGE_SIZE", "SkillSet"]

logger = logging.getLogger("jsonrpc_threads.mcp.server")

DIRECTORY_MIME_TYPE = "inode/directory"
#: Entries (skills, or a directory's children) per page of skills/list and resources/directory/read.
PAGE_SIZE = 50
_PREFIX_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._~-]*")


class SkillSet:
    """The skills of one server, and the answers to the extension's methods.  Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _skills
        self._skills: Dict[str, Skill] = {}  # by skill path

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._skills)

    def declaration(self) -> Dict[str, Any]:
        """The extension as the server's capabilities declare it."""
        return {SKILLS_EXTENSION: {"directoryRead": True}}

    # -- adding ---------------------------------------------------------------------------

    def add(self, directory: str, prefix: Optional[str] = None) -> str:
        """Serve the skill in ``directory``; returns the URI of its ``SKILL.md``.

        Raises:
            ValueError: no such directory, a prefix that is not a URI path,
                a skill that is not valid now (see ``Skill.manifest``,
                ``Skill.files``), or a skill path already served.
        """
        root = os.path.realpath(os.fspath(directory))
        if not os.path.isdir(root):
            raise ValueError(f"not a directory: {directory}")
        segments = _prefix_segments(prefix)
        skill = Skill(root, "/".join([*segments, os.path.basename(root)]))
        try:
            skill.manifest()
            skill.files()
        except SkillUnavailable as exc:
            raise ValueError(f"not a servable skill: {exc}") from None
        with self._lock:
            if skill.path in self._skills:
                raise ValueError(f"a skill is already served at {skill.uri}")
            self._skills[skill.path] = skill
        return skill.uri

    def add_tree(self, root: str, prefix: Optional[str] = None) -> List[str]:
        """Serve every skill under ``root`` (each directory holding a ``SKILL.md``, at any depth).

        Each skill's path is its directory's path under ``root`` (after
        ``prefix``), so nested skills keep their place.  Hidden directories and
        symbolic links to directories are not searched.

        Returns:
            The URIs of their ``SKILL.md``, sorted.

        Raises:
            ValueError: ``root`` is not a directory, holds no skill, or holds
                an invalid one (nothing is added then).
        """
        top = os.path.realpath(os.fspath(root))
        if not os.path.isdir(top):
            raise ValueError(f"not a directory: {root}")
        base = _prefix_segments(prefix)
        found: List[Skill] = []
        for directory, subdirectories, names in os.walk(top):
            subdirectories[:] = sorted(d for d in subdirectories if not d.startswith("."))
            if SKILL_FILE in names and directory != top:
                relative = os.path.relpath(directory, top).split(os.sep)
                for segment in relative[:-1]:
                    if not _PREFIX_SEGMENT.fullmatch(segment):
                        raise ValueError(f"{directory}: {segment!r} cannot be a segment of a skill's URI")
                found.append(Skill(directory, "/".join([*base, *relative])))
        if not found:
            raise ValueError(f"no skill (a directory holding a {SKILL_FILE}) under {root}")
        for skill in found:
            try:
                skill.manifest()
                skill.files()
            except SkillUnavailable as exc:
                raise ValueError(f"not a servable skill: {exc}") from None
        with self._lock:
            taken = [skill.uri for skill in found if skill.path in self._skills]
            if taken:
                raise ValueError(f"skills already served at {', '.join(taken)}")
            self._skills.update((skill.path, skill) for skill in found)
        return sorted(skill.uri for skill in found)

    # -- the methods ----------------------------------------------------------------------

    def list_skills(self, params: Dict[str, Any]) -> Dict[str, Any]:
        """``skills/list``: a page of entries; a skill that cannot be served now is left out (and logged).

        Raises:
            InvalidParams: a cursor this server did not give.
        """
        skills = self._snapshot()
        start = _offset(params, len(skills))
        result: Dict[str, Any] = {"skills": []}
        for skill in skills[start : start + PAGE_SIZE]:
            try:
                result["skills"].append(skill.entry())
            except SkillUnavailable as exc:
                logger.warning("skill %s is not listed: %s", skill.uri, exc)
        if start + PAGE_SIZE < len(skills):
            result["nextCursor"] = str(start + PAGE_SIZE)
        return result

    def get_skill(self, params: Dict[str, Any]) -> Dict[str, Any]:
        """``skills/get``: the entry of the skill whose ``SKILL.md`` is ``params.uri``.

        Raises:
            InvalidParams: no uri, or no skill served there (``-32602``).
            JsonRpcError: ``-32603``, the skill cannot be served as it is now on disk.
        """
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise InvalidParams("skills/get needs a uri (a string)")
        skill = next((skill for skill in self._snapshot() if skill.uri == uri), None)
        if skill is None:
            raise InvalidParams(f"No skill is served at {uri}", {"uri": uri})
        try:
            return {"skill": skill.entry()}
        except SkillUnavailable as exc:
            raise JsonRpcError(-32603, f"the skill at {uri} cannot be served: {exc}") from None

    def resources(self) -> List[Dict[str, Any]]:
        """The ``SKILL.md`` of each skill as ``resources/list`` shows it (name and description from its frontmatter)."""
        described = []
        for skill in self._snapshot():
            try:
                data, frontmatter = skill.manifest()
            except SkillUnavailable as exc:
                logger.warning("skill %s is not listed: %s", skill.uri, exc)
                continue
            described.append(
                {
                    "uri": skill.uri,
                    "name": frontmatter["name"],
                    "description": frontmatter["description"],
                    "mimeType": "text/markdown",
                    "size": len(data),
                }
            )
        return described

    def serves(self, uri: str) -> bool:
        """True when ``uri`` lies in the space of a skill (its directory or below): this set answers for it."""
        return self._owner(uri) is not None

    def read(self, uri: str, not_found: int) -> Dict[str, Any]:
        """``resources/read`` of a skill's file.

        Args:
            uri: a URI for which ``serves`` is true.
            not_found: the error code of a resource that does not exist in the request's era.

        Raises:
            JsonRpcError: ``not_found``: no file is served at ``uri``; ``-32603``: it cannot be read.
        """
        owner = self._owner(uri)
        segments = owner[1] if owner is not None else None
        path = owner[0].locate(segments) if owner is not None and segments else None
        if path is None:
            raise JsonRpcError(not_found, f"Resource not found: {uri}", {"uri": uri})
        try:
            data = read_file(path)
        except SkillUnavailable as exc:
            raise JsonRpcError(-32603, f"{uri} cannot be read: {exc}") from None
        return {"contents": [_contents(uri, data)]}

    def read_directory(self, params: Dict[str, Any]) -> Dict[str, Any]:
        """``resources/directory/read``: a page of the direct children of a directory resource.

        Raises:
            InvalidParams: no uri, a bad cursor, or a URI that is not a served directory (``-32602``).
        """
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise InvalidParams("resources/directory/read needs a uri (a string)")
        children = self._directory_children(uri)
        if children is None:
            raise InvalidParams(f"{uri} is not a directory resource", {"uri": uri})
        start = _offset(params, len(children))
        result: Dict[str, Any] = {"resources": children[start : start + PAGE_SIZE]}
        if start + PAGE_SIZE < len(children):
            result["nextCursor"] = str(start + PAGE_SIZE)
        return result

    # -- internals --------------------------------------------------------------------------

    def _snapshot(self) -> List[Skill]:
        with self._lock:
            return sorted(self._skills.values(), key=lambda skill: skill.uri)

    def _owner(self, uri: str) -> Optional[Tuple[Skill, Optional[List[str]]]]:
        """The skill whose space holds ``uri`` (the deepest), and the segments below its directory.

        The segments are ``None`` when one of them can never be served (empty,
        ``.``, ``..``, hidden, or holding a separator).
        """
        if not uri.startswith(SCHEME):
            return None
        best: Optional[Skill] = None
        for skill in self._snapshot():
            if (uri == skill.base or uri.startswith(skill.base + "/")) and (
                best is None or len(skill.path) > len(best.path)
            ):
                best = skill
        if best is None:
            return None
        rest = uri[len(best.base) + 1 :]
        segments = [unquote(segment) for segment in rest.split("/")] if rest else []
        for segment in segments:
            if not segment or segment.startswith(".") or "/" in segment or "\\" in segment or "\0" in segment:
                return best, None
        return best, segments

    def _directory_children(self, uri: str) -> Optional[List[Dict[str, Any]]]:
        owner = self._owner(uri)
        if owner is not None:
            skill, segments = owner
            relative = None if segments is None else skill.directory(segments)
            if relative is None:
                return None
            try:
                children = skill.children(relative)
            except SkillUnavailable:
                return None
            listed: List[Dict[str, Any]] = []
            for name, kind, _path, size in children:
                child_uri = skill.file_uri(f"{relative}/{name}" if relative else name)
                if kind == "dir":
                    listed.append({"uri": child_uri, "name": name, "mimeType": DIRECTORY_MIME_TYPE})
                else:
                    listed.append({"uri": child_uri, "name": name, "mimeType": mime_type(name), "size": size})
            return listed
        if not uri.startswith(SCHEME) or uri.endswith("/"):
            return None
        above = uri[len(SCHEME) :] + "/"  # a prefix above skills: its children are the next segments
        paths = [skill.path for skill in self._snapshot() if skill.path.startswith(above)]
        below = sorted({path[len(above) :].split("/", 1)[0] for path in paths})
        if not below:
            return None
        return [{"uri": uri + "/" + name, "name": name, "mimeType": DIRECTORY_MIME_TYPE} for name in below]


def _prefix_segments(prefix: Optional[str]) -> List[str]:
    if prefix is None or prefix == "":
        return []
    segments = prefix.strip("/").split("/")
    for segment in segments:
        if not _PREFIX_SEGMENT.fullmatch(segment):
            raise ValueError(f"prefix {prefix!r}: each segment is letters, digits and . _ ~ - (not {segment!r})")
    return segments


def _offset(params: Dict[str, Any], total: int) -> int:
    cursor = params.get("cursor")
    if cursor is None:
        return 0
    if not isinstance(cursor, str) or not cursor.isdigit() or int(cursor) > total:
        raise InvalidParams(f"invalid cursor {cursor!r}", {"cursor": cursor})
    return int(cursor)


def _contents(uri: str, data: bytes) -> Dict[str, Any]:
    kind = mime_type(uri.rsplit("/", 1)[-1])
    if b"\0" not in data:
        try:
            return {"uri": uri, "mimeType": kind, "text": data.decode("utf-8")}
        except UnicodeDecodeError:
            pass
    return {"uri": uri, "mimeType": kind, "blob": base64.b64encode(data).decode("ascii")}
