"""Who may do what with MONITOR captures when user control is on
(docs/features/monitor.md#who-may-do-what): members read, tail and export; only admins
start, stop and delete; nobody signed out gets anything, over HTTP or the socket."""

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from svc_monitor.console.monitor import api as monitor_api, service as monitor_service
from tests.console.monitor_helpers import (
    frames,
    start,
    tag,
    tail_lines,
    tail_socket,
    traffic_client,
)
from tests.fixtures.served_team import ServedTeam, served_team
from tests.fixtures.servers import RunningServer
from tests.fixtures.workspace import Workspace, workspace_settings

READS = [
    ("POST", "/api/monitor/sessions/preflight"),
    ("GET", "/api/monitor/sessions"),
    ("GET", "/api/monitor/sessions/{id}"),
    ("GET", "/api/monitor/sessions/{id}/lines"),
    ("GET", "/api/monitor/sessions/{id}/export"),
    ("GET", "/api/monitor/sessions/{id}/export?format=csv"),
]
CHANGES = [
    ("POST", "/api/monitor/sessions"),
    ("POST", "/api/monitor/sessions/{id}/stop"),
    ("DELETE", "/api/monitor/sessions/{id}"),
]


@pytest.fixture
async def team(workspace: Workspace) -> tuple[Workspace, Any, Any, dict[str, Any]]:
    """The workspace, a member, an admin, and a capture the admin started."""
    member = await workspace.join("Mia")
    admin = await workspace.join("Ada", role="admin")
    session = await start(admin.client, durationMs=60_000)
    return workspace, member, admin, session


class TestMembers:
    async def test_members_may_preflight_list_read_and_export(self, team: Any):
        _, member, _, session = team
        for method, path in READS:
            body: dict[str, Any] = {"json": {}} if method == "POST" else {}
            url = path.replace("{id}", str(session["id"]))
            response = await member.client.request(method, url, **body)
            assert response.status_code == 200, (path, response.text)

    async def test_members_may_not_start_stop_or_delete_and_leave_no_trace(self, team: Any):
        space, member, _, session = team
        before = await space.activity()
        for method, path in CHANGES:
            url = path.replace("{id}", str(session["id"]))
            response = await member.client.request(method, url, json={})
            assert response.status_code == 403, (path, response.text)
            assert response.json()["message"].startswith("Not allowed")
        assert await space.activity() == before
        still = await member.client.get(f"/api/monitor/sessions/{session['id']}")
        assert still.json()["status"] == "running"

    async def test_signed_out_callers_get_401_everywhere(self, team: Any):
        space, _, _, session = team
        anonymous = space.browser()
        for method, path in READS + CHANGES:
            url = path.replace("{id}", str(session["id"]))
            response = await anonymous.request(method, url, json={})
            assert response.status_code == 401, path

    async def test_the_start_and_stop_name_the_admin_and_are_logged(self, team: Any):
        space, _, admin, session = team
        assert session["requestedBy"] == "Ada"
        stopped = await admin.client.post(f"/api/monitor/sessions/{session['id']}/stop")
        assert stopped.json()["endReason"] == "stopped by Ada"
        actions = {
            (e["action"], e["actorName"], e["objectId"])
            for e in await space.activity()
            if "/api/monitor/" in e["action"]
        }
        assert ("POST /api/monitor/sessions", "Ada", str(session["id"])) in actions
        assert (
            "POST /api/monitor/sessions/{session_id}/stop",
            "Ada",
            str(session["id"]),
        ) in actions


@pytest.fixture
async def served(valkey_server: RunningServer) -> AsyncIterator[ServedTeam]:
    async with served_team(workspace_settings(valkey_server)) as team:
        yield team


class TestSockets:
    async def test_no_session_is_refused_before_the_handshake(self, served: ServedTeam):
        assert served.owner is not None
        session = await start(served.owner.client, durationMs=500)
        for cookie in (None, (served.cookie_name, "forged.value"), (served.cookie_name, "")):
            with pytest.raises(InvalidStatus) as refused:
                async with tail_socket(served.url, session["id"], cookie=cookie):
                    pass
            assert refused.value.response.status_code == 403

    async def test_a_member_tails_a_capture_live(
        self, served: ServedTeam, valkey_server: RunningServer
    ):
        assert served.owner is not None
        member = await served.join("Mia")
        prefix = tag()
        session = await start(served.owner.client, durationMs=1500)
        cookie = (served.cookie_name, member.cookie)
        async with tail_socket(served.url, session["id"], cookie=cookie) as socket:
            async with traffic_client(valkey_server) as traffic:
                await asyncio.sleep(0.2)
                await traffic.set(f"{prefix}:seen", "by the member")
            received = await frames(socket)
        assert any(x["args"] == [f"{prefix}:seen", "by the member"] for x in tail_lines(received))
        assert received[-1]["type"] == "status"

    async def test_a_member_from_another_origin_is_refused(self, served: ServedTeam):
        assert served.owner is not None
        member = await served.join("Mia")
        session = await start(served.owner.client, durationMs=500)
        cookie = (served.cookie_name, member.cookie)
        with pytest.raises(InvalidStatus) as refused:
            async with tail_socket(
                served.url, session["id"], cookie=cookie, origin="https://evil.example"
            ):
                pass
        assert refused.value.response.status_code == 403

    async def test_signing_out_closes_an_open_tail(
        self, served: ServedTeam, monkeypatch: pytest.MonkeyPatch
    ):
        # Re-checked every 30 s and woken every 10 s in the product; here at once.
        monkeypatch.setattr(monitor_api, "_RECHECK_S", 0.0)
        monkeypatch.setattr(monitor_service, "TAIL_TICK_S", 0.2)
        assert served.owner is not None
        member = await served.join("Mia")
        session = await start(served.owner.client, durationMs=60_000)
        cookie = (served.cookie_name, member.cookie)
        async with tail_socket(served.url, session["id"], cookie=cookie) as socket:
            assert (await socket.recv()) is not None
            await member.client.post("/api/auth/logout")
            received = await frames(socket, within=10)
        assert received[-1] == {"type": "error", "error": "Your session has ended: sign in again"}
        assert socket.close_code == 1008
