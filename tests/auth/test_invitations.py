"""Invitations: one-time links, their states, and accepting them."""

import asyncio
import socket

import pytest

from svc_monitor.auth.store import invitations
from tests.fixtures.licensing import FakeClock
from tests.fixtures.workspace import PASSWORD, Workspace, WorkspaceFactory


def accept_body(token: str, name: str = "Nia") -> dict[str, str]:
    return {"token": token, "name": name, "password": PASSWORD}


class TestInvitations:
    async def test_link_is_shown_once_and_only_its_hash_is_stored(self, workspace: Workspace):
        created = await workspace.owner.client.post(
            "/api/workspace/invitations", json={"email": "Nia@Example.com", "role": "admin"}
        )
        assert created.status_code == 201
        body = created.json()
        assert body["email"] == "nia@example.com"
        assert body["role"] == "admin"
        assert body["status"] == "pending"
        # No AUTH_PUBLIC_URL, and the request's Host (svc.test) is not this host's name:
        # the link names this host, never whatever Host a request carried.
        own = f"http://{socket.gethostname().lower()}:{workspace.running.settings.PORT}"
        assert body["link"].startswith(f"{own}/invite/")
        token = body["link"].rsplit("/", 1)[1]
        assert len(token) >= 43  # 256 random bits

        listed = (await workspace.owner.client.get("/api/workspace/invitations")).json()
        assert [i["link"] for i in listed] == [None]
        rows = await workspace.running.services.db.fetch_all(invitations.select())
        assert all(token not in str(tuple(r)) for r in rows)

    async def test_public_url_makes_the_link(self, workspace_factory: WorkspaceFactory):
        public = "https://monitor.example.com/"
        async with workspace_factory(claim=False, AUTH_PUBLIC_URL=public) as space:
            client = space.browser(Origin="https://monitor.example.com")
            client.base_url = "https://monitor.example.com"  # Secure cookies need https
            await client.post(
                "/api/auth/register",
                json={"email": "o@example.com", "name": "O", "password": PASSWORD},
            )
            created = await client.post(
                "/api/workspace/invitations", json={"email": "n@example.com"}
            )
            assert created.json()["link"].startswith("https://monitor.example.com/invite/")

    async def test_accepting_signs_in_with_the_role(self, workspace: Workspace):
        token = await workspace.invite("nia@example.com", "admin")
        nia = workspace.browser()
        preview = await nia.get(f"/api/auth/invitations/{token}")
        assert preview.json()["email"] == "nia@example.com"
        accepted = await nia.post("/api/auth/accept-invite", json=accept_body(token))
        assert accepted.status_code == 201, accepted.text
        assert accepted.json()["role"] == "admin"
        assert (await nia.get("/api/workspace/activity")).status_code == 200
        logins = await workspace.activity(action="auth.login")
        assert logins[0]["actorName"] == "Nia"
        assert logins[0]["details"] == {"method": "invitation"}
        states = (await workspace.owner.client.get("/api/workspace/invitations")).json()
        assert [s["status"] for s in states] == ["accepted"]
        # and Nia can sign in again with the password she chose
        assert (await workspace.sign_in("nia@example.com")).cookies

    async def test_reused_link_is_refused_and_leaves_no_trace(self, workspace: Workspace):
        token = await workspace.invite("nia@example.com")
        assert (
            await workspace.browser().post("/api/auth/accept-invite", json=accept_body(token))
        ).status_code == 201
        before = await workspace.activity()
        again = await workspace.browser().post(
            "/api/auth/accept-invite", json=accept_body(token, "Mallory")
        )
        assert again.status_code == 404
        assert "not valid" in again.json()["message"]
        assert await workspace.activity() == before
        names = [
            m["name"] for m in (await workspace.owner.client.get("/api/workspace/members")).json()
        ]
        assert names == ["Olive Owner", "Nia"]

    async def test_two_accepts_at_once_make_one_member(self, workspace: Workspace):
        token = await workspace.invite("nia@example.com")
        answers = await asyncio.gather(
            *(
                workspace.browser().post(
                    "/api/auth/accept-invite", json=accept_body(token, f"N{i}")
                )
                for i in range(3)
            )
        )
        assert sorted(a.status_code for a in answers) == [201, 404, 404]

    async def test_altered_token_is_refused(self, workspace: Workspace):
        token = await workspace.invite("nia@example.com")
        altered = token[:-1] + ("A" if token[-1] != "A" else "B")
        response = await workspace.browser().post(
            "/api/auth/accept-invite", json=accept_body(altered)
        )
        assert response.status_code == 404

    async def test_expired_after_seven_days(self, workspace_factory: WorkspaceFactory):
        clock = FakeClock()
        async with workspace_factory(clock=clock) as space:
            token = await space.invite("nia@example.com")
            clock.advance(days=7, seconds=1)
            space.owner.client = await space.sign_in("owner@example.com")  # a week: new session
            before = await space.activity()
            response = await space.browser().post(
                "/api/auth/accept-invite", json=accept_body(token)
            )
            assert response.status_code == 404
            states = (await space.owner.client.get("/api/workspace/invitations")).json()
            assert [s["status"] for s in states] == ["expired"]
            assert await space.activity() == before

            fresh = await space.invite("nia@example.com")  # re-invite: a new, working link
            assert fresh != token
            accepted = await space.browser().post(
                "/api/auth/accept-invite", json=accept_body(fresh)
            )
            assert accepted.status_code == 201

    async def test_revoke_and_reinvite(self, workspace: Workspace):
        first = await workspace.owner.client.post(
            "/api/workspace/invitations", json={"email": "nia@example.com"}
        )
        invitation_id = first.json()["id"]
        revoked = await workspace.owner.client.delete(f"/api/workspace/invitations/{invitation_id}")
        assert revoked.status_code == 200
        assert revoked.json()["status"] == "revoked"
        old_token = first.json()["link"].rsplit("/", 1)[1]
        refused = await workspace.browser().post(
            "/api/auth/accept-invite", json=accept_body(old_token)
        )
        assert refused.status_code == 404
        second = await workspace.invite("nia@example.com")
        states = [
            s["status"]
            for s in (await workspace.owner.client.get("/api/workspace/invitations")).json()
        ]
        assert states == ["pending", "revoked"]
        assert (
            await workspace.browser().post("/api/auth/accept-invite", json=accept_body(second))
        ).status_code == 201

    async def test_reinviting_a_pending_email_retires_the_old_link(self, workspace: Workspace):
        old = await workspace.invite("nia@example.com")
        new = await workspace.invite("nia@example.com")
        assert (
            await workspace.browser().post("/api/auth/accept-invite", json=accept_body(old))
        ).status_code == 404
        assert (
            await workspace.browser().post("/api/auth/accept-invite", json=accept_body(new))
        ).status_code == 201

    async def test_bad_invitations_name_the_field(self, workspace: Workspace):
        owner = workspace.owner.client
        for body, field in (
            ({"email": "nope"}, "email"),
            ({"email": "a@example.com", "role": "owner"}, "role"),
            ({"email": "a@example.com", "role": "superuser"}, "role"),
        ):
            response = await owner.post("/api/workspace/invitations", json=body)
            assert response.status_code == 422, response.text
            assert field in response.json()["fields"]
        member_email = await owner.post(
            "/api/workspace/invitations", json={"email": "owner@example.com"}
        )
        assert member_email.status_code == 409


@pytest.mark.parametrize(
    ("host", "link"),
    [("evil.example", None), ("localhost:3001", "http://localhost:3001/invite/")],
)
async def test_a_forged_host_never_makes_the_link(
    workspace: Workspace, host: str, link: str | None
) -> None:
    """A request naming another host (Host and a matching Origin, as a rebinding page or a
    misrouted proxy would send) gets a link to this host, not to that one; a request that
    names this host by a loopback name keeps it."""
    browser = workspace.browser(Origin=f"http://{host}")
    browser.cookies = workspace.owner.client.cookies
    created = await browser.post(
        "/api/workspace/invitations", json={"email": "eve@example.com"}, headers={"Host": host}
    )
    assert created.status_code == 201, created.text
    if link is None:
        assert host not in created.json()["link"]
    else:
        assert created.json()["link"].startswith(link)
