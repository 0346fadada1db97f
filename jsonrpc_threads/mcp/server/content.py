"""What a tool, a prompt or a resource returns, as MCP's JSON: content blocks and results (pure).

Theory of operation.  A function served by ``McpServer`` returns plain Python
values; this module turns them into the shapes MCP sends: ``tool_result``
makes a ``CallToolResult``, ``prompt_messages`` the ``messages`` of a
``GetPromptResult``, ``resource_contents`` the ``contents`` of a
``ReadResourceResult``.  The non-text blocks are small value objects
(``Image``, ``Audio``, ``ResourceLink``, ``EmbeddedResource``), each knowing
its block (``to_block()``).  Nothing here does I/O but ``Image`` and ``Audio``
reading their ``path``, once, when they are made; the functions are pure and
thread-safe, and the block objects are not changed once made.

``json_value`` is the one conversion of a Python value into JSON's types
(dataclasses, pydantic models, enums, tuples, sets, bytes, dates), shared with
the structured results of ``schema.Signature``.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import decimal
import enum
import json
import os
import pathlib
import sys
import uuid
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

#: The ``uri`` of the ``resource`` block made for bytes a tool returns that are neither an image
#: nor audio (a block of type ``resource`` must name one; nothing else names these bytes).
UNNAMED_BLOB_URI = "urn:jsonrpc-threads:tool-result"
#: The MIME type of text and of bytes when the function does not say.
DEFAULT_TEXT_MIME = "text/plain"
DEFAULT_BLOB_MIME = "application/octet-stream"

#: The content block types of MCP, with the keys each must carry (to tell a block from plain data).
_BLOCK_KEYS: Dict[str, Tuple[str, ...]] = {
    "text": ("text",),
    "image": ("data", "mimeType"),
    "audio": ("data", "mimeType"),
    "resource_link": ("uri", "name"),
    "resource": ("resource",),
}
#: The keys of a whole ``CallToolResult``, which a tool may return as is.
_RESULT_KEYS = frozenset({"content", "isError", "structuredContent", "_meta"})
_ROLES = ("user", "assistant")

_IMAGE_SUFFIXES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
    ".svg": "image/svg+xml",
}
_AUDIO_SUFFIXES = {
    ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
    ".ogg": "audio/ogg",
    ".oga": "audio/ogg",
    ".opus": "audio/ogg",
    ".flac": "audio/flac",
    ".m4a": "audio/mp4",
    ".aac": "audio/aac",
    ".aif": "audio/aiff",
    ".aiff": "audio/aiff",
}


def _image_magic(data: bytes) -> Optional[str]:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data.startswith(b"BM") and len(data) > 14 and int.from_bytes(data[2:6], "little") == len(data):
        return "image/bmp"
    return None


def _audio_magic(data: bytes) -> Optional[str]:
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    if data.startswith(b"ID3") or (len(data) > 1 and data[0] == 0xFF and (data[1] & 0xF6) in (0xF2, 0xF4)):
        return "audio/mpeg"  # an ID3 tag, or an MPEG layer III/II frame header
    if data.startswith(b"OggS"):
        return "audio/ogg"
    if data.startswith(b"fLaC"):
        return "audio/flac"
    if data[4:11] == b"ftypM4A":
        return "audio/mp4"
    if data[:4] == b"FORM" and data[8:12] in (b"AIFF", b"AIFC"):
        return "audio/aiff"
    return None


class _Block:
    """A content block object: equal to another when their blocks are equal."""

    def to_block(self) -> Dict[str, Any]:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and isinstance(other, _Block) and other.to_block() == self.to_block()

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_block(), sort_keys=True))


class _Media(_Block):
    _type = ""
    _suffixes: Mapping[str, str] = {}

    def __init__(
        self,
        data: Optional[bytes] = None,
        *,
        path: Union[str, os.PathLike[str], None] = None,
        mime_type: Optional[str] = None,
    ) -> None:
        kind = type(self).__name__
        if (data is None) == (path is None):
            raise ValueError(f"{kind}() takes data or path, exactly one")
        guessed = None
        if path is not None:
            data = pathlib.Path(path).read_bytes()
            guessed = self._suffixes.get(pathlib.PurePath(path).suffix.lower())
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"{kind}() data must be bytes, not {type(data).__name__}")
        self.data = bytes(data)
        self.mime_type = mime_type or guessed or self._magic(self.data)
        if not self.mime_type:
            raise ValueError(f"{kind}(): the MIME type is not known from the path or the data; pass mime_type")

    @staticmethod
    def _magic(data: bytes) -> Optional[str]:
        raise NotImplementedError

    def to_block(self) -> Dict[str, Any]:
        return {"type": self._type, "data": base64.b64encode(self.data).decode("ascii"), "mimeType": self.mime_type}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(<{len(self.data)} bytes>, mime_type={self.mime_type!r})"


class Image(_Media):
    """An image block: ``Image(data)`` or ``Image(path=...)``, exactly one, read once when made.

    The MIME type is ``mime_type``, else guessed from the path's suffix (``.png``,
    ``.jpg``, ``.gif``, ``.webp``, ``.bmp``, ``.svg``), else from the data's first
    bytes (PNG, JPEG, GIF, WebP, BMP).  Immutable; safe to share between threads.

    Raises:
        ValueError: both or neither of ``data`` and ``path``, or no MIME type found.
        TypeError: ``data`` is not bytes.
        OSError: ``path`` could not be read.
    """

    _type = "image"
    _suffixes = _IMAGE_SUFFIXES
    _magic = staticmethod(_image_magic)


class Audio(_Media):
    """An audio block: ``Audio(data)`` or ``Audio(path=...)``, exactly one, read once when made.

    The MIME type is ``mime_type``, else guessed from the path's suffix (``.wav``,
    ``.mp3``, ``.ogg``, ``.flac``, ``.m4a``, ``.aac``, ``.aiff``...), else from the
    data's first bytes (WAV, MP3, Ogg, FLAC, M4A, AIFF).  Immutable; thread-safe.

    Raises:
        ValueError: both or neither of ``data`` and ``path``, or no MIME type found.
        TypeError: ``data`` is not bytes.
        OSError: ``path`` could not be read.
    """

    _type = "audio"
    _suffixes = _AUDIO_SUFFIXES
    _magic = staticmethod(_audio_magic)


class ResourceLink(_Block):
    """A link to a resource the client may read (block type ``resource_link``); immutable, thread-safe.

    ``name`` defaults to the last segment of the URI's path (or the whole URI).
    """

    def __init__(
        self,
        uri: str,
        *,
        name: Optional[str] = None,
        title: Optional[str] = None,
        description: Optional[str] = None,
        mime_type: Optional[str] = None,
    ) -> None:
        self.uri = uri
        self.name = name or uri.rstrip("/").rsplit("/", 1)[-1] or uri
        self.title, self.description, self.mime_type = title, description, mime_type

    def to_block(self) -> Dict[str, Any]:
        block = {"type": "resource_link", "uri": self.uri, "name": self.name}
        for key, value in (("title", self.title), ("description", self.description), ("mimeType", self.mime_type)):
            if value is not None:
                block[key] = value
        return block

    def __repr__(self) -> str:
        return f"ResourceLink({self.uri!r}, name={self.name!r})"


class EmbeddedResource(_Block):
    """A resource's contents inside a result (block type ``resource``): text or a blob, exactly one.

    ``mime_type`` defaults to ``text/plain`` for text and ``application/octet-stream``
    for a blob.  Immutable; safe to share between threads.

    Raises:
        ValueError: both or neither of ``text`` and ``blob``.
    """

    def __init__(
        self, uri: str, text: Optional[str] = None, *, blob: Optional[bytes] = None, mime_type: Optional[str] = None
    ) -> None:
        if (text is None) == (blob is None):
            raise ValueError("EmbeddedResource() takes text or blob, exactly one")
        self.uri, self.text = uri, text
        self.blob = None if blob is None else bytes(blob)
        self.mime_type = mime_type or (DEFAULT_TEXT_MIME if text is not None else DEFAULT_BLOB_MIME)

    def contents(self) -> Dict[str, Any]:
        """The resource's contents (``{"uri", "mimeType", "text" | "blob"}``), as a resource read gives them."""
        if self.blob is not None:
            return {"uri": self.uri, "mimeType": self.mime_type, "blob": base64.b64encode(self.blob).decode("ascii")}
        return {"uri": self.uri, "mimeType": self.mime_type, "text": self.text}

    def to_block(self) -> Dict[str, Any]:
        return {"type": "resource", "resource": self.contents()}

    def __repr__(self) -> str:
        return f"EmbeddedResource({self.uri!r}, mime_type={self.mime_type!r})"


