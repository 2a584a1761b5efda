"""The ACL audit trail against real servers: denials polled into history, once each."""

import asyncio
import time
from typing import Any

import pytest
import valkey.asyncio as avalkey
from valkey import exceptions as vx

from tests.fixtures.app import AppFactory, RunningApp
from tests.fixtures.servers import EngineKind, RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

LIMITED = ["limited on >pw ~* +get"]
AUDIT_MS = 200


async def wrong_password(server: RunningServer) -> None:
    client = avalkey.Valkey(host=server.host, port=server.port, username="limited", password="no")
    try:
        with pytest.raises(vx.AuthenticationError):
            await client.ping()
    finally:
        await client.aclose()


async def denied_set(server: RunningServer) -> None:
    # lib_name=None: valkey-py would otherwise send CLIENT SETINFO, itself denied and logged.
    client = avalkey.Valkey(
        host=server.host,
        port=server.port,
        username="limited",
        password="pw",
        lib_name=None,
        lib_version=None,
    )
    try:
        with pytest.raises(vx.NoPermissionError):
            await client.set("k", "v")
    finally:
        await client.aclose()


async def entries(app: RunningApp, query: str = "", **headers: str) -> list[dict[str, Any]]:
    response = await app.client.get(f"/api/audit/entries{query}", headers=headers)
    assert response.status_code == 200, response.text
    body: list[dict[str, Any]] = response.json()
    return body


async def audit_polled(app: RunningApp, connection_id: str = "env-default") -> None:
    async def polled() -> bool:
        loop = app.features.supervisor.loops_of(connection_id).get("audit")
        seen = app.services.connections.last_seen(await app.services.connections.get(connection_id))
        return bool(loop and loop.ticks >= 1 and seen and seen.identity)

    await eventually(polled)


@pytest.fixture
def limited_server(server_factory: ServerFactory):
    server = server_factory.start("valkey", acl_users=LIMITED)
    yield server
    server_factory.stop(server)


def at(server: RunningServer) -> dict[str, Any]:
    return {"DB_HOST": server.host, "DB_PORT": server.port, "AUDIT_POLL_INTERVAL_MS": AUDIT_MS}


class TestAuditTrail:
    async def test_denials_appear_with_user_and_reason_within_one_interval(
        self, app_factory: AppFactory, limited_server: RunningServer
    ):
        async with app_factory(**at(limited_server)) as app:
            await audit_polled(app)
            await wrong_password(limited_server)
            await denied_set(limited_server)
            started = time.monotonic()

            async def both() -> bool:
                return {(e["username"], e["reason"]) for e in await entries(app)} >= {
                    ("limited", "auth"),
                    ("limited", "command"),
                }

            await eventually(both)
            elapsed = time.monotonic() - started
            rows = await entries(app)
        assert elapsed < AUDIT_MS / 1000 + 0.5
        command = next(e for e in rows if e["reason"] == "command")
        assert command["object"] == "set"
        assert command["count"] == 1
        assert "user=limited" in command["clientInfo"]
        assert command["entryId"] is not None
        assert command["timestampLastUpdated"] >= command["timestampCreated"] > 1e12

    @pytest.mark.parametrize("kind", ["valkey", "redis7", "redis6"])
    async def test_an_entry_seen_on_several_polls_is_stored_once_with_its_growing_count(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory, kind: EngineKind
    ):
        server = server_factory.start(kind, acl_users=LIMITED)
        try:
            async with memory_app_factory(**at(server)) as app:
                await audit_polled(app)
                for expected in (1, 2, 3):
                    await denied_set(server)

                    async def counted(n: int = expected) -> bool:
                        rows = await entries(app, "?reason=command")
                        return [e["count"] for e in rows] == [n]

                    await eventually(counted)
                    await asyncio.sleep(3 * AUDIT_MS / 1000)  # several polls of the same entry
                rows = await entries(app, "?reason=command")
        finally:
            server_factory.stop(server)
        assert len(rows) == 1
        assert rows[0]["count"] == 3
        assert rows[0]["timestampLastUpdated"] >= rows[0]["timestampCreated"]

    async def test_a_reset_log_keeps_history_and_a_new_denial_is_a_new_entry_on_redis6(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory
    ):
        server = server_factory.start("redis6", acl_users=LIMITED)
        try:
            async with memory_app_factory(**at(server)) as app:
                await audit_polled(app)
                await denied_set(server)
                await denied_set(server)
                await eventually(lambda: _has_count(app, [2]))
                reset = await app.client.delete("/api/metrics/acl/log")
                assert reset.json() == {"success": True}
                live = (await app.client.get("/api/metrics/acl/log")).json()
                assert live == []
                await denied_set(server)
                await eventually(lambda: _has_count(app, [1, 2]))
                await asyncio.sleep(3 * AUDIT_MS / 1000)
                counts = sorted(e["count"] for e in await entries(app, "?reason=command"))
        finally:
            server_factory.stop(server)
        assert counts == [1, 2]

    async def test_failed_auth_by_user_and_stats(
        self, memory_app_factory: AppFactory, limited_server: RunningServer
    ):
        async with memory_app_factory(**at(limited_server)) as app:
            await audit_polled(app)
            await wrong_password(limited_server)
            await wrong_password(limited_server)
            await denied_set(limited_server)

            async def recorded() -> bool:
                return len(await entries(app)) >= 2

            await eventually(recorded)
            await asyncio.sleep(2 * AUDIT_MS / 1000)
            failed = (await app.client.get("/api/audit/failed-auth")).json()
            by_user = (await app.client.get("/api/audit/by-user?username=limited")).json()
            nobody = (await app.client.get("/api/audit/by-user?username=nobody")).json()
            stats = (await app.client.get("/api/audit/stats")).json()
        assert [(e["reason"], e["count"]) for e in failed] == [("auth", 2)]
        assert {e["reason"] for e in by_user} == {"auth", "command"}
        assert nobody == []
        assert stats["totalEntries"] == 2
        assert stats["totalEvents"] == 3
        assert stats["uniqueUsers"] == 1
        assert stats["byReason"]["auth"] == {"entries": 1, "events": 2}
        assert stats["byUser"]["limited"]["events"] == 3
        assert stats["timeRange"]["latest"] >= stats["timeRange"]["earliest"]

    async def test_live_acl_log_reads_the_server(
        self, memory_app_factory: AppFactory, limited_server: RunningServer
    ):
        async with memory_app_factory(
            DB_HOST=limited_server.host, DB_PORT=limited_server.port
        ) as app:
            await denied_set(limited_server)
            await wrong_password(limited_server)
            two = (await app.client.get("/api/metrics/acl/log?count=2")).json()
            one = (await app.client.get("/api/metrics/acl/log?count=1")).json()
        assert [e["reason"] for e in two] == ["auth", "command"]
        assert len(one) == 1
        assert two[1]["object"] == "set"
        assert two[1]["timestampCreated"] > 1e12


