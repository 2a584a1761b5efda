"""Claiming the workspace, signing in and out, and what the session cookie promises."""

import asyncio
import time

from argon2 import extract_parameters

from svc_monitor.auth.store import users
from tests.fixtures.licensing import FakeClock
from tests.fixtures.workspace import PASSWORD, Workspace, WorkspaceFactory

CREDENTIALS = {"email": "owner@example.com", "password": PASSWORD}
HTML = {"Accept": "text/html,application/xhtml+xml"}  # what a browser sends for a page


class TestClaim:
    async def test_first_account_owns_the_workspace_then_registration_closes(
        self, workspace_factory: WorkspaceFactory
    ):
        async with workspace_factory(claim=False) as space:
            visitor = space.browser()
            assert (await visitor.get("/api/auth/me")).json()["workspaceEmpty"] is True
            page = await visitor.get("/", headers=HTML, follow_redirects=False)
            assert page.status_code == 303
            assert page.headers["location"] == "/register"

            claimed = await visitor.post(
                "/api/auth/register",
                json={"email": "First@Example.com", "name": "First", "password": PASSWORD},
            )
            assert claimed.status_code == 201, claimed.text
            assert claimed.json()["role"] == "owner"
            assert claimed.json()["email"] == "first@example.com"
            assert (await visitor.get("/api/connections")).status_code == 200  # signed in

            late = space.browser()
            second = await late.post(
                "/api/auth/register",
                json={"email": "second@example.com", "name": "Second", "password": PASSWORD},
            )
            assert second.status_code == 403
            assert "Registration is closed" in second.json()["message"]
            page = await late.get("/", headers=HTML, follow_redirects=False)
            assert page.headers["location"] == "/login"

    async def test_two_claims_at_once_make_one_owner(self, workspace_factory: WorkspaceFactory):
        async with workspace_factory(claim=False) as space:
            answers = await asyncio.gather(
                *(
                    space.browser().post(
                        "/api/auth/register",
                        json={"email": f"u{i}@example.com", "name": f"U{i}", "password": PASSWORD},
                    )
                    for i in range(4)
                )
            )
            assert sorted(a.status_code for a in answers) == [201, 403, 403, 403]

    async def test_bad_registration_names_the_field(self, workspace_factory: WorkspaceFactory):
        async with workspace_factory(claim=False) as space:
            client = space.browser()
            for body, field in (
                ({"email": "not-an-email", "name": "A", "password": PASSWORD}, "email"),
                ({"email": "a@example.com", "name": "A", "password": "short"}, "password"),
                ({"email": "a@example.com", "name": "  ", "password": PASSWORD}, "name"),
                ({"email": "a@example.com", "name": "A", "password": "x" * 300}, "password"),
            ):
                response = await client.post("/api/auth/register", json=body)
                assert response.status_code == 422, response.text
                assert field in response.json()["fields"]
            assert (await client.get("/api/auth/me")).json()["workspaceEmpty"] is True


