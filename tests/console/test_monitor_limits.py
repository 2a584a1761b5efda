"""A capture stays within its caps however busy the server is, and with
MONITOR_REDACT_VALUES=true no value is ever kept, exported or shown."""

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from svc_monitor.app import create_app
from svc_monitor.console.monitor import capture
from tests.console.monitor_helpers import (
    all_lines,
    ended,
    frames,
    send,
    start,
    tag,
    tail_lines,
    tail_socket,
    traffic_client,
)
from tests.fixtures.app import make_settings, running_app, serve_app, target_of
from tests.fixtures.servers import RunningServer, ServerFactory


@pytest.fixture
def busy_server(server_factory: ServerFactory) -> Iterator[RunningServer]:
    """A Valkey of its own, pumped with pipelined SETs as fast as one client can for as long as
    the test runs (bounded: at most 60 s)."""
    server = server_factory.start("valkey")
    stop = threading.Event()

    def pump() -> None:
        with server.client() as conn:
            pipe = conn.pipeline(transaction=False)
            for _ in range(600):
                if stop.is_set():
                    return
                for n in range(500):
                    pipe.set(f"busy:{n}", "v" * 40)
                pipe.execute()

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stop.set()
        thread.join(timeout=30)
        server_factory.stop(server)


class TestCaps:
    async def test_the_line_cap_ends_it_as_truncated(self, busy_server: RunningServer):
        async with running_app(make_settings(**target_of(busy_server))) as app:
            session = await start(app.client, durationMs=30_000, maxLines=500)
            final = await ended(app.client, session["id"])
            stored = await all_lines(app.client, session["id"])
        assert final["status"] == "truncated"
        assert final["endReason"] == "line cap reached (500 lines)"
        assert final["lineCount"] == len(stored) == 500
        assert [x["seq"] for x in stored] == list(range(500))

    async def test_the_byte_cap_ends_it_as_truncated(self, busy_server: RunningServer):
        async with running_app(make_settings(**target_of(busy_server))) as app:
            session = await start(app.client, durationMs=30_000, maxBytes=20_000)
            final = await ended(app.client, session["id"])
            stored = await all_lines(app.client, session["id"])
        assert final["status"] == "truncated"
        assert final["endReason"] == "byte cap reached (20,000 bytes)"
        assert final["byteCount"] == sum(x["size"] for x in stored) <= 20_000
        assert final["byteCount"] > 20_000 - 200  # it stopped at the line that would not fit

    async def test_a_flooded_capture_holds_its_caps_and_its_memory(
        self, busy_server: RunningServer, tmp_path: Path
    ):
        # File storage, so that what the capture keeps is not counted as process memory.
        settings = make_settings(
            **target_of(busy_server),
            STORAGE_TYPE="sqlite",
            STORAGE_SQLITE_FILEPATH=tmp_path / "flood.db",
        )
        process = psutil.Process()
        async with running_app(settings) as app:
            before = process.memory_info().rss
            session = await start(app.client, durationMs=60_000, maxLines=60_000)
            peak = before
            while (await app.client.get(f"/api/monitor/sessions/{session['id']}")).json()[
                "status"
            ] == "running":
                peak = max(peak, process.memory_info().rss)
                await asyncio.sleep(0.05)
            final = await ended(app.client, session["id"])
        assert final["status"] == "truncated"
        assert final["lineCount"] == 60_000
        # Lines wait in one batch (1,000) while the previous one is written; 60,000 lines held
        # at once would be ~40 MB of Python objects.
        assert peak - before < 30 * 1024 * 1024, f"grew {(peak - before) / 2**20:.1f} MiB"

    async def test_a_capture_that_falls_behind_ends_before_the_server_holds_too_much(
        self, busy_server: RunningServer, monkeypatch: pytest.MonkeyPatch
    ):
        # 256 KiB instead of 32 MiB: the pump in this process outruns the reader within
        # seconds either way, and the smaller bound keeps the server's memory out of it.
        monkeypatch.setattr(capture, "MAX_SERVER_BACKLOG_BYTES", 256 * 1024)
        async with running_app(make_settings(**target_of(busy_server))) as app:
            session = await start(app.client, durationMs=30_000, maxLines=100_000)
            final = await ended(app.client, session["id"])
        assert final["status"] == "truncated"
        assert "spare the server's memory" in final["endReason"]
        with busy_server.client() as conn:  # the capture's connection is gone with its buffer
            names = [c.get("name") for c in conn.client_list()]
            assert sum(c.get("cmd") == "monitor" for c in conn.client_list()) == 0, names


class TestRedaction:
    async def test_values_are_never_stored_exported_or_shown(self, valkey_server: RunningServer):
        prefix = tag()
        secret = "s3cret-" + prefix
        app = create_app(make_settings(**target_of(valkey_server), MONITOR_REDACT_VALUES=True))
        async with serve_app(app) as url, httpx.AsyncClient(base_url=url) as client:
            preflight = (await client.post("/api/monitor/sessions/preflight")).json()
            assert preflight["redacted"] is True
            session = await start(client, durationMs=1500)
            assert session["redacted"] is True
            async with tail_socket(url, session["id"]) as socket:
                async with traffic_client(valkey_server) as traffic:
                    await asyncio.sleep(0.2)
                    await traffic.set(f"{prefix}:a", secret)
                    await send(traffic, "HSET", f"{prefix}:h", "field", secret)
                    await send(traffic, "MSET", f"{prefix}:m", secret)
                    await send(traffic, "EVAL", "return ARGV[1]", 1, f"{prefix}:e", secret)
                received = await frames(socket)
            stored = await all_lines(client, session["id"])
            exports = [
                (await client.get(f"/api/monitor/sessions/{session['id']}/export", params=p)).text
                for p in ({"format": "json"}, {"format": "csv"})
            ]
        for text in [str(received), str(stored), *exports]:
            assert secret not in text
            assert f"{prefix}:a" in text
            assert f"{prefix}:h" in text
            assert f"{prefix}:e" in text
        mine = [x for x in tail_lines(received) if x["args"] and prefix in x["args"][0]]
        assert [(x["command"], x["args"]) for x in mine] == [
            ("SET", [f"{prefix}:a", "(redacted)"]),
            ("HSET", [f"{prefix}:h", "(redacted)", "(redacted)"]),
            ("MSET", [f"{prefix}:m", "(redacted)"]),
        ]
        evals = [x for x in stored if x["command"] == "EVAL" and f"{prefix}:e" in x["args"]]
        assert evals[0]["args"] == ["(redacted)", "1", f"{prefix}:e", "(redacted)"]

    async def test_without_the_setting_values_are_kept(self, api: Any, valkey_server):
        prefix = tag()
        session = await start(api.client, durationMs=800)
        async with traffic_client(valkey_server) as traffic:
            await traffic.set(f"{prefix}:a", "plain")
        await ended(api.client, session["id"])
        stored = await all_lines(api.client, session["id"])
        assert any(x["args"] == [f"{prefix}:a", "plain"] for x in stored)
