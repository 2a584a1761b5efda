"""The live tail of a capture over a real WebSocket (uvicorn serving the app on loopback),
and the bounded queue that keeps a slow viewer from holding a capture back."""

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus

from svc_monitor.app import create_app
from svc_monitor.console.monitor.models import Caps, CaptureSession, CaptureStatus, MonitorLine
from svc_monitor.console.monitor.tail import Ended, Missed, Subscriber
from tests.console.monitor_helpers import (
    ended,
    frames,
    start,
    tag,
    tail_lines,
    tail_socket,
    traffic_client,
)
from tests.fixtures.app import make_settings, serve_app, target_of
from tests.fixtures.servers import RunningServer


@pytest.fixture
async def served(valkey_server: RunningServer) -> AsyncIterator[tuple[str, httpx.AsyncClient]]:
    """The app served for real (user control off), and a client of its API."""
    app = create_app(make_settings(**target_of(valkey_server)))
    async with serve_app(app) as url, httpx.AsyncClient(base_url=url) as client:
        yield url, client


class TestLiveTail:
    async def test_lines_arrive_live_after_the_ones_captured_before(
        self, served: tuple[str, httpx.AsyncClient], valkey_server: RunningServer
    ):
        url, client = served
        prefix = tag()
        session = await start(client, durationMs=2500)
        async with traffic_client(valkey_server) as traffic:
            await traffic.set(f"{prefix}:before", "1")
            await asyncio.sleep(0.2)
            async with tail_socket(url, session["id"]) as socket:
                first = await _next(socket)
                assert first["type"] == "session"
                assert first["session"]["id"] == session["id"]
                await traffic.set(f"{prefix}:after", "2")
                received = [first, *await frames(socket)]
                assert socket.close_code == 1000
        wanted = ([f"{prefix}:before"], [f"{prefix}:after"])
        mine = [x for x in tail_lines(received) if x["args"][:1] in wanted]
        assert [(x["command"], x["args"]) for x in mine] == [
            ("SET", [f"{prefix}:before", "1"]),
            ("SET", [f"{prefix}:after", "2"]),
        ]
        seqs = [x["seq"] for x in tail_lines(received)]
        assert seqs == sorted(seqs)
        assert len(seqs) == len(set(seqs))
        last = received[-1]
        assert last["type"] == "status"
        assert last["status"] == "ended"
        assert last["session"]["status"] == "completed"
        assert last["session"]["lineCount"] == len(seqs)

    async def test_a_finished_capture_sends_its_lines_and_its_end(
        self, served: tuple[str, httpx.AsyncClient], valkey_server: RunningServer
    ):
        url, client = served
        prefix = tag()
        session = await start(client, durationMs=600)
        async with traffic_client(valkey_server) as traffic:
            await traffic.set(f"{prefix}:k", "v")
        final = await ended(client, session["id"])
        async with tail_socket(url, session["id"]) as socket:
            received = await frames(socket)
        assert next(f["type"] for f in received) == "session"
        assert received[-1]["session"] == final
        assert any(x["args"] == [f"{prefix}:k", "v"] for x in tail_lines(received))

    async def test_a_stop_ends_the_tail_with_its_reason(
        self, served: tuple[str, httpx.AsyncClient]
    ):
        url, client = served
        session = await start(client, durationMs=60_000)
        async with tail_socket(url, session["id"]) as socket:
            assert (await _next(socket))["type"] == "session"
            await client.post(f"/api/monitor/sessions/{session['id']}/stop")
            received = await frames(socket, within=5)
        assert received[-1]["session"]["status"] == "stopped"
        assert received[-1]["session"]["endReason"] == "stopped by request"

    async def test_an_unknown_capture_is_an_error_then_a_close(
        self, served: tuple[str, httpx.AsyncClient]
    ):
        url, _ = served
        async with tail_socket(url, 424242) as socket:
            received = await frames(socket)
        assert received == [{"type": "error", "error": "Capture 424242 not found"}]
        assert socket.close_code == 4404

    async def test_a_bad_session_id_is_refused_before_the_handshake(
        self, served: tuple[str, httpx.AsyncClient]
    ):
        url, _ = served
        for bad in ("abc", "0", "-1", "99999999999999999999"):
            with pytest.raises(InvalidStatus) as refused:
                async with tail_socket(url, bad):
                    pass
            assert refused.value.response.status_code == 403, bad

    async def test_another_sites_page_cannot_open_it(self, served: tuple[str, httpx.AsyncClient]):
        url, client = served
        session = await start(client, durationMs=500)
        for origin in ("https://evil.example", url + ".evil.example", "null"):
            with pytest.raises(InvalidStatus) as refused:
                async with tail_socket(url, session["id"], origin=origin):
                    pass
            assert refused.value.response.status_code == 403, origin


class TestSlowViewer:
    async def test_a_full_queue_drops_lines_and_says_how_many(self):
        viewer = Subscriber(limit=3)
        for seq in range(5):
            viewer.offer(_line(seq))
        viewer.end(_session())
        items = await viewer.take()
        assert [_kind(i) for i in items] == ["line 0", "line 1", "line 2", "missed 2", "ended"]

    async def test_after_catching_up_it_is_told_before_the_next_line(self):
        viewer = Subscriber(limit=2)
        for seq in range(4):
            viewer.offer(_line(seq))
        await viewer.take()
        viewer.offer(_line(4))
        assert [_kind(i) for i in await viewer.take()] == ["missed 2", "line 4"]

    async def test_an_idle_viewer_wakes_with_nothing(self):
        assert await Subscriber().take(timeout_s=0.01) == []


async def _next(socket: Any) -> dict[str, Any]:
    async with asyncio.timeout(10):
        frame: dict[str, Any] = json.loads(await socket.recv())
    return frame


def _line(seq: int) -> MonitorLine:
    return MonitorLine(seq, "1.0", 1000, 0, "lua", "GET", ("k",), 1, False, None, 10)


def _session() -> CaptureSession:
    return CaptureSession(
        1, "c", CaptureStatus.COMPLETED, 0, 1, Caps(1, 1, 1), 5, 50, "duration reached", None, False
    )


def _kind(item: object) -> str:
    if isinstance(item, MonitorLine):
        return f"line {item.seq}"
    if isinstance(item, Missed):
        return f"missed {item.count}"
    assert isinstance(item, Ended)
    return "ended"
