"""MONITOR captures through the API against real Valkey 9.1 and Redis 7.0 servers: what a
capture sees, how it ends, what it stores and exports, and what it refuses."""

import asyncio
import contextlib
import csv
import io
import json
import sqlite3
from typing import Any

import pytest

from tests.console.monitor_helpers import (
    all_lines,
    ended,
    send,
    start,
    tag,
    tagged,
    traffic_client,
)
from tests.fixtures.app import AppFactory, make_settings, running_app, target_of
from tests.fixtures.servers import RunningServer, ServerFactory

ENGINES = ["valkey", "redis7"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> RunningServer:
    server: RunningServer = request.getfixturevalue(f"{request.param}_server")
    return server


class TestCapture:
    async def test_a_capture_sees_the_commands_sent_during_it(self, engine: RunningServer):
        prefix = tag()
        async with running_app(make_settings(**target_of(engine))) as app:
            session = await start(app.client, durationMs=1500)
            async with traffic_client(engine) as traffic:
                await traffic.set(f"{prefix}:a", "value one")
                await send(traffic, "SELECT", 2)
                await traffic.get(f"{prefix}:b")
            final = await ended(app.client, session["id"])
            lines = tagged(await all_lines(app.client, session["id"]), prefix)
        assert [(x["command"], x["args"], x["db"]) for x in lines] == [
            ("SET", [f"{prefix}:a", "value one"], 0),
            ("GET", [f"{prefix}:b"], 2),
        ]
        assert all(x["client"].startswith("127.0.0.1:") for x in lines)
        assert all(x["ts"] and abs(x["tsMs"] - final["startedAt"]) < 5000 for x in lines)
        assert final["status"] == "completed"
        assert final["endReason"] == "duration reached"
        assert final["lineCount"] >= 2
        assert final["redacted"] is False

    async def test_it_stops_by_itself_at_its_duration(self, api: Any):
        session = await start(api.client, durationMs=1000)
        final = await ended(api.client, session["id"], within=5)
        assert final["status"] == "completed"
        assert 1000 <= final["endedAt"] - final["startedAt"] < 3000

    async def test_an_admin_stop_ends_it_early_with_the_reason(self, api: Any):
        session = await start(api.client, durationMs=60_000)
        response = await api.client.post(f"/api/monitor/sessions/{session['id']}/stop")
        assert response.status_code == 200, response.text
        stopped = response.json()
        assert stopped["status"] == "stopped"
        assert stopped["endReason"] == "stopped by request"  # user control is off here
        assert stopped["endedAt"] - stopped["startedAt"] < 5000
        again = await api.client.post(f"/api/monitor/sessions/{session['id']}/stop")
        assert again.status_code == 409

    async def test_stop_closes_the_capture_connection_on_the_server(
        self, api: Any, valkey_server: RunningServer
    ):
        session = await start(api.client, durationMs=60_000)
        async with traffic_client(valkey_server) as traffic:
            assert await _monitor_clients(traffic) >= 1
            await api.client.post(f"/api/monitor/sessions/{session['id']}/stop")
            for _ in range(50):
                if await _monitor_clients(traffic) == 0:
                    break
                await asyncio.sleep(0.05)
            assert await _monitor_clients(traffic) == 0

    async def test_a_second_start_on_the_same_connection_is_refused(self, api: Any):
        session = await start(api.client, durationMs=60_000)
        response = await api.client.post("/api/monitor/sessions", json={"durationMs": 1000})
        assert response.status_code == 409
        assert "already running" in response.json()["message"]
        await api.client.post(f"/api/monitor/sessions/{session['id']}/stop")
        follow_up = await start(api.client, durationMs=500)
        assert follow_up["id"] != session["id"]

    async def test_the_list_is_newest_first_with_who_and_how_much(self, api: Any):
        first = await start(api.client, durationMs=500)
        await ended(api.client, first["id"])
        second = await start(api.client, durationMs=500)
        await ended(api.client, second["id"])
        response = await api.client.get("/api/monitor/sessions", params={"limit": 2})
        assert [s["id"] for s in response.json()] == [second["id"], first["id"]]
        assert {"lineCount", "byteCount", "requestedBy", "status"} <= response.json()[0].keys()

    async def test_captures_are_kept_per_connection(self, api: Any, server_factory: ServerFactory):
        other = server_factory.start("valkey")
        try:
            created = await api.client.post(
                "/api/connections", json={"name": "other", "host": other.host, "port": other.port}
            )
            other_id = created.json()["id"]
            session = await start(api.client, durationMs=500)
            await ended(api.client, session["id"])
            elsewhere = await api.client.get(
                "/api/monitor/sessions", headers={"X-Connection-Id": other_id}
            )
            assert elsewhere.json() == []
            wrong = await api.client.get(
                f"/api/monitor/sessions/{session['id']}", headers={"X-Connection-Id": other_id}
            )
            assert wrong.status_code == 404
        finally:
            server_factory.stop(other)

    async def test_an_unknown_capture_is_404(self, api: Any):
        for path in ("", "/lines", "/export"):
            response = await api.client.get(f"/api/monitor/sessions/999999{path}")
            assert response.status_code == 404, path
        assert (await api.client.post("/api/monitor/sessions/999999/stop")).status_code == 404
        assert (await api.client.delete("/api/monitor/sessions/999999")).status_code == 404

    async def test_a_command_filter_with_a_control_character_is_422(self, api: Any):
        # Checked before the capture is looked up: PostgreSQL would refuse the NUL.
        response = await api.client.get("/api/monitor/sessions/1/lines?command=%05%00")
        assert response.status_code == 422, response.text
        assert "command" in response.text

    async def test_caps_outside_the_limits_are_422(self, api: Any):
        for body in ({"durationMs": 10}, {"durationMs": 3_600_000}, {"maxLines": 0},
                     {"maxBytes": 10**12}, {"durationMs": "soon"}, {"colour": "red"}):  # fmt: skip
            response = await api.client.post("/api/monitor/sessions", json=body)
            assert response.status_code == 422, body
        assert (await api.client.get("/api/monitor/sessions")).json() == []


class TestExport:
    async def test_json_and_csv_hold_the_same_lines_as_the_api(self, api: Any, valkey_server):
        prefix = tag()
        session = await start(api.client, durationMs=1000)
        async with traffic_client(valkey_server) as traffic:
            await traffic.set(f"{prefix}:q", 'say "hi"\n=1+1, and a comma')
            await send(traffic, "HSET", f"{prefix}:h", "field", "é€")
            await traffic.set(f"{prefix}:bin", b"\x00\xff")
        await ended(api.client, session["id"])
        stored = await all_lines(api.client, session["id"])

        as_json = await api.client.get(f"/api/monitor/sessions/{session['id']}/export")
        assert as_json.status_code == 200
        assert as_json.headers["content-type"] == "application/json"
        disposition = as_json.headers["content-disposition"]
        assert disposition == f'attachment; filename="monitor-{session["id"]}-env-default.json"'
        body = as_json.json()
        assert body["session"]["id"] == session["id"]
        assert body["lines"] == stored

        as_csv = await api.client.get(
            f"/api/monitor/sessions/{session['id']}/export", params={"format": "csv"}
        )
        assert as_csv.headers["content-type"] == "text/csv; charset=utf-8"
        assert as_csv.headers["content-disposition"].endswith('.csv"')
        rows = list(csv.DictReader(io.StringIO(as_csv.text)))
        assert [_from_csv(row) for row in rows] == stored
        mine = tagged(stored, prefix)
        assert [x["args"][1:] for x in mine] == [
            ['say "hi"\n=1+1, and a comma'],
            ["field", "é€"],
            ["\x00\\xff"],
        ]

    async def test_csv_cells_never_start_a_formula(self, api: Any, valkey_server):
        session = await start(api.client, durationMs=800)
        async with traffic_client(valkey_server) as traffic:
            await send(traffic, "SET", "=HYPERLINK(1)", "x")
        await ended(api.client, session["id"])
        response = await api.client.get(
            f"/api/monitor/sessions/{session['id']}/export", params={"format": "csv"}
        )
        for row in csv.reader(io.StringIO(response.text)):
            assert not any(cell.startswith(("=", "+", "-", "@")) for cell in row), row

    async def test_a_capture_that_has_ended_can_be_deleted(self, api: Any):
        session = await start(api.client, durationMs=60_000)
        running = await api.client.delete(f"/api/monitor/sessions/{session['id']}")
        assert running.status_code == 409
        await api.client.post(f"/api/monitor/sessions/{session['id']}/stop")
        deleted = await api.client.delete(f"/api/monitor/sessions/{session['id']}")
        assert deleted.status_code == 204
        assert (await api.client.get(f"/api/monitor/sessions/{session['id']}")).status_code == 404


class TestStorage:
    async def test_captures_and_lines_are_stored_on_every_backend(
        self, app_factory: AppFactory, valkey_server: RunningServer
    ):
        prefix = tag()
        async with app_factory() as app:
            session = await start(app.client, durationMs=800)
            async with traffic_client(valkey_server) as traffic:
                for n in range(5):
                    await traffic.set(f"{prefix}:{n}", n)
            await ended(app.client, session["id"])
            lines = tagged(await all_lines(app.client, session["id"]), prefix)
        assert [x["args"] for x in lines] == [[f"{prefix}:{n}", str(n)] for n in range(5)]

    async def test_captures_past_the_retention_window_are_deleted(
        self, memory_app_factory: AppFactory, valkey_server: RunningServer
    ):
        async with memory_app_factory(LOCAL_RETENTION_DAYS=1) as app:
            session = await start(app.client, durationMs=500)
            async with traffic_client(valkey_server) as traffic:
                await traffic.set(tag(), "kept a day")
            final = await ended(app.client, session["id"])
            assert await all_lines(app.client, session["id"]) != []
            retention = app.app.state.features.retention
            await retention.sweep(now_ms=final["startedAt"] + 86_400_000 - 60_000)
            assert (await app.client.get(f"/api/monitor/sessions/{session['id']}")).is_success
            await retention.sweep(now_ms=final["endedAt"] + 86_400_000 + 60_000)
            gone = await app.client.get(f"/api/monitor/sessions/{session['id']}")
            assert gone.status_code == 404
            assert (await app.client.get("/api/monitor/sessions")).json() == []

    async def test_a_capture_left_running_by_a_crash_is_failed_at_startup(
        self, valkey_server: RunningServer, tmp_path: Any
    ):
        path = tmp_path / "crash.db"
        settings = make_settings(
            **target_of(valkey_server), STORAGE_TYPE="sqlite", STORAGE_SQLITE_FILEPATH=path
        )
        async with running_app(settings) as app:
            session = await start(app.client, durationMs=500)
            await ended(app.client, session["id"])
        # What a process killed mid-capture leaves behind: a row that says running.
        with contextlib.closing(sqlite3.connect(path)) as db, db:
            db.execute("UPDATE monitor_sessions SET status = 'running', ended_at = NULL")
        async with running_app(settings) as app:
            found = (await app.client.get(f"/api/monitor/sessions/{session['id']}")).json()
            assert found["status"] == "failed"
            assert found["endReason"] == "svc-monitor stopped while capturing"
            await start(app.client, durationMs=500)  # the connection is free again

    async def test_shutdown_stops_a_running_capture(self, valkey_server, tmp_path: Any):
        settings = make_settings(
            **target_of(valkey_server),
            STORAGE_TYPE="sqlite",
            STORAGE_SQLITE_FILEPATH=tmp_path / "stop.db",
        )
        async with running_app(settings) as app:
            session = await start(app.client, durationMs=60_000)
        async with running_app(settings) as app:
            found = (await app.client.get(f"/api/monitor/sessions/{session['id']}")).json()
        assert found["status"] == "stopped"
        assert found["endReason"] == "stopped: svc-monitor shut down"


class TestRefusals:
    async def test_a_user_without_monitor_gets_an_explanation(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory
    ):
        server = server_factory.start(
            "valkey", acl_users=["reader on >readerpw ~* +@read +info +ping +client"]
        )
        try:
            async with memory_app_factory(
                DB_HOST=server.host, DB_PORT=server.port, DB_USERNAME="reader",
                DB_PASSWORD="readerpw",
            ) as app:  # fmt: skip
                preflight = await app.client.post("/api/monitor/sessions/preflight", json={})
                assert preflight.status_code == 200, preflight.text
                body = preflight.json()
                assert body["allowed"] is False
                assert "NOPERM" in body["problem"]
                assert "+monitor" in body["problem"]
                refused = await app.client.post("/api/monitor/sessions", json={})
                assert refused.status_code == 409
                assert "refuses MONITOR" in refused.json()["message"]
                assert (await app.client.get("/api/monitor/sessions")).json() == []
        finally:
            server_factory.stop(server)

    async def test_a_renamed_monitor_is_explained(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory
    ):
        server = server_factory.start("redis7", config={"rename-command": 'MONITOR ""'})
        try:
            async with memory_app_factory(**target_of(server)) as app:
                body = (await app.client.post("/api/monitor/sessions/preflight")).json()
                assert body["allowed"] is False
                assert "MONITOR is not available on this server" in body["problem"]
                assert "renamed or disabled" in body["problem"]
                started = await app.client.post("/api/monitor/sessions", json={})
                assert started.status_code == 501
                assert started.json()["message"] == body["problem"]
        finally:
            server_factory.stop(server)

    async def test_an_unreachable_server_is_503_on_start(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory
    ):
        server = server_factory.start("valkey")
        async with memory_app_factory(**target_of(server)) as app:
            server_factory.stop(server)
            preflight = (await app.client.post("/api/monitor/sessions/preflight")).json()
            assert preflight["allowed"] is None
            assert preflight["problem"].startswith("The server did not answer")
            response = await app.client.post("/api/monitor/sessions", json={})
            assert response.status_code == 503
            assert response.json()["message"].startswith("Could not start MONITOR")

    async def test_the_server_going_away_fails_the_capture_with_its_reason(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory
    ):
        server = server_factory.start("valkey")
        async with memory_app_factory(**target_of(server)) as app:
            session = await start(app.client, durationMs=60_000)
            server_factory.stop(server)
            final = await ended(app.client, session["id"])
        assert final["status"] == "failed"
        assert final["endReason"].startswith("connection lost:")


class TestPreflight:
    async def test_it_estimates_from_the_servers_rate_and_names_the_caps(
        self, api: Any, valkey_server: RunningServer
    ):
        response = await api.client.post(
            "/api/monitor/sessions/preflight", json={"durationMs": 10_000, "maxLines": 50}
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["allowed"] is True
        assert body["problem"] is None
        assert body["opsPerSec"] >= 0
        assert body["caps"] == {"durationMs": 10_000, "maxLines": 50, "maxBytes": 8 * 1024**2}
        assert body["limits"] == {
            "durationMs": 300_000,
            "maxLines": 100_000,
            "maxBytes": 32 * 1024**2,
        }
        assert body["running"] is None
        assert body["endsBy"] in ("duration", "line cap", "byte cap")

    async def test_it_names_the_capture_already_running(self, api: Any):
        session = await start(api.client, durationMs=60_000)
        body = (await api.client.post("/api/monitor/sessions/preflight")).json()
        assert body["running"]["id"] == session["id"]
        assert body["allowed"] is True


def _from_csv(row: dict[str, str]) -> dict[str, Any]:
    def number(text: str) -> int | None:
        return None if text == "" else int(text)

    def text(value: str) -> str | None:
        return None if value == "" else value

    return {
        "seq": int(row["seq"]),
        "ts": text(row["ts"]),
        "tsMs": number(row["tsMs"]),
        "db": number(row["db"]),
        "client": text(row["client"]),
        "command": text(row["command"]),
        "args": json.loads(row["args"]) if row["args"] else [],
        "argCount": int(row["argCount"]),
        "shortened": row["shortened"] == "true",
        "raw": text(row["raw"]),
        "size": int(row["size"]),
    }


async def _monitor_clients(traffic: Any) -> int:
    clients = str(await send(traffic, "CLIENT", "LIST"))
    return sum(1 for line in clients.splitlines() if " cmd=monitor " in f" {line} ")