class TestSignIn:
    async def test_sign_in_out_and_the_cookie_after(self, workspace: Workspace):
        client = await workspace.sign_in("owner@example.com")
        assert (await client.get("/api/connections")).status_code == 200
        cookie = dict(client.cookies)
        out = await client.post("/api/auth/logout")
        assert out.status_code == 204
        assert "Max-Age=0" in out.headers["set-cookie"]

        replay = workspace.browser()
        replay.cookies.update(cookie)  # a copy taken before sign-out
        response = await replay.get("/api/connections")
        assert response.status_code == 401
        assert response.json()["message"] == "Sign in to use svc-monitor"

    async def test_unknown_email_and_wrong_password_look_the_same(self, workspace: Workspace):
        client = workspace.browser()

        async def attempt(email: str) -> tuple[int, dict[str, object], float]:
            started = time.perf_counter()
            response = await client.post(
                "/api/auth/login", json={"email": email, "password": "wrong password!"}
            )
            return response.status_code, response.json(), time.perf_counter() - started

        unknown = [await attempt("nobody@example.com") for _ in range(3)]
        wrong = [await attempt("owner@example.com") for _ in range(3)]
        assert {(s, str(b)) for s, b, _ in unknown} == {(s, str(b)) for s, b, _ in wrong}
        assert unknown[0][0] == 401
        assert unknown[0][1]["message"] == "Invalid email or password"
        # Both verify an argon2 hash: the medians are within a factor of two.
        slow_unknown = sorted(t for *_, t in unknown)[1]
        slow_wrong = sorted(t for *_, t in wrong)[1]
        assert 0.5 < slow_unknown / slow_wrong < 2.0

    async def test_failed_attempts_are_throttled_per_account(
        self, workspace_factory: WorkspaceFactory
    ):
        clock = FakeClock()
        async with workspace_factory(clock=clock) as space:
            for i in range(10):  # each from another address: the account limit still applies
                guesser = space.browser(**{"X-Forwarded-For": f"10.0.0.{i}"})
                response = await guesser.post(
                    "/api/auth/login", json={"email": "owner@example.com", "password": f"guess{i}"}
                )
                assert response.status_code == 401
            refused = await space.browser().post("/api/auth/login", json=CREDENTIALS)
            assert refused.status_code == 429
            assert int(refused.headers["Retry-After"]) > 0

            clock.advance(seconds=15 * 60 + 1)  # the window passes: the user gets back in
            again = await space.browser().post("/api/auth/login", json=CREDENTIALS)
            assert again.status_code == 200

    async def test_failed_attempts_are_throttled_per_address(
        self, workspace_factory: WorkspaceFactory
    ):
        async with workspace_factory(TRUST_PROXY=True) as space:
            client = space.browser(**{"X-Forwarded-For": "203.0.113.9"})
            for i in range(30):
                response = await client.post(
                    "/api/auth/login", json={"email": f"user{i}@example.com", "password": "nope"}
                )
                assert response.status_code == 401
            # A forged first entry does not make a new address: the proxy's last one counts.
            forged = space.browser(**{"X-Forwarded-For": "1.2.3.4, 203.0.113.9"})
            response = await forged.post("/api/auth/login", json=CREDENTIALS)
            assert response.status_code == 429

    async def test_password_is_stored_as_argon2id_with_strong_parameters(
        self, workspace: Workspace
    ):
        db = workspace.running.services.db
        row = await db.fetch_one(users.select().where(users.c.email == "owner@example.com"))
        assert row is not None
        stored = row.password_hash
        assert PASSWORD not in stored
        parameters = extract_parameters(stored)
        assert parameters.type.name == "ID"
        assert parameters.memory_cost >= 19 * 1024
        assert parameters.time_cost >= 2

    async def test_a_megabyte_password_is_refused_without_hashing(self, workspace: Workspace):
        client = workspace.browser()
        started = time.perf_counter()
        response = await client.post(
            "/api/auth/login", json={"email": "owner@example.com", "password": "x" * 1_000_000}
        )
        assert response.status_code == 422
        assert time.perf_counter() - started < 1.0


