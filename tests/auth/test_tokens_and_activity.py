"""Personal API tokens, the activity log, and the origin check on mutations."""

import pytest

from tests.fixtures.licensing import FakeClock
from tests.fixtures.servers import RunningServer
from tests.fixtures.workspace import ORIGIN, PASSWORD, Workspace, WorkspaceFactory


class TestApiTokens:
    async def test_token_acts_as_its_user_and_is_recorded_under_their_name(
        self, workspace: Workspace
    ):
        ada = await workspace.join("Ada", role="admin")
        created = await ada.client.post("/api/tokens", json={"name": "ci job"})
        assert created.status_code == 201
        secret = created.json()["token"]
        assert secret.startswith("svc_pat_")
        listed = (await ada.client.get("/api/tokens")).json()
        assert [(t["name"], t["token"]) for t in listed] == [("ci job", None)]

        script = workspace.browser()  # no cookie, no Origin needed: a script, not a browser
        del script.headers["Origin"]
        script.headers["Authorization"] = f"Bearer {secret}"
        response = await script.put("/api/settings", json={"auditPollIntervalMs": 30000})
        assert response.status_code == 200, response.text
        entry = (await workspace.activity(action="PUT /api/settings"))[0]
        assert entry["actorName"] == "Ada"
        assert entry["details"] == {"via": "token"}

        revoked = await ada.client.delete(f"/api/tokens/{created.json()['id']}")
        assert revoked.status_code == 204
        assert (await script.get("/api/connections")).status_code == 401

    async def test_a_token_acts_with_its_users_current_role(self, workspace: Workspace):
        ada = await workspace.join("Ada", role="admin")
        secret = (await ada.client.post("/api/tokens", json={"name": "t"})).json()["token"]
        script = workspace.browser(Authorization=f"Bearer {secret}")
        assert (await script.get("/api/workspace/activity")).status_code == 200
        demoted = await workspace.owner.client.put(
            f"/api/workspace/members/{ada.id}", json={"role": "member"}
        )
        assert demoted.status_code == 200
        assert (await script.get("/api/metrics/info")).status_code == 200
        assert (await script.get("/api/workspace/activity")).status_code == 403
        assert (await script.delete("/api/metrics/slowlog")).status_code == 403

    async def test_an_admins_token_follows_a_promotion_to_owner(self, workspace: Workspace):
        ada = await workspace.join("Ada", role="admin")
        secret = (await ada.client.post("/api/tokens", json={"name": "t"})).json()["token"]
        moved = await workspace.owner.client.post(
            "/api/workspace/transfer", json={"memberId": ada.id}
        )
        assert moved.status_code == 200, moved.text
        script = workspace.browser(Authorization=f"Bearer {secret}")
        back = await script.post("/api/workspace/transfer", json={"memberId": workspace.owner.id})
        assert back.status_code == 200, back.text

    async def test_bad_bearer_tokens_are_nobody(self, workspace: Workspace):
        for value in ("Bearer svc_pat_wrong", "Bearer ", "Basic b3duZXI6cGFzcw==", "svc_pat_x"):
            client = workspace.browser(Authorization=value)
            assert (await client.get("/api/connections")).status_code == 401, value

    async def test_nobody_revokes_someone_elses_token(self, workspace: Workspace):
        mia = await workspace.join("Mia", role="admin")
        token_id = (await mia.client.post("/api/tokens", json={"name": "t"})).json()["id"]
        response = await workspace.owner.client.delete(f"/api/tokens/{token_id}")
        assert response.status_code == 404
        assert [t["revokedAt"] for t in (await mia.client.get("/api/tokens")).json()] == [None]


