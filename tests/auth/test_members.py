"""Members and roles: who sees what, role changes, removal and ownership transfer."""

import asyncio
import time
from typing import Any

from svc_monitor.auth.revocations import SYNC_EVERY_S
from tests.fixtures.licensing import FakeClock
from tests.fixtures.servers import RunningServer
from tests.fixtures.workspace import (
    Workspace,
    open_workspace,
    workspace_settings,
)


class TestMembers:
    async def test_members_see_names_and_roles_but_not_emails(self, workspace: Workspace):
        mia = await workspace.join("Mia")
        seen_by_member = (await mia.client.get("/api/workspace/members")).json()
        assert {(m["name"], m["role"]) for m in seen_by_member} == {
            ("Olive Owner", "owner"),
            ("Mia", "member"),
        }
        assert all(m["email"] is None for m in seen_by_member)
        seen_by_owner = (await workspace.owner.client.get("/api/workspace/members")).json()
        assert {m["email"] for m in seen_by_owner} == {"owner@example.com", "mia@example.com"}

    async def test_member_cannot_change_anything(self, workspace: Workspace):
        mia = await workspace.join("Mia")
        attempts = [
            mia.client.put(f"/api/workspace/members/{mia.id}", json={"role": "admin"}),
            mia.client.post("/api/workspace/invitations", json={"email": "x@example.com"}),
            mia.client.post("/api/connections", json={"host": "127.0.0.1", "port": 6390}),
            mia.client.put("/api/settings", json={"auditPollIntervalMs": 5000}),
            mia.client.get("/api/workspace/activity"),
            mia.client.get("/api/metrics/config"),
        ]
        for attempt in attempts:
            response = await attempt
            assert response.status_code == 403, response.text
            assert "needs the admin role" in response.json()["message"]
        assert (await mia.client.get("/api/metrics/info")).status_code == 200
        assert [
            m["role"] for m in (await workspace.owner.client.get("/api/workspace/members")).json()
        ] == [
            "owner",
            "member",
        ]
        entries = await workspace.activity()
        assert all(e["actorName"] != "Mia" or e["action"] == "auth.login" for e in entries)

    async def test_admin_changes_roles_but_not_the_owner(self, workspace: Workspace):
        ada = await workspace.join("Ada", role="admin")
        mia = await workspace.join("Mia")
        promoted = await ada.client.put(f"/api/workspace/members/{mia.id}", json={"role": "admin"})
        assert promoted.status_code == 200, promoted.text
        assert promoted.json()["role"] == "admin"
        # the new admin's very next request has admin rights (same process: at once)
        assert (await mia.client.get("/api/workspace/activity")).status_code == 200

        owner_id = workspace.owner.id
        for body in ({"role": "member"}, {"role": "admin"}):
            refused = await ada.client.put(f"/api/workspace/members/{owner_id}", json=body)
            assert refused.status_code == 403
        assert (await ada.client.delete(f"/api/workspace/members/{owner_id}")).status_code == 403
        to_owner = await ada.client.put(f"/api/workspace/members/{mia.id}", json={"role": "owner"})
        assert to_owner.status_code == 422
        assert "role" in to_owner.json()["fields"]

    async def test_removed_member_is_refused_at_once(self, workspace: Workspace):
        mia = await workspace.join("Mia", role="admin")
        token = (await mia.client.post("/api/tokens", json={"name": "laptop"})).json()["token"]
        assert (await mia.client.get("/api/connections")).status_code == 200
        removed = await workspace.owner.client.delete(f"/api/workspace/members/{mia.id}")
        assert removed.status_code == 204
        assert (await mia.client.get("/api/connections")).status_code == 401
        bearer = workspace.browser(Authorization=f"Bearer {token}")
        assert (await bearer.get("/api/connections")).status_code == 401
        names = [
            m["name"] for m in (await workspace.owner.client.get("/api/workspace/members")).json()
        ]
        assert names == ["Olive Owner"]
        entry = (await workspace.activity(action="DELETE /api/workspace/members/{member_id}"))[0]
        assert entry["objectId"] == mia.id
        assert entry["status"] == 204

    async def test_transfer_makes_the_old_owner_an_admin(self, workspace: Workspace):
        ada = await workspace.join("Ada", role="admin")
        assert (
            await ada.client.post("/api/workspace/transfer", json={"memberId": ada.id})
        ).status_code == 403  # admins cannot transfer
        moved = await workspace.owner.client.post(
            "/api/workspace/transfer", json={"memberId": ada.id}
        )
        assert moved.status_code == 200, moved.text
        roles = {
            m["name"]: m["role"] for m in (await ada.client.get("/api/workspace/members")).json()
        }
        assert roles == {"Olive Owner": "admin", "Ada": "owner"}
        entry = (await workspace.activity(action="POST /api/workspace/transfer"))[0]
        assert (entry["objectId"], entry["actorName"]) == (ada.id, "Olive Owner")
        again = await workspace.owner.client.post(
            "/api/workspace/transfer", json={"memberId": workspace.owner.id}
        )
        assert again.status_code == 403  # no longer the owner
        assert (
            await ada.client.delete(f"/api/workspace/members/{workspace.owner.id}")
        ).status_code == 204


