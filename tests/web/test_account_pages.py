"""The sign-in, claim, invitation, team, activity and token pages over HTTP: what each role
is shown and refused, and the hostile inputs a browser could be made to send."""

from collections.abc import AsyncIterator

import pytest

from svc_monitor.app import _install_ui
from tests.fixtures.workspace import PASSWORD, Workspace, WorkspaceFactory

HTML = {"Accept": "text/html"}
HTMX = {"HX-Request": "true"}


@pytest.fixture
async def space(workspace_factory: WorkspaceFactory) -> AsyncIterator[Workspace]:
    async with workspace_factory() as opened:
        _install_ui(opened.app)
        yield opened


class TestSignInPages:
    async def test_a_fresh_install_opens_on_the_claim_page(
        self, workspace_factory: WorkspaceFactory
    ):
        async with workspace_factory(claim=False) as empty:
            _install_ui(empty.app)
            browser = empty.browser()
            first = await browser.get("/slowlog", headers=HTML)
            assert (first.status_code, first.headers["location"]) == (303, "/register")
            assert (await browser.get("/login", headers=HTML)).headers["location"] == "/register"
            page = await browser.get("/register", headers=HTML)
            assert page.status_code == 200
            assert "The first account becomes the workspace owner" in page.text

    async def test_the_claim_page_closes_once_claimed(self, space: Workspace):
        anonymous = space.browser()
        assert (await anonymous.get("/register")).headers["location"] == "/login"
        refused = await anonymous.post(
            "/ui/account/register",
            content=f"name=Eve&email=eve%40example.com&password={PASSWORD}",
            headers=HTMX,
        )
        assert "Registration is closed" in refused.text
        assert "set-cookie" not in refused.headers

    async def test_sign_in_goes_back_to_the_page_asked_for_on_this_site_only(
        self, space: Workspace
    ):
        browser = space.browser()
        asked = await browser.get("/latency?range=1h", headers=HTML)
        assert asked.headers["location"] == "/login?next=/latency%3Frange%3D1h"
        for target, landing in (
            ("/latency?range=1h", "/latency?range=1h"),
            ("//evil.example/x", "/"),
            ("https://evil.example", "/"),
            ("/\\evil.example", "/"),
        ):
            client = space.browser()
            body = f"email=owner%40example.com&password={PASSWORD.replace(' ', '+')}"
            body += "&next=" + target.replace("/", "%2F").replace("?", "%3F").replace("=", "%3D")
            signed = await client.post("/ui/account/login", content=body, headers=HTMX)
            assert signed.headers.get("hx-redirect") == landing, target
            assert "svc_session=" in signed.headers["set-cookie"]

    async def test_a_wrong_password_shows_the_form_again_without_a_session(self, space: Workspace):
        browser = space.browser()
        answer = await browser.post(
            "/ui/account/login",
            content="email=owner%40example.com&password=wrong-password",
            headers=HTMX,
        )
        assert answer.status_code == 200
        assert "Invalid email or password" in answer.text
        assert "set-cookie" not in answer.headers
        assert (await browser.get("/api/auth/me")).json()["signedIn"] is False

    async def test_ui_sign_in_without_htmx_is_refused(self, space: Workspace):
        forged = await space.browser().post(
            "/ui/account/login", content=f"email=owner%40example.com&password={PASSWORD}"
        )
        assert forged.status_code == 403

    async def test_signing_out_ends_the_session_and_is_recorded_once(self, space: Workspace):
        owner = space.owner.client
        before = len(await space.activity(action="auth.logout"))
        cookie = owner.cookies.get("svc_session")
        out = await owner.post("/ui/account/logout", headers=HTMX)
        assert out.headers["hx-redirect"] == "/login"
        replay = space.browser()
        replay.cookies.set("svc_session", cookie or "")
        assert (await replay.get("/api/connections")).status_code == 401
        again = await space.sign_in("owner@example.com")
        space.owner.client = again
        assert len(await space.activity(action="auth.logout")) == before + 1
        assert await space.activity(action="POST /ui/account/logout") == []


class TestInvitationPage:
    async def test_the_page_shows_the_offer_without_using_the_link(self, space: Workspace):
        token = await space.invite("ivy@example.com", "admin")
        browser = space.browser()
        for _ in range(2):
            page = await browser.get(f"/invite/{token}", headers=HTML)
            assert page.status_code == 200
            assert page.headers["referrer-policy"] == "no-referrer"
            assert "ivy@example.com" in page.text
        accepted = await browser.post(
            "/ui/account/accept",
            content=f"token={token}&name=Ivy&password={PASSWORD}",
            headers=HTMX,
        )
        assert accepted.headers["hx-redirect"] == "/"
        me = (await browser.get("/api/auth/me")).json()
        assert (me["name"], me["role"]) == ("Ivy", "admin")
        used = await space.browser().get(f"/invite/{token}", headers=HTML)
        assert used.status_code == 404
        assert used.headers["referrer-policy"] == "no-referrer"
        assert "not valid" in used.text