class TestMembersOwnTokens:
    async def test_a_member_makes_uses_and_revokes_their_own_token(self, workspace: Workspace):
        mia = await workspace.join("Mia")
        created = await mia.client.post("/api/tokens", json={"name": "laptop MCP"})
        assert created.status_code == 201, created.text
        token_id, secret = created.json()["id"], created.json()["token"]
        assert secret.startswith("svc_pat_")
        listed = (await mia.client.get("/api/tokens")).json()
        assert [(t["id"], t["name"], t["token"]) for t in listed] == [
            (token_id, "laptop MCP", None)
        ]

        script = workspace.browser(Authorization=f"Bearer {secret}")
        del script.headers["Origin"]
        assert (await script.get("/api/metrics/info")).status_code == 200
        assert (await script.get("/api/auth/me")).json()["role"] == "member"

        revoked = await mia.client.delete(f"/api/tokens/{token_id}")
        assert revoked.status_code == 204
        assert (await script.get("/api/metrics/info")).status_code == 401
        assert [
            t["revokedAt"] is not None for t in (await mia.client.get("/api/tokens")).json()
        ] == [True]
        made = (await workspace.activity(action="POST /api/tokens"))[0]
        assert (made["actorName"], made["status"], made["objectId"]) == ("Mia", 201, token_id)
        gone = (await workspace.activity(action="DELETE /api/tokens/{token_id}"))[0]
        assert (gone["actorName"], gone["status"], gone["objectId"]) == ("Mia", 204, token_id)
        everything = (await workspace.owner.client.get("/api/workspace/activity")).text
        assert secret not in everything

    async def test_a_members_token_is_refused_every_admin_route(self, workspace: Workspace):
        mia = await workspace.join("Mia")
        secret = (await mia.client.post("/api/tokens", json={"name": "t"})).json()["token"]
        script = workspace.browser(Authorization=f"Bearer {secret}")
        del script.headers["Origin"]
        attempts = [
            script.get("/api/workspace/activity"),
            script.get("/api/metrics/config"),
            script.put("/api/settings", json={"auditPollIntervalMs": 5000}),
            script.delete("/api/metrics/slowlog"),
            script.post("/api/connections", json={"host": "127.0.0.1", "port": 6390}),
            script.post("/api/workspace/invitations", json={"email": "x@example.com"}),
            script.put(f"/api/workspace/members/{mia.id}", json={"role": "admin"}),
        ]
        for attempt in attempts:
            response = await attempt
            assert response.status_code == 403, response.text
            assert "needs the admin role, and you are a member" in response.json()["message"]

    async def test_a_token_made_as_a_member_stays_a_members_after_a_promotion(
        self, workspace: Workspace
    ):
        mia = await workspace.join("Mia")
        made = (await mia.client.post("/api/tokens", json={"name": "t"})).json()
        script = workspace.browser(Authorization=f"Bearer {made['token']}")
        promoted = await workspace.owner.client.put(
            f"/api/workspace/members/{mia.id}", json={"role": "admin"}
        )
        assert promoted.status_code == 200
        assert (await mia.client.get("/api/workspace/activity")).status_code == 200
        refused = await script.get("/api/workspace/activity")
        assert refused.status_code == 403
        assert "you are a member" in refused.json()["message"]
        assert (await script.get("/api/metrics/info")).status_code == 200
        # A token made after the promotion acts as the admin they now are.
        again = (await mia.client.post("/api/tokens", json={"name": "t2"})).json()
        admin_script = workspace.browser(Authorization=f"Bearer {again['token']}")
        assert (await admin_script.get("/api/workspace/activity")).status_code == 200

    async def test_a_member_never_sees_nor_revokes_another_users_token(self, workspace: Workspace):
        ada = await workspace.join("Ada", role="admin")
        adas = (await ada.client.post("/api/tokens", json={"name": "ada's"})).json()
        mia = await workspace.join("Mia")
        assert (await mia.client.get("/api/tokens")).json() == []
        mias = (await mia.client.post("/api/tokens", json={"name": "mia's"})).json()
        assert [t["name"] for t in (await mia.client.get("/api/tokens")).json()] == ["mia's"]

        by_cookie = await mia.client.delete(f"/api/tokens/{adas['id']}")
        made_up = await mia.client.delete("/api/tokens/" + "0" * 32)
        assert by_cookie.status_code == made_up.status_code == 404
        # The same answer as for an id that never existed: nothing says the token is there.
        assert by_cookie.json()["message"].replace(adas["id"], "ID") == made_up.json()[
            "message"
        ].replace("0" * 32, "ID")
        with_her_token = workspace.browser(Authorization=f"Bearer {mias['token']}")
        assert (await with_her_token.delete(f"/api/tokens/{adas['id']}")).status_code == 404
        assert [t["name"] for t in (await with_her_token.get("/api/tokens")).json()] == ["mia's"]

        adas_script = workspace.browser(Authorization=f"Bearer {adas['token']}")
        assert (await adas_script.get("/api/workspace/activity")).status_code == 200
        assert [t["revokedAt"] for t in (await ada.client.get("/api/tokens")).json()] == [None]
        assert adas["name"] not in (await mia.client.get("/api/tokens")).text

    async def test_removing_a_member_ends_their_tokens_at_once(self, workspace: Workspace):
        mia = await workspace.join("Mia")
        secret = (await mia.client.post("/api/tokens", json={"name": "t"})).json()["token"]
        script = workspace.browser(Authorization=f"Bearer {secret}")
        assert (await script.get("/api/connections")).status_code == 200  # cached from here on
        removed = await workspace.owner.client.delete(f"/api/workspace/members/{mia.id}")
        assert removed.status_code == 204
        assert (await script.get("/api/connections")).status_code == 401


