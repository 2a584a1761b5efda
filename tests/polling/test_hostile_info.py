"""A monitored server whose INFO holds values out of range or of the wrong type: the INFO
poll keeps working (history is kept, the pages render), the values are left out and
counted, and nothing crashes every interval."""

import asyncio
import logging
import re

import pytest

from tests.anomaly.info import info_text
from tests.fixtures.app import make_settings, running_app
from tests.fixtures.hostile_resp import hostile_server
from tests.fixtures.servers import RunningServer

HOSTILE = {
    "connected_clients": "99999999999999999999999",
    "used_memory": "inf",
    "used_memory_rss": "-99999999999999999999999",
    "total_commands_processed": "18446744073709551616",
    "maxmemory": "nan",
}


def hostile_info(real: str) -> str:
    text = real
    for name, value in HOSTILE.items():
        text, found = re.subn(rf"^{name}:.*$", f"{name}:{value}\r", text, flags=re.MULTILINE)
        assert found == 1, name
    keyspace = "# Keyspace\r\ndb0:keys=abc,expires=1e400,avg_ttl=-\r\n"
    return text.replace("# Keyspace\r\n", keyspace)


async def test_hostile_info_values_are_left_out_and_the_poll_goes_on(
    valkey_server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    info = hostile_info(info_text(valkey_server))
    assert "connected_clients:99999999999999999999999" in info
    async with hostile_server(info) as server:
        settings = make_settings(
            DB_HOST="127.0.0.1",
            DB_PORT=server.port,
            ANOMALY_POLL_INTERVAL_MS=200,
            HISTORY_SAMPLE_INTERVAL_MS=1000,
        )
        async with running_app(settings) as app:
            caplog.clear()
            await asyncio.sleep(3)
            history = await app.client.get("/api/metrics/history")
            assert history.status_code == 200, history.text
            points = history.json()["points"]
            assert sum(p["samples"] for p in points) >= 2, points  # one a second
            assert all(p["connectedClients"] is None for p in points)  # left out
            for page in ("/", "/memory", "/clients"):
                reply = await app.client.get(page)
                assert reply.status_code == 200, (page, reply.text[:500])
            live = await app.client.get("/api/metrics/info", params={"sections": "clients"})
            assert live.status_code == 200, live.text
            assert live.json()["rejectedValues"] > 0
            scrape = (await app.client.get("/api/prometheus/metrics")).text
            assert "svc_info_values_rejected_total" in scrape
    crashes = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert crashes == [], [r.getMessage() for r in crashes]