#: The classes of content block objects (what a return annotation names when a tool returns content).
CONTENT_CLASSES: Tuple[type, ...] = (Image, Audio, ResourceLink, EmbeddedResource)


def json_value(value: Any) -> Any:
    """``value`` made of JSON's types, recursively.

    A dataclass becomes a dict of its fields, a pydantic model ``model_dump(mode="json")``,
    an Enum its value, a tuple or set a list, bytes base64 text, a date, time, UUID, path or
    Decimal its text, a content block object its block.  Anything else is returned as is
    (``json.dumps`` decides).  Pure and thread-safe.
    """
    if isinstance(value, enum.Enum):
        return json_value(value.value)
    if value is None or isinstance(value, (str, int, float)):
        return value
    if isinstance(value, Mapping):
        return {
            (key if isinstance(key, str) else str(json_value(key))): json_value(item) for key, item in value.items()
        }
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_value(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: json_value(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if _is_pydantic_model(value):
        return value.model_dump(mode="json")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (uuid.UUID, pathlib.PurePath, decimal.Decimal)):
        return str(value)
    if isinstance(value, _Block):
        return value.to_block()
    return value


def _is_pydantic_model(value: Any) -> bool:
    base = getattr(sys.modules.get("pydantic"), "BaseModel", None)  # a model exists only once pydantic is imported
    return base is not None and isinstance(value, base)


def _json_text(value: Any) -> str:
    return json.dumps(json_value(value), ensure_ascii=False, default=str)


def _as_block(value: Any) -> Optional[Dict[str, Any]]:
    """``value`` as a content block when it is one (a block object or a block's dict), else None."""
    if isinstance(value, _Block):
        return value.to_block()
    if isinstance(value, dict) and all(key in value for key in _BLOCK_KEYS.get(str(value.get("type")), ("\0",))):
        return value
    return None


def _bytes_block(data: bytes) -> Dict[str, Any]:
    mime = _image_magic(data)
    if mime:
        return Image(data, mime_type=mime).to_block()
    mime = _audio_magic(data)
    if mime:
        return Audio(data, mime_type=mime).to_block()
    return EmbeddedResource(UNNAMED_BLOB_URI, blob=data).to_block()


def _tool_block(value: Any) -> Dict[str, Any]:
    if isinstance(value, str):
        return {"type": "text", "text": value}
    if isinstance(value, (bytes, bytearray)):
        return _bytes_block(bytes(value))
    block = _as_block(value)
    return block if block is not None else {"type": "text", "text": _json_text(value)}


def tool_result(value: Any, structured: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """The ``CallToolResult`` for what a tool returned.

    - ``str``: one text block;
    - ``bytes``: an image or audio block when the first bytes say which (PNG, JPEG,
      GIF, WebP, BMP; WAV, MP3, Ogg, FLAC, M4A, AIFF), else an embedded resource block
      with the bytes as its blob, ``mimeType`` ``application/octet-stream`` and the
      ``uri`` ``UNNAMED_BLOB_URI``;
    - a content block object (``Image``...) or a dict that is a content block: that block;
    - a list or tuple: one block per item, each converted as above (anything else as JSON text);
    - ``None``: no content;
    - a dict that is already a whole ``CallToolResult`` (a ``content`` list, and no keys but
      ``isError``, ``structuredContent`` and ``_meta`` beside it): passed through unchanged;
    - anything else (dict, dataclass, number, bool...): one text block holding its JSON
      (``ensure_ascii=False``, keys in their order).

    Args:
        value: what the tool returned.
        structured: its structured content (``Signature.structured``), added as
            ``structuredContent`` when not None.

    Returns:
        The result, JSON-serializable.
    """
    if isinstance(value, dict) and isinstance(value.get("content"), list) and set(value) <= _RESULT_KEYS:
        return value
    if value is None:
        content: List[Dict[str, Any]] = []
    elif isinstance(value, (list, tuple)):
        content = [_tool_block(item) for item in value]
    else:
        content = [_tool_block(value)]
    result: Dict[str, Any] = {"content": content}
    if structured is not None:
        result["structuredContent"] = structured
    return result


def error_result(message: str) -> Dict[str, Any]:
    """The ``CallToolResult`` of a tool that failed: ``message`` as text, ``isError`` true."""
    return {"content": [{"type": "text", "text": message}], "isError": True}


def _message_content(content: Any) -> Dict[str, Any]:
    if isinstance(content, str):
        return {"type": "text", "text": content}
    block = _as_block(content)
    if block is None:
        raise TypeError(f"a prompt message's content must be text or a content block, not {type(content).__name__}")
    return block


def user(content: Any) -> Dict[str, Any]:
    """A prompt message from the user: ``content`` is text, a content block object, or a block's dict.

    Raises:
        TypeError: ``content`` is none of these.
    """
    return {"role": "user", "content": _message_content(content)}


def assistant(content: Any) -> Dict[str, Any]:
    """A prompt message from the assistant; ``content`` as for ``user``.

    Raises:
        TypeError: ``content`` is not text nor a content block.
    """
    return {"role": "assistant", "content": _message_content(content)}


def _prompt_message(item: Any) -> Dict[str, Any]:
    if isinstance(item, dict) and "role" in item and "content" in item:
        if item["role"] not in _ROLES:
            raise ValueError(f"a prompt message's role is 'user' or 'assistant', not {item['role']!r}")
        content = item["content"]
        if isinstance(content, (str, _Block)):
            return {**item, "content": _message_content(content)}
        return item
    return user(item)


def prompt_messages(value: Any) -> List[Dict[str, Any]]:
    """The ``messages`` of a ``GetPromptResult`` for what a prompt function returned.

    Text, or a content block (object or dict), is one user message; a dict with
    ``role`` and ``content`` is that message (its content converted when it is text
    or a block object); a list or tuple is one message per item.

    Raises:
        TypeError: a value that is none of these.
        ValueError: a message whose role is not ``user`` or ``assistant``.
    """
    items = value if isinstance(value, (list, tuple)) else [value]
    return [_prompt_message(item) for item in items]


def _contents(uri: str, item: Any, mime_type: Optional[str]) -> Dict[str, Any]:
    if isinstance(item, str):
        return {"uri": uri, "mimeType": mime_type or DEFAULT_TEXT_MIME, "text": item}
    if isinstance(item, (bytes, bytearray, memoryview)):
        blob = base64.b64encode(bytes(item)).decode("ascii")
        return {"uri": uri, "mimeType": mime_type or DEFAULT_BLOB_MIME, "blob": blob}
    if isinstance(item, EmbeddedResource):
        return item.contents()
    if isinstance(item, dict) and "uri" in item and ("text" in item or "blob" in item):
        return item
    raise TypeError(f"a resource must give str, bytes or a dict of contents, not {type(item).__name__}")


def resource_contents(uri: str, value: Any, mime_type: Optional[str]) -> List[Dict[str, Any]]:
    """The ``contents`` of a ``ReadResourceResult`` for what a resource function returned.

    ``str`` is text (``mimeType`` ``mime_type`` or ``text/plain``), bytes a base64 blob
    (``mime_type`` or ``application/octet-stream``), an ``EmbeddedResource`` its contents,
    a dict with ``uri`` and ``text`` or ``blob`` is taken as is; a list or tuple of these
    gives one entry each.

    Args:
        uri: the URI that was read.
        value: what the function returned.
        mime_type: the resource's declared MIME type, or None.

    Raises:
        TypeError: a value that is none of these (the engine answers with an error).
    """
    items = value if isinstance(value, (list, tuple)) else [value]
    return [_contents(uri, item, mime_type) for item in items]