class TestActivityLog:
    async def test_mutations_are_recorded_with_who_where_and_what(
        self, workspace: Workspace, redis7_server: RunningServer
    ):
        owner = workspace.owner.client
        created = await owner.post(
            "/api/connections",
            json={"name": "cache", "host": redis7_server.host, "port": redis7_server.port},
            headers={"X-Connection-Id": "env-default"},
        )
        assert created.status_code == 201, created.text
        entry = (await workspace.activity(action="POST /api/connections"))[0]
        assert entry["actorName"] == "Olive Owner"
        assert entry["actorId"] == workspace.owner.id
        assert entry["sourceIp"] == "127.0.0.1"
        assert entry["connectionId"] == "env-default"
        assert entry["route"] == "/api/connections"
        assert entry["status"] == 201
        assert entry["objectId"] == created.json()["id"]
        deleted = await owner.delete(f"/api/connections/{created.json()['id']}")
        assert deleted.status_code == 204
        entry = (await workspace.activity(action="DELETE /api/connections/{connection_id}"))[0]
        assert entry["objectId"] == created.json()["id"]
        assert {e["action"] for e in await workspace.activity(actor="Olive Owner")} >= {
            "auth.login",
            "POST /api/connections",
            "DELETE /api/connections/{connection_id}",
        }

    async def test_reads_and_refusals_are_not_recorded(self, workspace: Workspace):
        mia = await workspace.join("Mia")
        before = await workspace.activity()
        await mia.client.get("/api/connections")
        await mia.client.delete("/api/metrics/slowlog")  # 403
        await workspace.browser().post("/api/connections", json={})  # 401
        assert await workspace.activity() == before

    async def test_failed_mutations_by_a_user_are_recorded_with_their_status(
        self, workspace: Workspace
    ):
        response = await workspace.owner.client.delete("/api/connections/no-such-connection")
        assert response.status_code == 404
        entry = (await workspace.activity(action="DELETE /api/connections/{connection_id}"))[0]
        assert entry["status"] == 404
        assert entry["objectId"] == "no-such-connection"

    async def test_sign_out_is_recorded(self, workspace: Workspace):
        mia = await workspace.join("Mia")
        await mia.client.post("/api/auth/logout")
        entry = (await workspace.activity(action="auth.logout"))[0]
        assert entry["actorName"] == "Mia"
        assert await workspace.activity(action="POST /api/auth/logout") == []

    async def test_paging_with_cursor_and_limit(self, workspace: Workspace):
        for i in range(5):
            await workspace.owner.client.put(
                "/api/settings", json={"auditPollIntervalMs": 1000 + i}
            )
        owner = workspace.owner.client
        first = (await owner.get("/api/workspace/activity?limit=2")).json()
        assert len(first["entries"]) == 2
        second = (
            await owner.get(f"/api/workspace/activity?limit=2&cursor={first['nextCursor']}")
        ).json()
        ids = [e["id"] for e in first["entries"] + second["entries"]]
        assert ids == sorted(ids, reverse=True)
        assert len(set(ids)) == 4
        everything = (await owner.get("/api/workspace/activity?limit=100")).json()
        assert everything["nextCursor"] is None
        assert len(everything["entries"]) == 6  # claim sign-in + 5 changes

        too_many = await owner.get("/api/workspace/activity?limit=101")
        assert too_many.status_code == 422
        assert "limit" in too_many.json()["fields"]
        bad = await owner.get("/api/workspace/activity?cursor=abc")
        assert bad.status_code == 422

    async def test_time_window_filters(self, workspace_factory: WorkspaceFactory):
        clock = FakeClock()
        async with workspace_factory(clock=clock) as space:
            start = int(clock.now * 1000)
            clock.advance(hours=1)
            await space.owner.client.put("/api/settings", json={"auditPollIntervalMs": 2000})
            later = await space.activity(**{"from": start + 1000})
            assert [e["action"] for e in later] == ["PUT /api/settings"]
            earlier = await space.activity(to=start + 1000)
            assert [e["action"] for e in earlier] == ["auth.login"]

    async def test_entries_past_retention_are_pruned_at_startup(
        self, workspace_factory: WorkspaceFactory, tmp_path: object
    ):
        clock = FakeClock()
        path = f"{tmp_path}/activity.db"
        storage = {"STORAGE_TYPE": "sqlite", "STORAGE_SQLITE_FILEPATH": path}
        async with workspace_factory(clock=clock, ACTIVITY_RETENTION_DAYS=3, **storage) as space:
            assert len(await space.activity()) == 1
        clock.advance(days=4)
        async with workspace_factory(
            clock=clock, claim=False, ACTIVITY_RETENTION_DAYS=3, **storage
        ) as space:
            client = await space.sign_in("owner@example.com")
            entries = (await client.get("/api/workspace/activity")).json()["entries"]
            assert [e["details"] for e in entries] == [{"method": "password"}]

    async def test_hostile_names_come_back_as_data(self, workspace: Workspace):
        token = await workspace.invite("x@example.com")
        client = workspace.browser()
        # A line break would forge a log line: a name with one is refused, naming the field.
        forged = await client.post(
            "/api/auth/accept-invite",
            json={"token": token, "name": "Eve\r\nFAKE", "password": PASSWORD},
        )
        assert forged.status_code == 422, forged.text
        assert forged.json()["fields"] == ["name"]
        name = "<script>alert(1)</script> FAKE"
        response = await client.post(
            "/api/auth/accept-invite", json={"token": token, "name": name, "password": PASSWORD}
        )
        assert response.status_code == 201
        entry = (await workspace.activity(action="auth.login"))[0]
        assert entry["actorName"] == name  # data, never markup


