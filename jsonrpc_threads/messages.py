"""JSON-RPC 2.0 envelopes: build, encode, decode and classify.  Pure: no I/O.

This module knows the shape of the four JSON-RPC 2.0 messages and nothing of who
sends them or how they travel.  Messages on the wire are plain JSON objects;
``parse_message`` turns one decoded object into a small frozen event
(``Request``, ``Notification``, ``Response`` or
``ErrorResponse``), and the ``*_message`` builders go the other way.

Rules enforced here (JSON-RPC 2.0, jsonrpc.org/specification):

- ``"jsonrpc": "2.0"`` on every message;
- an id is an ``int`` or a ``str`` (never a ``bool``; ``null`` only in an error
  response to a message whose id could not be read; floats are refused);
- ``params``, when present, is an object or an array;
- a response has exactly one of ``result`` and ``error``.

Encoding produces one line of UTF-8 without a trailing newline: JSON escapes
control characters inside strings, so the text never holds a raw ``\\n``
(U+2028 and U+2029 stay as they are; they are not line breaks in this framing).
"""

from __future__ import annotations

import json
import json.encoder as _json_encoder

from ._records import Record as _Event
from .errors import InvalidRequest, JsonRpcError, ParseError, error_from_response

TYPE_CHECKING = False  # typing is not imported at run time (start-up cost)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Callable, ClassVar, Dict, List, Optional, Sequence, Tuple, Union

    from .errors import RequestId

    #: What ``params`` may be: a mapping, a sequence, or None to leave it out.
    Params = Union[Mapping[str, Any], Sequence[Any], None]

JSONRPC_VERSION = "2.0"

