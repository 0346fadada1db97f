"""What a tool, a prompt or a resource returns, as MCP's JSON (jsonrpc_threads/mcp/server/content.py).

Pure tests: no process, no socket; the only file read is an image or a sound written to ``tmp_path``.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import json
import pathlib
import uuid
from typing import Any, Dict, List

import pytest

from jsonrpc_threads.mcp.server.content import (
    UNNAMED_BLOB_URI,
    Audio,
    EmbeddedResource,
    Image,
    ResourceLink,
    assistant,
    error_result,
    json_value,
    prompt_messages,
    resource_contents,
    tool_result,
    user,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 16
GIF = b"GIF89a" + b"\x00" * 16
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 8
WAV = b"RIFF\x10\x00\x00\x00WAVEfmt " + b"\x00" * 8
MP3_ID3 = b"ID3\x03\x00" + b"\x00" * 16
MP3_FRAME = b"\xff\xfb\x90\x00" + b"\x00" * 16
OGG = b"OggS" + b"\x00" * 16
FLAC = b"fLaC" + b"\x00" * 16
UNKNOWN = b"\x00\x01\x02 plain bytes"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def assert_json(value: Any) -> None:
    """Everything these functions give is JSON as is."""
    assert json.loads(json.dumps(value)) == value


class Mood(enum.Enum):
    CALM = "calm"


@dataclasses.dataclass
class Reading:
    city: str
    at: datetime.date
    mood: Mood
    tags: tuple = ()


# -- Image and Audio -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "mime"), [(PNG, "image/png"), (JPEG, "image/jpeg"), (GIF, "image/gif"), (WEBP, "image/webp")]
)
def test_an_image_knows_its_type_from_its_first_bytes(data: bytes, mime: str) -> None:
    image = Image(data)
    assert image.mime_type == mime
    assert image.to_block() == {"type": "image", "data": b64(data), "mimeType": mime}
    assert_json(image.to_block())


@pytest.mark.parametrize(
    ("data", "mime"),
    [(WAV, "audio/wav"), (MP3_ID3, "audio/mpeg"), (MP3_FRAME, "audio/mpeg"), (OGG, "audio/ogg"), (FLAC, "audio/flac")],
)
def test_audio_knows_its_type_from_its_first_bytes(data: bytes, mime: str) -> None:
    audio = Audio(data)
    assert audio.to_block() == {"type": "audio", "data": b64(data), "mimeType": mime}


def test_a_path_is_read_once_and_its_suffix_names_the_type(tmp_path: pathlib.Path) -> None:
    photo = tmp_path / "photo.JPG"
    photo.write_bytes(UNKNOWN)  # the suffix says JPEG; the bytes say nothing
    image = Image(path=photo)
    photo.unlink()  # read when made, never again
    assert image.to_block() == {"type": "image", "data": b64(UNKNOWN), "mimeType": "image/jpeg"}
    sound = tmp_path / "sound.flac"
    sound.write_bytes(UNKNOWN)
    assert Audio(path=str(sound)).mime_type == "audio/flac"
    unnamed = tmp_path / "picture.bin"
    unnamed.write_bytes(GIF)
    assert Image(path=unnamed).mime_type == "image/gif"  # an unknown suffix: the bytes tell
    with pytest.raises(OSError):
        Image(path=tmp_path / "missing.png")


def test_an_explicit_mime_type_wins_and_an_unknown_type_is_refused() -> None:
    assert Image(UNKNOWN, mime_type="image/x-custom").to_block()["mimeType"] == "image/x-custom"
    assert Image(bytearray(PNG)).data == PNG
    with pytest.raises(ValueError, match="MIME type"):
        Image(UNKNOWN)
    with pytest.raises(ValueError, match="MIME type"):
        Audio(PNG)  # an image is not audio
    with pytest.raises(ValueError, match="exactly one"):
        Image()
    with pytest.raises(ValueError, match="exactly one"):
        Audio(WAV, path="x.wav")
    with pytest.raises(TypeError, match="bytes"):
        Image("not bytes")  # type: ignore[arg-type]


def test_blocks_compare_by_their_content() -> None:
    assert Image(PNG) == Image(PNG, mime_type="image/png") and Image(PNG) != Image(GIF)
    assert Image(WAV, mime_type="audio/wav") != Audio(WAV)  # same bytes, another kind of block
    assert len({ResourceLink("a://x"), ResourceLink("a://x")}) == 1
    assert "bytes" in repr(Image(PNG))  # the data is not printed


# -- resource links and embedded resources ---------------------------------------------------------------


def test_a_resource_link_block() -> None:
    link = ResourceLink("file:///docs/readme.md", title="Read me", description="the guide", mime_type="text/markdown")
    assert link.to_block() == {
        "type": "resource_link",
        "uri": "file:///docs/readme.md",
        "name": "readme.md",
        "title": "Read me",
        "description": "the guide",
        "mimeType": "text/markdown",
    }
    assert ResourceLink("test://static", name="static").to_block() == {
        "type": "resource_link",
        "uri": "test://static",
        "name": "static",
    }


def test_an_embedded_resource_holds_text_or_a_blob() -> None:
    assert EmbeddedResource("test://a", "hello").to_block() == {
        "type": "resource",
        "resource": {"uri": "test://a", "mimeType": "text/plain", "text": "hello"},
    }
    assert EmbeddedResource("test://b", blob=b"\x00\x01", mime_type="application/x-thing").to_block() == {
        "type": "resource",
        "resource": {"uri": "test://b", "mimeType": "application/x-thing", "blob": b64(b"\x00\x01")},
    }
    assert EmbeddedResource("test://c", blob=b"").to_block()["resource"]["mimeType"] == "application/octet-stream"
    with pytest.raises(ValueError, match="exactly one"):
        EmbeddedResource("test://d")
    with pytest.raises(ValueError, match="exactly one"):
        EmbeddedResource("test://d", "text", blob=b"blob")


# -- tool results ------------------------------------------------------------------------------------------


def test_text_is_one_text_block() -> None:
    assert tool_result("hi", None) == {"content": [{"type": "text", "text": "hi"}]}
    assert tool_result("", None) == {"content": [{"type": "text", "text": ""}]}


def test_none_is_no_content() -> None:
    assert tool_result(None, None) == {"content": []}
    assert tool_result(None, {"result": None}) == {"content": [], "structuredContent": {"result": None}}


def test_bytes_are_an_image_or_audio_when_recognized_else_an_embedded_blob() -> None:
    assert tool_result(PNG, None) == {"content": [{"type": "image", "data": b64(PNG), "mimeType": "image/png"}]}
    assert tool_result(WAV, None) == {"content": [{"type": "audio", "data": b64(WAV), "mimeType": "audio/wav"}]}
    blob = {"uri": UNNAMED_BLOB_URI, "mimeType": "application/octet-stream", "blob": b64(UNKNOWN)}
    assert tool_result(UNKNOWN, None) == {"content": [{"type": "resource", "resource": blob}]}


def test_block_objects_and_block_dicts_are_their_blocks() -> None:
    assert tool_result(Image(PNG), None) == {"content": [Image(PNG).to_block()]}
    link = {"type": "resource_link", "uri": "test://x", "name": "x"}
    assert tool_result(link, None) == {"content": [link]}
    text = {"type": "text", "text": "as is", "annotations": {"priority": 1}}
    assert tool_result(text, None) == {"content": [text]}


def test_a_dict_that_only_looks_like_a_block_is_data() -> None:
    data = {"type": "text", "value": 3}  # no "text" key: not a text block
    assert tool_result(data, data) == {
        "content": [{"type": "text", "text": '{"type": "text", "value": 3}'}],
        "structuredContent": data,
    }


def test_a_list_is_one_block_per_item() -> None:
    result = tool_result(["a", Image(GIF), {"n": 1}, 2, None, {"type": "text", "text": "b"}, b"\x00\x00"], None)
    assert result["content"] == [
        {"type": "text", "text": "a"},
        Image(GIF).to_block(),
        {"type": "text", "text": '{"n": 1}'},
        {"type": "text", "text": "2"},
        {"type": "text", "text": "null"},
        {"type": "text", "text": "b"},
        {
            "type": "resource",
            "resource": {"uri": UNNAMED_BLOB_URI, "mimeType": "application/octet-stream", "blob": "AAA="},
        },
    ]
    assert tool_result((), None) == {"content": []}
    assert_json(result)


def test_data_is_its_json_as_text_with_the_structured_content_beside_it() -> None:
    reading = Reading("Zürich", datetime.date(2026, 1, 2), Mood.CALM, ("a", "b"))
    structured = {"city": "Zürich", "at": "2026-01-02", "mood": "calm", "tags": ["a", "b"]}
    result = tool_result(reading, structured)
    assert result == {
        "content": [
            {"type": "text", "text": '{"city": "Zürich", "at": "2026-01-02", "mood": "calm", "tags": ["a", "b"]}'}
        ],
        "structuredContent": structured,
    }
    assert tool_result({"b": 1, "a": 2}, None)["content"][0]["text"] == '{"b": 1, "a": 2}'  # keys in their order
    assert tool_result(42, {"result": 42}) == {
        "content": [{"type": "text", "text": "42"}],
        "structuredContent": {"result": 42},
    }
    assert tool_result(True, None)["content"][0]["text"] == "true"
    assert tool_result(1.5, None)["content"][0]["text"] == "1.5"
    assert_json(result)


def test_a_whole_call_tool_result_passes_through_unchanged() -> None:
    whole = {"content": [{"type": "text", "text": "x"}], "isError": True, "structuredContent": {"a": 1}, "_meta": {}}
    assert tool_result(whole, {"ignored": True}) is whole
    not_whole = {"content": [], "other": 1}  # a key CallToolResult does not have: plain data
    assert tool_result(not_whole, None)["content"][0]["type"] == "text"


def test_an_error_result() -> None:
    assert error_result("boom: it failed") == {
        "content": [{"type": "text", "text": "boom: it failed"}],
        "isError": True,
    }


# -- prompts -----------------------------------------------------------------------------------------------


def test_text_is_one_user_message() -> None:
    assert prompt_messages("Hello") == [{"role": "user", "content": {"type": "text", "text": "Hello"}}]


def test_a_block_is_one_user_message() -> None:
    resource = EmbeddedResource("test://doc", "the doc")
    assert prompt_messages(resource) == [{"role": "user", "content": resource.to_block()}]
    assert prompt_messages(Image(PNG)) == [{"role": "user", "content": Image(PNG).to_block()}]


def test_messages_and_lists_of_them() -> None:
    messages = prompt_messages(
        [
            "Question?",
            assistant("Answer."),
            {"role": "user", "content": "follow-up"},
            {"role": "assistant", "content": Image(GIF)},
            {"role": "user", "content": {"type": "text", "text": "kept"}},
            user(ResourceLink("test://x")),
        ]
    )
    assert messages == [
        {"role": "user", "content": {"type": "text", "text": "Question?"}},
        {"role": "assistant", "content": {"type": "text", "text": "Answer."}},
        {"role": "user", "content": {"type": "text", "text": "follow-up"}},
        {"role": "assistant", "content": Image(GIF).to_block()},
        {"role": "user", "content": {"type": "text", "text": "kept"}},
        {"role": "user", "content": {"type": "resource_link", "uri": "test://x", "name": "x"}},
    ]
    assert_json(messages)


def test_what_is_not_a_message_is_refused() -> None:
    with pytest.raises(TypeError, match="int"):
        prompt_messages(3)
    with pytest.raises(TypeError):
        prompt_messages(["ok", {"no": "role"}])
    with pytest.raises(ValueError, match="'system'"):
        prompt_messages({"role": "system", "content": "x"})
    with pytest.raises(TypeError):
        user(b"bytes")


# -- resources ---------------------------------------------------------------------------------------------


def test_text_and_bytes_contents_with_default_mime_types() -> None:
    assert resource_contents("test://a", "hello", None) == [
        {"uri": "test://a", "mimeType": "text/plain", "text": "hello"}
    ]
    assert resource_contents("test://a", "# hi", "text/markdown") == [
        {"uri": "test://a", "mimeType": "text/markdown", "text": "# hi"}
    ]
    assert resource_contents("test://b", b"\x00", None) == [
        {"uri": "test://b", "mimeType": "application/octet-stream", "blob": "AA=="}
    ]
    assert resource_contents("test://b", PNG, "image/png")[0]["mimeType"] == "image/png"


def test_several_contents_and_dicts_as_is() -> None:
    given = {"uri": "test://other", "mimeType": "application/json", "text": "{}"}
    contents = resource_contents("test://a", ["one", b"\x01", given, EmbeddedResource("test://e", "e")], None)
    assert contents == [
        {"uri": "test://a", "mimeType": "text/plain", "text": "one"},
        {"uri": "test://a", "mimeType": "application/octet-stream", "blob": "AQ=="},
        given,
        {"uri": "test://e", "mimeType": "text/plain", "text": "e"},
    ]
    assert_json(contents)


def test_anything_else_is_a_type_error() -> None:
    for value in (3, {"text": "no uri"}, None, ["ok", 4.5]):
        with pytest.raises(TypeError):
            resource_contents("test://a", value, None)


# -- json_value --------------------------------------------------------------------------------------------


def test_json_value_converts_every_python_type_it_knows() -> None:
    ident = uuid.UUID("12345678-1234-5678-1234-567812345678")
    value: Dict[str, Any] = {
        "reading": Reading("Oslo", datetime.date(2026, 1, 2), Mood.CALM),
        "set": frozenset({1}),
        "when": datetime.datetime(2026, 1, 2, 3, 4, tzinfo=datetime.timezone.utc),
        "at": datetime.time(5, 6),
        "id": ident,
        "path": pathlib.PurePosixPath("a/b"),
        "raw": b"\x00",
        "block": ResourceLink("test://x"),
        Mood.CALM: 1,
        2: "int key",
    }
    converted = json_value(value)
    assert converted == {
        "reading": {"city": "Oslo", "at": "2026-01-02", "mood": "calm", "tags": []},
        "set": [1],
        "when": "2026-01-02T03:04:00+00:00",
        "at": "05:06:00",
        "id": str(ident),
        "path": "a/b",
        "raw": "AA==",
        "block": {"type": "resource_link", "uri": "test://x", "name": "x"},
        "calm": 1,
        "2": "int key",
    }
    assert_json(converted)
    items: List[Any] = [1, "x", None, True, 1.5]
    assert json_value(items) == items