async def _has_count(app: RunningApp, counts: list[int]) -> bool:
    return sorted(e["count"] for e in await entries(app, "?reason=command")) == counts


class TestBadInput:
    @pytest.mark.parametrize(
        ("path", "field"),
        [
            ("/api/audit/entries?reason=bogus", "reason"),
            ("/api/audit/entries?limit=0", "limit"),
            ("/api/audit/failed-auth?offset=-1", "offset"),
            ("/api/audit/by-user", "username"),
            ("/api/audit/stats?from=-5", "from"),
            ("/api/metrics/acl/log?count=0", "count"),
        ],
    )
    async def test_422_names_the_field(self, api: RunningApp, path: str, field: str):
        response = await api.client.get(path)
        assert response.status_code == 422
        assert field in response.json()["fields"]


class TestIsolation:
    async def test_two_connections_never_see_each_others_audit_data(
        self,
        memory_app_factory: AppFactory,
        limited_server: RunningServer,
        server_factory: ServerFactory,
    ):
        second = server_factory.start("valkey")
        try:
            async with memory_app_factory(**at(limited_server)) as app:
                other = await app.client.post(
                    "/api/connections",
                    json={"name": "second", "host": second.host, "port": second.port},
                )
                other_id = other.json()["id"]
                await audit_polled(app)
                await audit_polled(app, other_id)
                await wrong_password(limited_server)
                await denied_set(limited_server)
                await wrong_password(second)  # user "limited" does not exist there

                async def recorded() -> bool:
                    theirs = await entries(app, **{"X-Connection-Id": other_id})
                    return len(await entries(app)) >= 2 and len(theirs) >= 1

                await eventually(recorded)
                views = {}
                for name, headers in (("mine", {}), ("theirs", {"X-Connection-Id": other_id})):
                    views[name] = [
                        (await app.client.get(route, headers=headers)).json()
                        for route in (
                            "/api/audit/entries",
                            "/api/audit/failed-auth",
                            "/api/audit/by-user?username=limited",
                            "/api/audit/stats",
                        )
                    ]
        finally:
            server_factory.stop(second)
        mine, theirs = views["mine"], views["theirs"]
        assert {e["reason"] for e in mine[0]} == {"auth", "command"}
        assert [e["reason"] for e in theirs[0]] == ["auth"]
        assert not {e["id"] for e in mine[0]} & {e["id"] for e in theirs[0]}
        assert len(mine[1]) == len(theirs[1]) == 1
        assert mine[1][0]["id"] != theirs[1][0]["id"]
        assert {e["reason"] for e in mine[2]} == {"auth", "command"}
        assert [e["reason"] for e in theirs[2]] == ["auth"]
        assert (mine[3]["totalEntries"], theirs[3]["totalEntries"]) == (2, 1)