class TestTeamPage:
    async def test_members_see_names_and_roles_but_no_emails_or_actions(self, space: Workspace):
        mia = await space.join("Mia")
        page = await mia.client.get("/team", headers=HTML)
        assert page.status_code == 200
        assert "Olive Owner" in page.text
        assert "owner@example.com" not in page.text
        assert "data-invite-form" not in page.text
        admin_page = await space.owner.client.get("/team", headers=HTML)
        assert "mia@example.com" in admin_page.text

    async def test_a_members_team_actions_are_refused_and_change_nothing(self, space: Workspace):
        mia = await space.join("Mia")
        ada = await space.join("Ada", role="admin")
        for path, body in (
            ("/ui/team/invitations", "email=x%40example.com&role=admin"),
            (f"/ui/team/members/{ada.id}/role", "role=member"),
            (f"/ui/team/members/{ada.id}/remove", ""),
            ("/ui/team/transfer", f"memberId={mia.id}"),
        ):
            refused = await mia.client.post(path, content=body, headers=HTMX)
            assert refused.status_code == 403, path
        members = (await space.owner.client.get("/api/workspace/members")).json()
        assert {m["name"]: m["role"] for m in members} == {
            "Olive Owner": "owner",
            "Mia": "member",
            "Ada": "admin",
        }
        assert (await space.owner.client.get("/api/workspace/invitations")).json()[0][
            "email"
        ] == "ada@example.com"

    async def test_an_admin_invites_and_the_link_is_shown_once(self, space: Workspace):
        ada = await space.join("Ada", role="admin")
        made = await ada.client.post(
            "/ui/team/invitations", content="email=zed%40example.com&role=member", headers=HTMX
        )
        assert "/invite/" in made.text
        listed = await ada.client.get("/team", headers=HTML)
        assert "zed@example.com" in listed.text
        assert "/invite/" not in listed.text

    async def test_the_owner_hands_over_ownership_from_the_page(self, space: Workspace):
        ada = await space.join("Ada", role="admin")
        moved = await space.owner.client.post(
            "/ui/team/transfer", content=f"memberId={ada.id}", headers=HTMX
        )
        assert (moved.status_code, moved.headers["hx-refresh"]) == (204, "true")
        roles = {
            m["name"]: m["role"] for m in (await ada.client.get("/api/workspace/members")).json()
        }
        assert roles == {"Olive Owner": "admin", "Ada": "owner"}
        entry = (await space.activity(action="POST /ui/team/transfer"))[0]
        assert entry["objectId"] == ada.id
        page = await space.owner.client.get("/team", headers=HTML)
        assert 'data-action="transfer"' not in page.text  # an admin now

    async def test_names_from_users_are_shown_as_text(self, space: Workspace):
        await space.join("<script>alert(1)</script>", email="x@example.com")
        for path in ("/team", "/activity"):
            page = await space.owner.client.get(path, headers=HTML)
            assert "<script>alert(1)</script>" not in page.text, path
            assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text, path


class TestActivityPage:
    async def test_members_are_shown_a_refusal_page(self, space: Workspace):
        mia = await space.join("Mia")
        page = await mia.client.get("/activity", headers=HTML)
        assert page.status_code == 403
        assert page.headers["content-type"].startswith("text/html")
        assert "needs the admin role" in page.text
        dashboard = await mia.client.get("/settings", headers=HTML)
        assert 'data-nav="activity"' not in dashboard.text
        assert 'data-nav="team"' in dashboard.text

    async def test_filters_narrow_the_entries(self, space: Workspace):
        await space.join("Mia")
        page = await space.owner.client.get(
            "/activity", params={"action": "auth.login", "actor": "Mia"}, headers=HTML
        )
        assert page.text.count('data-action="auth.login"') == 1
        assert "via invitation" in page.text


class TestWithUserControlOff:
    async def test_there_is_no_sign_in_team_or_activity(self, workspace_factory: WorkspaceFactory):
        async with workspace_factory(claim=False, WORKSPACE_DISABLED=True) as open_:
            _install_ui(open_.app)
            anyone = open_.browser()
            for path in ("/login", "/register", "/team", "/activity", "/invite/x"):
                answer = await anyone.get(path, headers=HTML)
                assert (answer.status_code, answer.headers.get("location")) == (303, "/"), path
            page = await anyone.get("/settings", headers=HTML)
            assert 'data-nav="team"' not in page.text
            assert "data-account" not in page.text
            assert 'id="api-tokens"' not in page.text
