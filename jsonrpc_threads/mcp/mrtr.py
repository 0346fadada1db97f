"""Multi round-trip requests (MCP 2026-07-28): answering a server's ``input_required`` result.

Theory of operation.  In the stateless era a server never sends the client a
request.  When it needs something from the client to finish ``tools/call``,
``prompts/get`` or ``resources/read`` (a form filled in, an LLM's answer, the
client's roots), it answers with ``resultType: "input_required"``: a map of
``inputRequests`` (each an ``elicitation/create``, ``sampling/createMessage``
or ``roots/list`` request) and an opaque ``requestState``.  The client
answers each from the same handlers that answer those requests in the
session era (``ClientFeatures``), then sends the
original request again, as a new request with a new id, with
``inputResponses`` and the ``requestState`` exactly as it came (none when none
came).  The server may ask again; ``MAX_INPUT_ROUNDS`` bounds the rounds.

The handlers run on the thread that made the request (never on a reader or
timer thread, and under no lock); what they raise fails the request.  The
``inputResponses`` and ``requestState`` of one request never go into another.

Thread-safety: pure functions over immutable features.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from .client_features import ClientFeatures
from .errors import ProtocolError
from .protocol import INPUT_REQUEST_METHODS

#: Round trips one request may make before the server is taken to be looping.
MAX_INPUT_ROUNDS = 16


def answer_input_requests(features: ClientFeatures, input_requests: Any) -> Dict[str, Any]:
    """Answer every request of an ``inputRequests`` map with the client's handlers.

    Returns:
        The ``inputResponses`` map (same keys).

    Raises:
        ProtocolError: the map is malformed, or asks for something this client
            cannot answer (a method outside the three, or one whose handler was
            not given: the server must not ask for capabilities not declared).
        Exception: whatever a handler raises.
    """
    if input_requests is None:
        return {}
    if not isinstance(input_requests, Mapping):
        raise ProtocolError("inputRequests is not an object", input_requests)
    responses: Dict[str, Any] = {}
    for key, request in input_requests.items():
        if not isinstance(request, Mapping) or not isinstance(request.get("method"), str):
            raise ProtocolError(f"input request {key!r} is not a request", request)
        method = request["method"]
        params = request.get("params")
        if method not in INPUT_REQUEST_METHODS:
            raise ProtocolError(f"input request {key!r} asks for {method!r}, which a client does not answer")
        responses[str(key)] = _answer(features, method, params if isinstance(params, dict) else {}, key)
    return responses


def _answer(features: ClientFeatures, method: str, params: Dict[str, Any], key: Any) -> Any:
    if method == "elicitation/create":
        if features.on_elicitation is None:
            raise ProtocolError(f"input request {key!r} asks for elicitation, which this client did not declare")
        return features.answer_elicitation(params)
    if method == "sampling/createMessage":
        if features.on_sampling is None:
            raise ProtocolError(f"input request {key!r} asks for sampling, which this client did not declare")
        return features.on_sampling(params)
    if features.roots is None:
        raise ProtocolError(f"input request {key!r} asks for roots, which this client did not declare")
    return features.answer_roots(params)


def retry_params(
    original: Optional[Mapping[str, Any]], responses: Mapping[str, Any], request_state: Any
) -> Dict[str, Any]:
    """The original request's params with this round's ``inputResponses`` and ``requestState``.

    ``requestState`` is echoed exactly as received, and left out when the server sent none.

    Raises:
        ProtocolError: a ``requestState`` that is not a string.
    """
    params = {key: value for key, value in (original or {}).items() if key not in ("inputResponses", "requestState")}
    if responses:
        params["inputResponses"] = dict(responses)
    if request_state is not None:
        if not isinstance(request_state, str):
            raise ProtocolError("requestState is not a string", request_state)
        params["requestState"] = request_state
    return params


__all__ = ["MAX_INPUT_ROUNDS", "answer_input_requests", "retry_params"]
