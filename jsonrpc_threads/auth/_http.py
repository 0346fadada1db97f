"""HTTP for the authorization flow: metadata GETs, registration and token POSTs.

One ``FlowHttp`` (one ``requests.Session``) lives for one flow and is
closed at its end, so no connection to an authorization server outlives it.
Every failure becomes an ``AuthorizationError`` whose message names the
endpoint (without its query) and the OAuth ``error`` code, never a body that
could carry a token.  Bodies are read up to ``MAX_BODY_BYTES``.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Dict, Mapping, Optional, Tuple, Union

import requests

from ..errors import AuthorizationError
from ..runtime.closing import Closing
from ..transports.http import url_label

logger = logging.getLogger(__name__)

#: The largest metadata, registration or token answer read.
MAX_BODY_BYTES = 1024 * 1024
#: (connect, read) seconds for every request of the flow.
DEFAULT_FLOW_TIMEOUT_S: Tuple[float, float] = (10.0, 30.0)
#: Characters of an ``error_description`` kept in an exception message.
DESCRIPTION_CHARS = 200

JSON_ACCEPT = {"Accept": "application/json"}


def describe_oauth_error(status: int, document: Optional[Dict[str, Any]]) -> Tuple[str, Optional[str]]:
    """``("HTTP 400: invalid_grant: description", "invalid_grant")`` for an error answer."""
    text = f"HTTP {status}"
    code: Optional[str] = None
    if document is not None:
        error = document.get("error")
        if isinstance(error, str) and error:
            code = error[:80]
            text += f": {code}"
            description = document.get("error_description")
            if isinstance(description, str) and description:
                text += f": {description[:DESCRIPTION_CHARS]}"
    return text, code


class FlowHttp(Closing):
    """The HTTP client of one authorization flow.  Not thread-safe (one flow, one thread)."""

    def __init__(self, *, timeout: Tuple[float, float], verify: Union[bool, str]) -> None:
        self._session = requests.Session()
        self._session.verify = verify
        self._timeout = timeout

    def get_json(self, url: str, what: str) -> Tuple[Optional[Dict[str, Any]], str]:
        """GET a JSON object.  Returns ``(object, "")`` or ``(None, why not)``; never raises."""
        try:
            response = self._session.get(url, headers=JSON_ACCEPT, timeout=self._timeout, stream=True)
        except requests.RequestException as exc:
            logger.debug("%s: GET %s failed: %s", what, url_label(url), type(exc).__name__)
            return None, f"{url_label(url)}: {type(exc).__name__}"
        with response:
            status = response.status_code
            logger.debug("%s: GET %s answered %d", what, url_label(url), status)
            if status != 200:
                return None, f"{url_label(url)}: HTTP {status}"
            document = self._read_json(response)
        if document is None:
            return None, f"{url_label(url)}: not a JSON object"
        return document, ""

    def post(
        self,
        url: str,
        what: str,
        *,
        form: Optional[str] = None,
        body: Optional[Dict[str, Any]] = None,
        headers: Optional[Dict[str, str]] = None,
    ) -> Tuple[int, Optional[Dict[str, Any]]]:
        """POST a form (already encoded) or a JSON body; return the status and the JSON answer.

        Redirects are not followed.

        Raises:
            AuthorizationError: the server could not be reached.
        """
        status, document, _ = self.post_answer(url, what, form=form, body=body, headers=headers)
        return status, document

    def post_answer(
        self,
        url: str,
        what: str,
        *,
        form: Optional[str] = None,
        body: Optional[Dict[str, Any]] = None,
        headers: Optional[Dict[str, str]] = None,
    ) -> Tuple[int, Optional[Dict[str, Any]], Mapping[str, str]]:
        """As ``post``, with the answer's headers too (a ``DPoP-Nonce``).

        Raises:
            AuthorizationError: the server could not be reached.
        """
        all_headers = dict(JSON_ACCEPT)
        if headers:
            all_headers.update(headers)
        data: Optional[bytes] = None
        if form is not None:
            all_headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
            data = form.encode("utf-8")
        elif body is not None:
            all_headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode("utf-8")
        try:
            response = self._session.post(
                url, data=data, headers=all_headers, timeout=self._timeout, stream=True, allow_redirects=False
            )
        except requests.RequestException as exc:
            raise AuthorizationError(f"{what}: cannot reach {url_label(url)}: {type(exc).__name__}") from None
        with response:
            status = response.status_code
            logger.debug("%s: POST %s answered %d", what, url_label(url), status)
            return status, self._read_json(response), response.headers

    @staticmethod
    def _read_json(response: requests.Response) -> Optional[Dict[str, Any]]:
        body = bytearray()
        try:
            for chunk in response.iter_content(64 * 1024):
                body += chunk
                if len(body) > MAX_BODY_BYTES:
                    return None
            value = json.loads(bytes(body))
        except (requests.RequestException, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def close(self) -> None:
        """Close the session's connections."""
        self._session.close()