class TestTwoReplicas:
    async def test_demoted_admin_loses_admin_rights_within_30_s(
        self, valkey_server: RunningServer, shared_postgres: dict[str, Any]
    ):
        """Two processes on one database and one AUTH_SECRET: the one that did not make the
        change honours the cached role until its 30 s recheck, then refuses."""
        shared = {**shared_postgres, "AUTH_SECRET": "s" * 40}
        clock = FakeClock()
        async with (
            open_workspace(workspace_settings(valkey_server, **shared), clock=clock) as first,
            open_workspace(
                workspace_settings(valkey_server, **shared), clock=clock, claim=False
            ) as second,
        ):
            ada = await first.join("Ada", role="admin")
            on_second = second.browser()
            on_second.cookies.update(dict(ada.client.cookies))
            assert (await on_second.get("/api/workspace/activity")).status_code == 200

            demoted = await first.owner.client.put(
                f"/api/workspace/members/{ada.id}", json={"role": "member"}
            )
            assert demoted.status_code == 200
            assert (await ada.client.get("/api/workspace/activity")).status_code == 403  # at once
            clock.advance(seconds=31)
            assert (await on_second.get("/api/workspace/activity")).status_code == 403
            assert (await on_second.get("/api/connections")).status_code == 200  # still a member

    async def test_a_removal_or_sign_out_reaches_the_other_replica_in_seconds(
        self, valkey_server: RunningServer, shared_postgres: dict[str, Any]
    ):
        """Within revocations.SYNC_EVERY_S, long before the cookie's 30 s recheck."""
        shared = {**shared_postgres, "AUTH_SECRET": "s" * 40}
        async with (
            open_workspace(workspace_settings(valkey_server, **shared)) as first,
            open_workspace(workspace_settings(valkey_server, **shared), claim=False) as second,
        ):
            mia = await first.join("Mia")
            ada = await first.join("Ada", role="admin")
            mia_there, ada_there = second.browser(), second.browser()
            mia_there.cookies.update(dict(mia.client.cookies))
            ada_there.cookies.update(dict(ada.client.cookies))
            assert (await mia_there.get("/api/connections")).status_code == 200
            assert (await ada_there.get("/api/connections")).status_code == 200

            removed = await first.owner.client.delete(f"/api/workspace/members/{mia.id}")
            assert removed.status_code == 204
            assert (await ada.client.post("/api/auth/logout")).status_code == 204
            deadline = time.monotonic() + 3 * SYNC_EVERY_S
            while time.monotonic() < deadline:
                answers = [
                    (await c.get("/api/connections")).status_code for c in (mia_there, ada_there)
                ]
                if answers == [401, 401]:
                    break
                await asyncio.sleep(0.1)
            assert answers == [401, 401]

    async def test_a_removal_or_revocation_ends_tokens_on_the_other_replica_in_seconds(
        self, valkey_server: RunningServer, shared_postgres: dict[str, Any]
    ):
        """A token the other replica has just let in (and so holds for 30 s) is refused
        there within revocations.SYNC_EVERY_S of its member's removal or its revocation."""
        shared = {**shared_postgres, "AUTH_SECRET": "s" * 40}
        async with (
            open_workspace(workspace_settings(valkey_server, **shared)) as first,
            open_workspace(workspace_settings(valkey_server, **shared), claim=False) as second,
        ):
            mia = await first.join("Mia")
            ada = await first.join("Ada")
            mias = (await mia.client.post("/api/tokens", json={"name": "t"})).json()
            adas = (await ada.client.post("/api/tokens", json={"name": "t"})).json()
            scripts = [
                second.browser(Authorization=f"Bearer {made['token']}") for made in (mias, adas)
            ]
            assert [(await s.get("/api/connections")).status_code for s in scripts] == [200, 200]

            removed = await first.owner.client.delete(f"/api/workspace/members/{mia.id}")
            assert removed.status_code == 204
            assert (await ada.client.delete(f"/api/tokens/{adas['id']}")).status_code == 204
            deadline = time.monotonic() + 3 * SYNC_EVERY_S
            while time.monotonic() < deadline:
                answers = [(await s.get("/api/connections")).status_code for s in scripts]
                if answers == [401, 401]:
                    break
                await asyncio.sleep(0.1)
            assert answers == [401, 401]
