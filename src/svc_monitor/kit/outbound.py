"""Small JSON requests to our own endpoints (entitlement server, release API).

The standard library on a thread, not httpx: a few requests an hour do not justify
loading an HTTP client stack into every idle service (bench/startup.py). Callers run
these with `kit.gil_handover.to_thread` and decide what an unreachable endpoint means.
"""

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from svc_monitor import __version__

USER_AGENT = f"Svc-Monitor/{__version__}"
# Replies are small JSON documents; a larger one is not from our server.
MAX_REPLY_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: Any  # parsed JSON, or None when the body was not JSON


def get_json(url: str, *, timeout_s: float) -> Reply:
    return _send(urllib.request.Request(url, headers=_headers()), timeout_s)


def post_json(url: str, payload: object, *, timeout_s: float) -> Reply:
    data = json.dumps(payload).encode()
    headers = {**_headers(), "Content-Type": "application/json"}
    return _send(urllib.request.Request(url, data=data, headers=headers, method="POST"), timeout_s)


def _headers() -> dict[str, str]:
    return {"User-Agent": USER_AGENT, "Accept": "application/json"}


def _send(request: urllib.request.Request, timeout_s: float) -> Reply:
    """The reply, also for 4xx/5xx; OSError (URLError, timeouts) when nothing answered."""
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return Reply(response.status, _json(response.read(MAX_REPLY_BYTES)))
    except urllib.error.HTTPError as error:
        with error:
            return Reply(error.code, _json(error.read(MAX_REPLY_BYTES)))


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None