_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_dumps = _encoder.encode
_loads = json.loads
#: The C scanner where there is one (what json.loads ends in).
_scan_once: Callable[[str, int], Tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
#: The four characters JSON allows between tokens (RFC 8259), and so after a value.
_JSON_WHITESPACE = " \t\n\r"


def _make_fast_dumps() -> Optional[Callable[[Any], str]]:
    """The C encoder behind ``_encoder``, built once instead of once per call.

    ``JSONEncoder.encode`` builds a new C encoder object for every call; this
    one is made once, without circular-reference markers (shared markers could
    be left dirty by a failed call).  A circular message then ends in
    ``RecursionError``, and ``encode`` retries it with ``_dumps``, which
    raises the ``ValueError`` it always did.  None where the C encoder is
    missing or its signature differs.
    """
    make = getattr(_json_encoder, "c_make_encoder", None)
    if make is None:
        return None
    try:
        encoder = make(None, _encoder.default, _json_encoder.encode_basestring, None, ":", ",", False, False, False)
        sample = {"a": [1, 2.5, None, True, "\u2028\n"], "b": {}}
        if "".join(encoder(sample, 0)) != _dumps(sample):
            return None
    except Exception:
        return None

    def fast_dumps(value: Any) -> str:
        return "".join(encoder(value, 0))  # a list or a tuple of str, depending on the version

    return fast_dumps


_fast_dumps = _make_fast_dumps()

#: Method names as JSON, as ``encode_request`` wrote them (a client calls few
#: methods, many times); at most this many are kept.
_METHOD_JSON_ENTRIES = 512
_method_json: Dict[str, bytes] = {}


class Request(_Event):
    """A call that expects an answer: ``Request(id, method, params=None)``."""

    __slots__ = ("id", "method", "params")
    _defaults: ClassVar[Dict[str, Any]] = {"params": None}
    id: RequestId
    method: str
    params: Any


class Notification(_Event):
    """A call that is never answered: ``Notification(method, params=None)``."""

    __slots__ = ("method", "params")
    _defaults: ClassVar[Dict[str, Any]] = {"params": None}
    method: str
    params: Any


class Response(_Event):
    """A successful answer to the request with the same id: ``Response(id, result)``."""

    __slots__ = ("id", "result")
    id: RequestId
    result: Any


class ErrorResponse(_Event):
    """A failed answer; ``id`` is ``None`` when the peer could not read the request's id."""

    __slots__ = ("error", "id")
    id: Optional[RequestId]
    error: JsonRpcError

    def __init__(self, id: Optional[RequestId], error: JsonRpcError) -> None:
        super().__init__(id=id, error=error)


if TYPE_CHECKING:
    Message = Union[Request, Notification, Response, ErrorResponse]


def is_valid_id(value: Any) -> bool:
    """True for the ids this library sends and accepts: ``int`` (not ``bool``) or ``str``."""
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


def _normalize_params(params: Params) -> Any:
    """Return params as a dict or a list (or None); other types are refused."""
    if params is None or type(params) is dict or type(params) is list:
        return params
    # Loaded here, not at the top: a tool server's start-up pays for every module it imports.
    from collections.abc import Mapping  # noqa: PLC0415

    if isinstance(params, Mapping):
        return dict(params)
    if isinstance(params, (list, tuple)):
        return list(params)
    raise TypeError(f"params must be a mapping, a list, a tuple or None, not {type(params).__name__}")


def request_message(request_id: RequestId, method: str, params: Params = None) -> Dict[str, Any]:
    """Build a request object.

    Raises:
        TypeError: when the id, the method or the params have the wrong type.
    """
    if not is_valid_id(request_id):
        raise TypeError(f"a request id must be an int or a str, not {type(request_id).__name__}")
    if not isinstance(method, str):
        raise TypeError(f"method must be a str, not {type(method).__name__}")
    params = _normalize_params(params)
    message: Dict[str, Any] = {"jsonrpc": JSONRPC_VERSION, "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification_message(method: str, params: Params = None) -> Dict[str, Any]:
    """Build a notification object.

    Raises:
        TypeError: when the method or the params have the wrong type.
    """
    if not isinstance(method, str):
        raise TypeError(f"method must be a str, not {type(method).__name__}")
    params = _normalize_params(params)
    message: Dict[str, Any] = {"jsonrpc": JSONRPC_VERSION, "method": method}
    if params is not None:
        message["params"] = params
    return message


def response_message(request_id: RequestId, result: Any) -> Dict[str, Any]:
    """Build a success response."""
    return {"jsonrpc": JSONRPC_VERSION, "id": request_id, "result": result}


def error_message(request_id: Optional[RequestId], error: JsonRpcError) -> Dict[str, Any]:
    """Build an error response (``request_id`` None becomes ``"id": null``)."""
    return {"jsonrpc": JSONRPC_VERSION, "id": request_id, "error": error.to_error_object()}


def encode(message: Any) -> bytes:
    """Encode a message (or a batch list) as one line of UTF-8 JSON, without newline.

    Raises:
        TypeError: when the message holds something JSON cannot represent.
        ValueError: when the message contains itself (a circular reference) or
            a NaN or infinite float, which JSON cannot represent.
    """
    fast = _fast_dumps
    if fast is not None:
        try:
            return fast(message).encode("utf-8")
        except RecursionError:
            pass  # circular, or very deep: the full encoder tells which
    return _dumps(message).encode("utf-8")


def encode_request(request_id: RequestId, method: str, params: Params = None) -> bytes:
    """``encode(request_message(request_id, method, params))``, built without the envelope dict.

    The same bytes, the same checks and the same errors; the envelope's fixed
    parts are written as they are and only the method and the params go
    through the encoder (the hot path of every request).

    Raises:
        TypeError: when the id, the method or the params have the wrong type or
            cannot be encoded.
        ValueError: for a NaN or infinite float, or a circular structure.
    """
    fast = _fast_dumps
    if fast is None or type(request_id) is not int or type(method) is not str:
        return encode(request_message(request_id, method, params))
    params = _normalize_params(params)
    method_json = _method_json.get(method)
    try:
        if method_json is None:
            method_json = fast(method).encode("utf-8")
            if len(_method_json) < _METHOD_JSON_ENTRIES:
                _method_json[method] = method_json
        if params is None:
            return b'{"jsonrpc":"2.0","id":%d,"method":%s}' % (request_id, method_json)
        return b'{"jsonrpc":"2.0","id":%d,"method":%s,"params":%s}' % (
            request_id,
            method_json,
            fast(params).encode("utf-8"),
        )
    except RecursionError:  # circular, or very deep: the full encoder tells which
        return encode(request_message(request_id, method, params))


def decode(data: Union[bytes, str]) -> Any:
    """Decode one JSON text.

    Raises:
        ParseError: when the data is not UTF-8 or not JSON.
    """
    try:
        if isinstance(data, bytes):
            data = data.decode("utf-8")
        # The C scanner directly (what json.loads ends in, minus two layers of
        # Python); anything unusual (leading whitespace, errors) takes json.loads.
        try:
            value, end = _scan_once(data, 0)
        except (StopIteration, ValueError, RecursionError):
            return _loads(data)
        if end != len(data) and data[end:].strip(_JSON_WHITESPACE):  # more than whitespace after the value
            return _loads(data)  # which raises, with the position
        return value
    except (ValueError, RecursionError) as exc:
        # UnicodeDecodeError and JSONDecodeError are both ValueErrors.
        raise ParseError(data={"reason": str(exc)[:200]}) from None


def id_of(obj: Any) -> Optional[RequestId]:
    """The id of a decoded object if it carries a valid one, else ``None``."""
    if isinstance(obj, dict):
        value = obj.get("id")
        if is_valid_id(value):
            return value
    return None


def parse_message(obj: Any) -> Message:
    """Classify one decoded JSON value (not a batch) as a message event.

    Raises:
        InvalidRequest: when the value is not a valid JSON-RPC 2.0 message.  For
            something that looks like a request, the error's ``data`` holds
            ``{"id": ...}`` when a valid id could be read, so the answer can
            carry it.
    """
    if not isinstance(obj, dict):
        raise InvalidRequest(data={"reason": "a message must be a JSON object"})
    if obj.get("jsonrpc") != JSONRPC_VERSION:
        raise _invalid(obj, 'missing or wrong "jsonrpc" member (must be "2.0")')
    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str):
            raise _invalid(obj, "method must be a string")
        params = obj.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            raise _invalid(obj, "params must be an object or an array")
        if "id" not in obj:
            return Notification(method, params)
        request_id = obj["id"]
        if not is_valid_id(request_id):
            raise _invalid(obj, "id must be a string or an integer")
        return Request(request_id, method, params)
    has_result = "result" in obj
    has_error = "error" in obj
    if has_result == has_error:
        raise _invalid(obj, "a response must have exactly one of result and error")
    request_id = obj.get("id")
    if has_result:
        if not is_valid_id(request_id):
            raise _invalid(obj, "a response id must be a string or an integer")
        return Response(request_id, obj["result"])
    if request_id is not None and not is_valid_id(request_id):
        raise _invalid(obj, "a response id must be a string, an integer or null")
    return ErrorResponse(request_id, error_from_response(obj["error"]))


def _invalid(obj: Dict[str, Any], reason: str) -> InvalidRequest:
    data: Dict[str, Any] = {"reason": reason}
    request_id = obj.get("id")
    if is_valid_id(request_id):
        data["id"] = request_id
    return InvalidRequest(data=data)


def split_batch(value: Any) -> List[Any]:
    """Return the items of a batch, or ``[value]`` for a single message.

    Raises:
        InvalidRequest: for an empty batch (``[]``), which the specification
            answers with a single Invalid Request error.
    """
    if isinstance(value, list):
        if not value:
            raise InvalidRequest(data={"reason": "empty batch"})
        return value
    return [value]
