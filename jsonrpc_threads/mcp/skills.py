"""The skills extension (``io.modelcontextprotocol/skills``, SEP-2640): skills listed, loaded and verified.

Theory of operation.  A server that declares the extension serves *skills*:
directories of files, at least a ``SKILL.md`` whose YAML frontmatter has a
``name`` and a ``description``, each file an ordinary resource (read with
``resources/read``).  ``skills/list`` and ``skills/get`` return *entries*: the
skill's ``uri`` (its ``SKILL.md``), its ``frontmatter`` as JSON, and
``resources``: every file with its ``size`` and ``sha256`` ``digest`` (or
``"dynamic"`` when the server cannot give stable digests).

Listing reads no file: files are retrieved when they are needed, never ahead
(``list_skills`` returns the entries and nothing more).  ``load_skill``
reads the ``SKILL.md`` of an entry and verifies it before anything uses it:
its length against ``size``, its bytes against ``digest``, and its
frontmatter, field by field, against the entry's; any difference raises
``SkillVerificationError`` and the content is
not returned.  The ``LoadedSkill`` then reads supporting files one at a
time, each verified the same way, and refuses a file the entry does not list.

Frontmatter is YAML: parsing it needs PyYAML (the ``skills`` extra), imported
when a skill is loaded.

Thread-safety: a ``LoadedSkill`` may be used from any thread (it holds
no mutable state); the functions are as thread-safe as the client they use.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Protocol, Tuple, Union

from ..deadlines.flight import as_call_timeout
from ..deadlines.timeouts import DEFAULT_TIMEOUT, Deadline, Timeout
from ..errors import RequestTimeout
from .errors import ProtocolError, SkillVerificationError
from .listing import Listing

MISSING_EXTRA = "skill frontmatter is YAML: install the 'skills' extra, pip install 'jsonrpc_threads[skills]'"
DYNAMIC = "dynamic"
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_FRONTMATTER = re.compile(r"\A(?:\ufeff)?---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


class SkillClient(Protocol):
    """What the skills need of a client (``McpClient`` is one): its lists, its requests, its default timeout."""

    default_timeout: Optional[float]

    def listing(self, method: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Listing: ...

    def request(
        self, method: str, params: Optional[Mapping[str, Any]] = None, *, timeout: Timeout = DEFAULT_TIMEOUT
    ) -> Any: ...


@dataclass(frozen=True)
class LoadedSkill:
    """A skill whose ``SKILL.md`` was read and verified against its entry.

    Attributes:
        entry: the skill's entry, as the server listed it.
        text: the verified ``SKILL.md``.
        frontmatter: its frontmatter (equal to the entry's).
    """

    entry: Dict[str, Any]
    text: str
    frontmatter: Dict[str, Any]
    _client: SkillClient = field(repr=False, compare=False)

    @property
    def uri(self) -> str:
        """The URI of the skill's ``SKILL.md``."""
        return str(self.entry["uri"])

    @property
    def name(self) -> str:
        """The skill's name (``frontmatter.name``)."""
        return str(self.frontmatter.get("name"))

    def files(self) -> List[str]:
        """The URIs of the skill's files, as its entry lists them (``[]`` for a dynamic skill)."""
        resources = self.entry.get("resources")
        return [str(item["uri"]) for item in resources] if isinstance(resources, list) else []

    def read(self, path_or_uri: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Union[str, bytes]:
        """Read one of the skill's files, verified against the entry: text, or bytes for a blob.

        Args:
            path_or_uri: the file's URI, or its path relative to the skill's root
                (``references/FORMS.md``).
            timeout: seconds for the ``resources/read``; the client's
                ``default_timeout`` by default; ``None`` waits forever.

        Raises:
            SkillVerificationError: the file is not listed in the entry, or its
                size or digest differ (its content is not returned).
            JsonRpcError: as ``McpClient.read_resource``.
        """
        uri = path_or_uri if "://" in path_or_uri else self.uri.rsplit("/", 1)[0] + "/" + path_or_uri.lstrip("/")
        listing = self.entry.get("resources")
        expected = _listed(listing, uri)
        if listing != DYNAMIC and expected is None:
            raise SkillVerificationError(uri, "the skill's entry does not list this file")
        data, text = _read(self._client, uri, Deadline.after(timeout, self._client.default_timeout))
        if expected is not None:
            _verify(uri, data, expected)
        return text if text is not None else data


def list_skills(client: SkillClient, *, timeout: Timeout = DEFAULT_TIMEOUT) -> List[Dict[str, Any]]:
    """Every skill entry of the server (``skills/list``, all pages, ``timeout`` bounding them all); no file is read.

    ``timeout``: the client's ``default_timeout`` by default; ``None`` waits forever.

    Raises:
        ProtocolError: a malformed page, or an entry that is not an object with a ``uri``.
        RequestTimeout, JsonRpcError: as any request.
    """
    return client.listing("skills/list", timeout=timeout).items


def get_skill(client: SkillClient, uri: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> Dict[str, Any]:
    """The entry of the skill whose ``SKILL.md`` is at ``uri`` (``skills/get``).

    ``timeout``: the client's ``default_timeout`` by default; ``None`` waits forever.
    """
    return _get_skill(client, uri, Deadline.after(timeout, client.default_timeout))


def load_skill(
    client: SkillClient, entry_or_uri: Union[str, Mapping[str, Any]], *, timeout: Timeout = DEFAULT_TIMEOUT
) -> LoadedSkill:
    """Read a skill's ``SKILL.md`` and verify it against the skill's entry.

    Args:
        client: the client of the server that serves the skill.
        entry_or_uri: the skill's entry (from ``list_skills``), or the URI
            of its ``SKILL.md`` (its entry is then fetched with ``skills/get``).
        timeout: seconds for the whole load (``skills/get`` when given a URI,
            then ``resources/read``); the client's ``default_timeout`` by
            default; ``None`` waits forever.

    Raises:
        SkillVerificationError: the entry is malformed, or the ``SKILL.md``
            does not match it (size, digest, or frontmatter).
        ImportError: PyYAML (the ``skills`` extra) is not installed.
        JsonRpcError: as the requests it makes.
    """
    yaml = _yaml()
    deadline = Deadline.after(timeout, client.default_timeout)
    entry = dict(_get_skill(client, entry_or_uri, deadline) if isinstance(entry_or_uri, str) else entry_or_uri)
    uri = entry.get("uri")
    if not isinstance(uri, str) or not uri:
        raise SkillVerificationError(str(uri), "the entry has no uri")
    frontmatter = entry.get("frontmatter")
    if not isinstance(frontmatter, dict):
        raise SkillVerificationError(uri, "the entry has no frontmatter")
    listing = entry.get("resources")
    expected = _check_listing(uri, listing)
    data, text = _read(client, uri, deadline)
    if expected is not None:
        _verify(uri, data, expected)
    if text is None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise SkillVerificationError(uri, "SKILL.md is not UTF-8 text") from None
    parsed = _frontmatter(yaml, uri, text)
    if parsed != frontmatter:
        differ = set(parsed) ^ set(frontmatter) | {
            k for k in parsed if k in frontmatter and parsed[k] != frontmatter[k]
        }
        fields = sorted(map(str, differ))
        raise SkillVerificationError(uri, f"its frontmatter differs from the entry's ({', '.join(fields)})")
    return LoadedSkill(entry, text, parsed, client)


# -- internals ------------------------------------------------------------------------------


def _request(client: SkillClient, method: str, params: Dict[str, Any], deadline: Deadline) -> Any:
    """One request of a call, within what is left of its ``deadline`` (a timeout names the whole call's)."""
    try:
        return client.request(method, params, timeout=deadline.remaining())
    except RequestTimeout as exc:
        raise as_call_timeout(exc, deadline) from None


def _get_skill(client: SkillClient, uri: str, deadline: Deadline) -> Dict[str, Any]:
    result = _request(client, "skills/get", {"uri": uri}, deadline)
    skill = result.get("skill") if isinstance(result, dict) else None
    if not isinstance(skill, dict):
        raise ProtocolError("skills/get answered without a skill", result)
    return skill


def _check_listing(uri: str, listing: Any) -> Optional[Tuple[int, str]]:
    """The size and digest the entry gives for its SKILL.md (``None`` for a dynamic skill)."""
    if listing == DYNAMIC:
        return None
    if not isinstance(listing, list):
        raise SkillVerificationError(uri, "the entry's resources are neither a list nor 'dynamic'")
    for item in listing:
        if not (isinstance(item, dict) and isinstance(item.get("uri"), str)):
            raise SkillVerificationError(uri, "the entry lists a file without a uri")
        size, digest = item.get("size"), item.get("digest")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise SkillVerificationError(item["uri"], "the entry gives no valid size")
        if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
            raise SkillVerificationError(item["uri"], "the entry gives no valid sha256 digest")
    expected = _listed(listing, uri)
    if expected is None:
        raise SkillVerificationError(uri, "the entry's resources do not list its SKILL.md")
    return expected


def _listed(listing: Any, uri: str) -> Optional[Tuple[int, str]]:
    if not isinstance(listing, list):
        return None
    for item in listing:
        if isinstance(item, dict) and item.get("uri") == uri:
            return int(item.get("size", -1)), str(item.get("digest", ""))
    return None


def _read(client: SkillClient, uri: str, deadline: Deadline) -> Tuple[bytes, Optional[str]]:
    """The raw bytes of a resource (and its text, when it came as text)."""
    result = _request(client, "resources/read", {"uri": uri}, deadline)
    contents = result.get("contents") if isinstance(result, dict) else None
    item = next((c for c in contents or [] if isinstance(c, dict) and c.get("uri") == uri), None)
    if item is None and contents:
        item = contents[0] if isinstance(contents[0], dict) else None
    if item is None:
        raise SkillVerificationError(uri, "resources/read returned no content")
    if isinstance(item.get("text"), str):
        return item["text"].encode("utf-8"), item["text"]
    if isinstance(item.get("blob"), str):
        try:
            return base64.b64decode(item["blob"], validate=True), None
        except ValueError:
            raise SkillVerificationError(uri, "the blob is not base64") from None
    raise SkillVerificationError(uri, "resources/read returned neither text nor blob")


def _verify(uri: str, data: bytes, expected: Tuple[int, str]) -> None:
    size, digest = expected
    if len(data) != size:
        raise SkillVerificationError(uri, f"{len(data)} bytes where the entry says {size}")
    actual = "sha256:" + hashlib.sha256(data).hexdigest()
    if actual != digest:
        raise SkillVerificationError(uri, "its sha256 digest differs from the entry's")


def _yaml() -> Any:
    try:
        return importlib.import_module("yaml")
    except ImportError as exc:
        raise ImportError(MISSING_EXTRA) from exc


def _frontmatter(yaml: Any, uri: str, text: str) -> Dict[str, Any]:
    match = _FRONTMATTER.match(text)
    if match is None:
        raise SkillVerificationError(uri, "SKILL.md does not begin with YAML frontmatter")
    try:
        value = yaml.load(match.group(1), Loader=_loader(yaml))
    except yaml.YAMLError:
        raise SkillVerificationError(uri, "its frontmatter is not valid YAML") from None
    if not isinstance(value, dict):
        raise SkillVerificationError(uri, "its frontmatter is not a mapping")
    return value


_LOADERS: Dict[int, Any] = {}


def _loader(yaml: Any) -> Any:
    """A SafeLoader that reads timestamps as the strings JSON has for them."""
    loader = _LOADERS.get(id(yaml))
    if loader is None:

        class JsonLikeLoader(yaml.SafeLoader):  # type: ignore[misc]
            pass

        JsonLikeLoader.yaml_implicit_resolvers = {
            key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
            for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
        }
        loader = _LOADERS[id(yaml)] = JsonLikeLoader
    return loader


__all__ = [
    "DYNAMIC",
    "MISSING_EXTRA",
    "LoadedSkill",
    "SkillClient",
    "get_skill",
    "list_skills",
    "load_skill",
]
