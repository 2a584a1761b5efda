"""A capture's export, JSON or CSV, produced a page of lines at a time.

Both carry the same fields per line (MonitorLineRead). In CSV, `args` is the JSON list
of the arguments (one cell, unambiguous whatever they contain), booleans are true/false
and a missing value is an empty cell. A text cell that a spreadsheet would run as a
formula (starting with = + - @, tab or CR) gets a leading apostrophe (OWASP's advice on
CSV injection): captured traffic is written by whoever talks to the server.
"""

import csv
import io
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from svc_monitor.console.monitor.models import CaptureSession, MonitorLine
from svc_monitor.console.monitor.schemas import capture_dict, line_dict

CSV_COLUMNS = (
    "seq", "ts", "tsMs", "db", "client", "command", "args", "argCount", "shortened", "raw",
    "size",
)  # fmt: skip
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def filename(session: CaptureSession, extension: str) -> str:
    connection = _UNSAFE_NAME.sub("_", session.connection_id)[:40] or "connection"
    return f"monitor-{session.id}-{connection}.{extension}"


async def json_chunks(
    session: CaptureSession, pages: AsyncIterator[list[MonitorLine]]
) -> AsyncIterator[bytes]:
    """`{"session": {...}, "lines": [...]}`."""
    yield b'{"session":' + json.dumps(capture_dict(session)).encode() + b',"lines":['
    separator = b""
    async for page in pages:
        yield separator + ",".join(json.dumps(line_dict(line)) for line in page).encode()
        separator = b","
    yield b"]}\n"


async def csv_chunks(pages: AsyncIterator[list[MonitorLine]]) -> AsyncIterator[bytes]:
    """A header row, then one row per line."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    yield _drain(buffer)
    async for page in pages:
        writer.writerows(_row(line_dict(line)) for line in page)
        yield _drain(buffer)


def _row(fields: dict[str, Any]) -> list[str]:
    return [_cell(name, fields[name]) for name in CSV_COLUMNS]


def _cell(name: str, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if name == "args":
        return json.dumps(value)
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def _drain(buffer: io.StringIO) -> bytes:
    data = buffer.getvalue().encode()
    buffer.seek(0)
    buffer.truncate()
    return data