class TestCookie:
    async def test_cookie_attributes(self, workspace_factory: WorkspaceFactory):
        async with workspace_factory(claim=False) as space:
            response = await space.browser().post(
                "/api/auth/register",
                json={"email": "a@example.com", "name": "A", "password": PASSWORD},
            )
            cookie = response.headers["set-cookie"]
            assert cookie.startswith("svc_session=")
            assert "HttpOnly" in cookie
            assert "SameSite=Lax" in cookie
            assert "Path=/" in cookie
            assert "Secure" not in cookie  # plain http: a Secure cookie would never come back

    async def test_https_public_url_makes_it_secure(self, workspace_factory: WorkspaceFactory):
        public = "https://monitor.example.com"
        async with workspace_factory(claim=False, AUTH_PUBLIC_URL=public) as space:
            client = space.browser(Origin=public)
            response = await client.post(
                "/api/auth/register",
                json={"email": "a@example.com", "name": "A", "password": PASSWORD},
            )
            assert response.status_code == 201, response.text
            cookie = response.headers["set-cookie"]
            assert cookie.startswith("__Host-svc_session=")
            assert "; Secure" in cookie
            assert "Domain" not in cookie

    async def test_tampered_cookies_are_nobody(self, workspace: Workspace):
        client = await workspace.sign_in("owner@example.com")
        value = client.cookies["svc_session"]
        payload, _, signature = value.rpartition(".")
        forged_values = [
            value[:-2],  # truncated signature
            _edited(payload) + "." + signature,  # edited payload
            "",
            "a.b.c.d",
            "x" * 10_000,
            "\u00e9t\u00e9",
        ]
        for forged in forged_values:
            visitor = workspace.browser()
            raw = f"svc_session={forged}".encode("latin-1")  # sent as the bytes a client sent
            response = await visitor.get("/api/workspace/members", headers={b"Cookie": raw})
            assert response.status_code == 401, forged[:40]
        entries = await workspace.activity()
        assert [e["action"] for e in entries] == ["auth.login", "auth.login"]

    async def test_another_installs_cookie_is_refused(self, workspace_factory: WorkspaceFactory):
        async with (
            workspace_factory(AUTH_SECRET="a" * 32) as first,
            workspace_factory(AUTH_SECRET="b" * 32) as second,
        ):
            stolen = first.owner.client.cookies["svc_session"]
            visitor = second.browser()
            visitor.cookies.set("svc_session", stolen)
            assert (await visitor.get("/api/connections")).status_code == 401

    async def test_cookie_before_sign_in_is_not_promoted(self, workspace: Workspace):
        client = workspace.browser()
        planted = {"Cookie": "svc_session=planted-by-an-attacker"}
        response = await client.post("/api/auth/login", json=CREDENTIALS, headers=planted)
        assert response.status_code == 200
        issued = response.headers["set-cookie"].split(";")[0].removeprefix("svc_session=")
        assert issued not in ("", "planted-by-an-attacker")
        assert (await client.get("/api/connections")).status_code == 200

    async def test_sessions_end_after_a_week(self, workspace_factory: WorkspaceFactory):
        clock = FakeClock()
        async with workspace_factory(clock=clock) as space:
            client = space.owner.client
            clock.advance(days=6, hours=23)
            assert (await client.get("/api/connections")).status_code == 200
            clock.advance(hours=2)
            assert (await client.get("/api/connections")).status_code == 401


class TestOff:
    async def test_workspace_disabled_opens_everything(self, workspace_factory: WorkspaceFactory):
        async with workspace_factory(claim=False, WORKSPACE_DISABLED=True) as space:
            client = space.browser()
            assert (await client.get("/api/metrics/config")).status_code != 401
            created = await client.post(
                "/api/connections", json={"name": "x", "host": "127.0.0.1", "port": 1}
            )
            assert created.status_code in (201, 400, 422), created.text
            assert (await client.get("/api/auth/me")).json() == {
                "workspaceEnabled": False,
                "signedIn": False,
                "workspaceEmpty": False,
                "id": None,
                "email": None,
                "name": None,
                "role": None,
            }
            assert (await client.get("/api/workspace/members")).status_code == 404
            login = await client.post("/api/auth/login", json=CREDENTIALS)
            assert login.status_code == 404
            page = await client.get("/", headers=HTML, follow_redirects=False)
            assert page.status_code != 303


def _edited(payload: str) -> str:
    """The payload with one character changed, whatever it holds (replacing a given letter
    would leave a payload without it intact, and the cookie valid)."""
    at = len(payload) // 2
    other = "A" if payload[at] != "A" else "B"
    return payload[:at] + other + payload[at + 1 :]
