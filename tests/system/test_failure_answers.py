"""When a monitored server dies or hangs, the API answers as designed: 503 naming the
failure (never a 500), on a connection kept open, and /api/health answers within its
budget and tells the truth."""

import time
from collections.abc import Callable

import pytest

from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.replica_processes import eventually
from tests.fixtures.servers import RunningServer, ServerFactory

HEALTH_BUDGET_S = 0.25


@pytest.fixture
def watched(fresh: Callable[..., RunningServer]) -> RunningServer:
    return fresh("valkey")


async def timed_health(app: RunningApp) -> tuple[float, dict[str, object]]:
    started = time.perf_counter()
    reply = await app.client.get("/api/health")
    elapsed = time.perf_counter() - started
    assert reply.status_code == 200, reply.text
    body: dict[str, object] = reply.json()
    return elapsed, body


async def test_a_hung_server_leaves_health_fast_and_truthful_and_live_routes_at_503(
    memory_app_factory: AppFactory,
    server_factory: ServerFactory,
    watched: RunningServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with memory_app_factory(DB_HOST=watched.host, DB_PORT=watched.port) as app:
        elapsed, body = await timed_health(app)
        assert body["status"] == "ok"
        server_factory.pause(watched)
        try:
            times = []
            for _ in range(5):
                elapsed, body = await timed_health(app)
                times.append(elapsed)

            async def reported_down() -> dict[str, object]:
                elapsed, body = await timed_health(app)
                times.append(elapsed)
                database = body["database"]
                assert isinstance(database, dict)
                assert database["status"] == "disconnected", body
                return database

            # Within the INFO poll's freshness (3 s) it may still say what the poll saw.
            database = await eventually(reported_down, timeout_s=6)
            assert database["errorKind"] == "timeout"
            assert isinstance(database["checkedAt"], int)
            assert max(times) < HEALTH_BUDGET_S, times

            info = await app.client.get("/api/metrics/info")
            assert info.status_code == 503, info.text
            assert info.headers["retry-after"]
            assert "did not answer" in info.json()["message"]
        finally:
            server_factory.resume(watched)
        resumed = time.monotonic()

        async def back() -> None:
            _, body = await timed_health(app)
            assert body["status"] == "ok", body

        await eventually(back, timeout_s=10)
        # Back on its own within two INFO intervals (1 s each) of the server answering.
        assert time.monotonic() - resumed < 2.0
    logged = [r.getMessage() for r in caplog.records if r.exc_info]
    assert logged == [], logged  # expected failures are one line each, never a traceback


async def test_a_killed_server_gets_503_naming_it_on_a_connection_kept_open(
    memory_app_factory: AppFactory, server_factory: ServerFactory, watched: RunningServer
) -> None:
    async with memory_app_factory(DB_HOST=watched.host, DB_PORT=watched.port) as app:
        server_factory.stop(watched)
        info = await app.client.get("/api/metrics/info")
        assert info.status_code == 503, info.text
        body = info.json()
        assert str(watched.port) in body["message"]
        assert body["errorKind"] == "unreachable"
        _, health = await timed_health(app)
        database = health["database"]
        assert isinstance(database, dict)
        assert database["status"] == "disconnected"


async def test_an_unexpected_error_is_a_500_with_a_correlation_id_logged_once(
    api: RunningApp, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug (injected: the version check raising what nothing expects) answers 500 with
    the id its one log line carries. The app does not re-raise it: a server that sees the
    exception drops the client's keep-alive connection (and this test's transport would
    raise it instead of returning the answer)."""

    def broken() -> None:
        raise RuntimeError("an injected bug")

    monkeypatch.setattr(api.services.versions, "read", broken)
    reply = await api.client.get("/api/version")
    assert reply.status_code == 500
    body = reply.json()
    correlation = body["correlationId"]
    assert correlation in body["message"]
    assert "injected" not in body["message"]
    logged = [r for r in caplog.records if correlation in r.getMessage()]
    assert len(logged) == 1
    assert logged[0].exc_info is not None
    assert (await api.client.get("/api/health")).status_code == 200