class TestOrigin:
    async def test_cross_origin_mutations_with_the_cookie_are_refused(self, workspace: Workspace):
        owner = workspace.owner.client
        for headers in (
            {"Origin": "https://evil.example"},
            {"Origin": "http://svc.test.evil.com"},
            {"Origin": "https://svc.test"},
            {"Origin": "http://svc.test:8443"},
            {"Origin": "null"},
            {"Origin": ORIGIN, "Sec-Fetch-Site": "cross-site"},
        ):
            response = await owner.put(
                "/api/settings", json={"auditPollIntervalMs": 5000}, headers=headers
            )
            assert response.status_code == 403, headers
        no_provenance = workspace.browser()
        no_provenance.cookies.update(dict(owner.cookies))
        del no_provenance.headers["Origin"]
        refused = await no_provenance.put("/api/settings", json={"auditPollIntervalMs": 5000})
        assert refused.status_code == 403
        referer = await no_provenance.put(
            "/api/settings",
            json={"auditPollIntervalMs": 5000},
            headers={"Referer": f"{ORIGIN}/settings"},
        )
        assert referer.status_code == 200
        settings = (await owner.get("/api/settings")).json()
        assert settings["settings"]["auditPollIntervalMs"] == 5000

    async def test_public_url_pins_the_origin_even_behind_a_proxy(
        self, workspace_factory: WorkspaceFactory
    ):
        public = "https://monitor.example.com"
        async with workspace_factory(
            claim=False, AUTH_PUBLIC_URL=public, TRUST_PROXY=True
        ) as space:
            client = space.browser(Origin=public)
            client.base_url = public
            await client.post(
                "/api/auth/register",
                json={"email": "o@example.com", "name": "O", "password": PASSWORD},
            )
            forged = await client.put(
                "/api/settings",
                json={"auditPollIntervalMs": 5000},
                headers={"Origin": "https://evil.example", "X-Forwarded-Host": "evil.example"},
            )
            assert forged.status_code == 403
            assert (
                await client.put("/api/settings", json={"auditPollIntervalMs": 5000})
            ).status_code == 200

    async def test_trust_proxy_uses_the_forwarded_address(
        self, workspace_factory: WorkspaceFactory
    ):
        async with workspace_factory(TRUST_PROXY=True) as space:
            await space.owner.client.put(
                "/api/settings",
                json={"auditPollIntervalMs": 5000},
                headers={"X-Forwarded-For": "198.51.100.7"},
            )
            entry = (await space.activity(action="PUT /api/settings"))[0]
            assert entry["sourceIp"] == "198.51.100.7"

    @pytest.mark.parametrize(
        ("trusted", "seen"), [("10.0.0.0/8", "127.0.0.1"), ("127.0.0.0/8", "198.51.100.7")]
    )
    async def test_only_a_peer_in_trusted_proxies_is_believed(
        self, workspace_factory: WorkspaceFactory, trusted: str, seen: str
    ):
        # The test client's own address is 127.0.0.1.
        async with workspace_factory(TRUST_PROXY=True, TRUSTED_PROXIES=trusted) as space:
            await space.owner.client.put(
                "/api/settings",
                json={"auditPollIntervalMs": 5000},
                headers={"X-Forwarded-For": "198.51.100.7"},
            )
            entry = (await space.activity(action="PUT /api/settings"))[0]
            assert entry["sourceIp"] == seen

    async def test_without_trust_proxy_forwarded_headers_are_ignored(self, workspace: Workspace):
        await workspace.owner.client.put(
            "/api/settings",
            json={"auditPollIntervalMs": 5000},
            headers={"X-Forwarded-For": "198.51.100.7"},
        )
        entry = (await workspace.activity(action="PUT /api/settings"))[0]
        assert entry["sourceIp"] == "127.0.0.1"
