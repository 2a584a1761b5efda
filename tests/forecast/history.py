"""Synthetic memory history for forecasts: a real Valkey's INFO reply with the fields a
test needs rewritten, recorded through the real history path (InfoHistoryService.record).

The history belongs to a push connection nothing dials, so the app's own polls of the
real server never add samples to it.
"""

import re
import time
from collections.abc import Callable
from typing import Any

from svc_monitor.engine.info import parse_info
from svc_monitor.pipe.observation import Observation
from tests.fixtures.app import RunningApp

MB = 1024 * 1024
MINUTE_MS = 60_000

# One sample's INFO fields: field name -> value, or None to drop the line (not reported).
Fields = dict[str, float | int | None]


async def real_info(app: RunningApp) -> str:
    """INFO everything of the app's default connection (the shared real Valkey)."""
    services = app.services
    default = await services.connections.resolve(None)
    raw = await services.connections.client(default).info_raw("everything")
    return raw.decode()


def rewrite(info: str, fields: Fields) -> str:
    for name, value in fields.items():
        pattern = re.compile(rf"^{re.escape(name)}:.*\r?\n", re.MULTILINE)
        assert pattern.search(info), f"{name} is not in the server's INFO"
        line = "" if value is None else f"{name}:{value}\r\n"
        info = pattern.sub(line, info)
    return info


async def push_connection(app: RunningApp, *, port: int = 6390) -> str:
    made = await app.client.post(
        "/api/connections",
        json={"source": "push", "name": f"forecast {port}", "host": "10.9.9.9", "port": port},
    )
    assert made.status_code == 201, made.text
    connection_id: str = made.json()["id"]
    return connection_id


async def record(
    app: RunningApp,
    connection_id: str,
    *,
    samples: int,
    every_ms: int = MINUTE_MS,
    fields: Callable[[int], Fields],
    end_ms: int | None = None,
) -> list[int]:
    """Record `samples` snapshots `every_ms` apart, the last at `end_ms` (now); sample i
    gets `fields(i)`. Returns their times."""
    base = await real_info(app)
    end = end_ms if end_ms is not None else int(time.time() * 1000)
    times = [end - (samples - 1 - i) * every_ms for i in range(samples)]
    for i, at in enumerate(times):
        info = parse_info(rewrite(base, fields(i)))
        app.services.info_history.observe(Observation(connection_id, at, info))
    await app.services.db.inserts.flush()  # as the poller's batched write would, within 1 s
    return times


def steady_memory(start: int, per_sample: int, *, maxmemory: int) -> Callable[[int], Fields]:
    def fields(i: int) -> Fields:
        return {"used_memory": start + i * per_sample, "maxmemory": maxmemory}

    return fields


async def get(app: RunningApp, path: str, connection_id: str) -> Any:
    """GET `path` about `connection_id` ("": the default connection); its 200 body."""
    headers = {"X-Connection-Id": connection_id} if connection_id else {}
    answer = await app.client.get(path, headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.json()
