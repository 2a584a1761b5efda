"""Third-party sign-in through the broker: who gets in, what is refused, and when the
routes exist at all.

The flows run against the app served over real HTTP and a broker of our own
(tests/fixtures/broker.py) that signs real assertions; each browser is an httpx client
with its own cookie jar.
"""

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI
from pydantic import ValidationError

from svc_monitor.app import create_app
from svc_monitor.auth.broker.service import (
    BrokerState,
    BrokerView,
    ProviderLink,
    broker_error_message,
)
from svc_monitor.config import Settings, describe_validation_error
from svc_monitor.web.ui import build_templates
from tests.fixtures.app import LOOPBACK_NOWHERE, free_port, fresh_data_dir, running_app, serve_app
from tests.fixtures.broker import (
    Identity,
    SignInBroker,
    Tamper,
    broker_answer,
    public_pem_of,
    sign_in_through,
)
from tests.fixtures.licensing import FakeClock
from tests.fixtures.servers import RunningServer
from tests.fixtures.workspace import PASSWORD, workspace_settings

ROUTES = ("/api/auth/broker/github/start", "/api/auth/broker/callback")


@dataclass
class Served:
    """The app over real HTTP, and the browsers the test opened on it."""

    app: FastAPI
    url: str
    owner: httpx.AsyncClient | None = None
    _clients: list[httpx.AsyncClient] = field(default_factory=list)

    def browser(self) -> httpx.AsyncClient:
        client = httpx.AsyncClient(headers={"Origin": self.url}, timeout=20)
        self._clients.append(client)
        return client

    async def claim(self) -> httpx.AsyncClient:
        owner = self.browser()
        body = {"email": "owner@example.com", "name": "Olive Owner", "password": PASSWORD}
        response = await owner.post(f"{self.url}/api/auth/register", json=body)
        assert response.status_code == 201, response.text
        self.owner = owner
        return owner

    async def invite(self, email: str, role: str = "member") -> str:
        assert self.owner is not None
        response = await self.owner.post(
            f"{self.url}/api/workspace/invitations", json={"email": email, "role": role}
        )
        assert response.status_code == 201, response.text
        link: str = response.json()["link"]
        return link.rsplit("/", 1)[1]

    async def me(self, client: httpx.AsyncClient) -> dict[str, Any]:
        response = await client.get(f"{self.url}/api/auth/me")
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    async def members(self) -> list[dict[str, Any]]:
        assert self.owner is not None
        response = await self.owner.get(f"{self.url}/api/workspace/members")
        assert response.status_code == 200, response.text
        found: list[dict[str, Any]] = response.json()
        return found

    async def invitations(self) -> list[dict[str, Any]]:
        assert self.owner is not None
        response = await self.owner.get(f"{self.url}/api/workspace/invitations")
        found: list[dict[str, Any]] = response.json()
        return found

    async def activity(self, client: httpx.AsyncClient | None = None) -> list[dict[str, Any]]:
        reader = client or self.owner
        assert reader is not None
        response = await reader.get(f"{self.url}/api/workspace/activity")
        assert response.status_code == 200, response.text
        entries: list[dict[str, Any]] = response.json()["entries"]
        return entries


@contextlib.asynccontextmanager
async def served(
    server: RunningServer,
    broker: SignInBroker,
    *,
    clock: Callable[[], float] = time.time,
    **overrides: Any,
) -> AsyncIterator[Served]:
    settings = workspace_settings(
        server,
        AUTH_BROKER_URL=broker.url,
        AUTH_BROKER_PUBLIC_KEY=broker.public_pem,
        **overrides,
    )
    app = create_app(settings, clock=clock)
    async with serve_app(app) as url:
        space = Served(app, url)
        try:
            yield space
        finally:
            for client in space._clients:
                await client.aclose()


def query_of(location: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def assert_refused(answer: httpx.Response, code: str) -> None:
    assert answer.status_code == 303, answer.text
    location = answer.headers["location"]
    assert urlsplit(location).path == "/login", location
    assert query_of(location)["error"] == code, location


class TestSignIn:
    async def test_first_person_through_the_broker_owns_an_empty_workspace(
        self, valkey_server: RunningServer, broker: SignInBroker
    ):
        async with served(valkey_server, broker) as space:
            broker.next_identity = Identity("Robin@Example.com", name="Robin Broker")
            visitor = space.browser()
            answer = await sign_in_through(visitor, space.url, "github")
            assert answer.status_code == 303
            assert answer.headers["location"] == "/"

            me = await space.me(visitor)
            assert me["signedIn"] is True
            assert (me["email"], me["name"], me["role"]) == (
                "robin@example.com",
                "Robin Broker",
                "owner",
            )
            entries = await space.activity(visitor)
            logins = [e for e in entries if e["action"] == "auth.login"]
            assert len(logins) == 1
            assert logins[0]["details"]["method"] == "broker:github"
            assert logins[0]["actorName"] == "Robin Broker"
            # The broker was told where to come back, and about which provider.
            assert broker.starts[0]["provider"] == "github"
            assert broker.starts[0]["return_to"] == f"{space.url}/api/auth/broker/callback"

    async def test_existing_member_signs_in_through_the_broker(
        self, valkey_server: RunningServer, broker: SignInBroker
    ):
        async with served(valkey_server, broker) as space:
            await space.claim()
            token = await space.invite("mia@example.com", "member")
            mia = space.browser()
            joined = await mia.post(
                f"{space.url}/api/auth/accept-invite",
                json={"token": token, "name": "Mia", "password": PASSWORD},
            )
            assert joined.status_code == 201

            broker.next_identity = Identity("MIA@example.com", name="Someone Else")
            laptop = space.browser()
            answer = await sign_in_through(laptop, space.url, "google")
            assert answer.headers["location"] == "/"
            me = await space.me(laptop)
            assert (me["id"], me["name"], me["role"]) == (joined.json()["id"], "Mia", "member")
            assert len(await space.members()) == 2
            methods = [
                e["details"]["method"]
                for e in await space.activity()
                if e["action"] == "auth.login" and e["actorName"] == "Mia"
            ]
            assert methods == ["broker:google", "invitation"]

    async def test_invitee_joins_with_the_invitations_role_and_no_password(
        self, valkey_server: RunningServer, broker: SignInBroker
    ):
        async with served(valkey_server, broker) as space:
            await space.claim()
            token = await space.invite("ada@example.com", "admin")
            broker.next_identity = Identity("ada@example.com", name="Ada Lovelace")
            ada = space.browser()
            answer = await sign_in_through(ada, space.url, "github", intent="invite", invite=token)
            assert answer.headers["location"] == "/"
            me = await space.me(ada)
            assert (me["email"], me["role"]) == ("ada@example.com", "admin")
            assert [i["status"] for i in await space.invitations()] == ["accepted"]
            # The link is spent, and there is no password to sign in with.
            preview = await ada.get(f"{space.url}/api/auth/invitations/{token}")
            assert preview.status_code == 404
            login = await space.browser().post(
                f"{space.url}/api/auth/login", json={"email": "ada@example.com", "password": ""}
            )
            assert login.status_code in (401, 422)

            again = space.browser()
            second = await sign_in_through(again, space.url, "github")
            assert second.headers["location"] == "/"
            assert (await space.me(again))["id"] == me["id"]
            assert len(await space.members()) == 2

    async def test_pending_invitation_is_found_by_email_without_the_link(
        self, valkey_server: RunningServer, broker: SignInBroker
    ):
        async with served(valkey_server, broker) as space:
            await space.claim()
            await space.invite("nia@example.com", "member")
            broker.next_identity = Identity("nia@example.com", name="Nia")
            nia = space.browser()
            answer = await sign_in_through(nia, space.url, "google", intent="login")
            assert answer.headers["location"] == "/"
            assert (await space.me(nia))["role"] == "member"
            assert [i["status"] for i in await space.invitations()] == ["accepted"]

    async def test_an_ed25519_broker_key_verifies_too(
        self, valkey_server: RunningServer, ed25519_broker: SignInBroker
    ):
        assert ed25519_broker.algorithm == "EdDSA"
        async with served(valkey_server, ed25519_broker) as space:
            ed25519_broker.next_identity = Identity("eve@example.com")
            eve = space.browser()
            answer = await sign_in_through(eve, space.url, "github")
            assert answer.headers["location"] == "/"
            assert (await space.me(eve))["role"] == "owner"

    async def test_the_state_cookie_is_http_only_lax_on_the_broker_path(
        self, valkey_server: RunningServer, broker: SignInBroker
    ):
        async with served(valkey_server, broker) as space:
            start = await space.browser().get(f"{space.url}/api/auth/broker/github/start")
            assert start.status_code == 303
            cookie = start.headers["set-cookie"]
            assert cookie.startswith("svc_broker_state=")
            for attribute in ("HttpOnly", "SameSite=Lax", "Path=/api/auth/broker", "Max-Age=600"):
                assert attribute in cookie
            target = urlsplit(start.headers["location"])
            assert f"{target.scheme}://{target.netloc}{target.path}" == f"{broker.url}/start"
            query = query_of(start.headers["location"])
            assert query["provider"] == "github"
            assert len(query["state"]) >= 43  # 256 random bits


class TestRefusals:
    async def test_a_stranger_on_a_claimed_workspace_is_refused_and_nothing_is_made(
        self, valkey_server: RunningServer, broker: SignInBroker
    ):
        async with served(valkey_server, broker) as space:
            await space.claim()
            before = await space.activity()
            broker.next_identity = Identity("stranger@example.com")
            stranger = space.browser()
            answer = await sign_in_through(stranger, space.url, "github")
            assert_refused(answer, "broker_no_account")
            query = query_of(answer.headers["location"])
            assert broker_error_message(query["error"], query.get("email")) == (
                "No member of this workspace has the email stranger@example.com; ask an admin "
                "for an invitation"
            )
            assert "svc_session" not in answer.headers.get("set-cookie", "")
            assert (await space.me(stranger))["signedIn"] is False
            assert len(await space.members()) == 1
            assert await space.activity() == before

    @pytest.mark.parametrize(
        ("tamper", "code"),
        [pytest.param(t, "broker_invalid", id=t.value) for t in Tamper if t is not Tamper.NONE],
    )
    async def test_a_hostile_assertion_is_refused(
        self, valkey_server: RunningServer, broker: SignInBroker, tamper: Tamper, code: str
    ):
        async with served(valkey_server, broker) as space:
            broker.next_identity = Identity("mallory@example.com")
            broker.tamper = tamper
            mallory = space.browser()
            answer = await sign_in_through(mallory, space.url, "github")
            assert_refused(answer, code)
            assert (await space.me(mallory))["signedIn"] is False
            assert (await space.me(mallory))["workspaceEmpty"] is True

    async def test_an_unverified_email_is_refused(
        self, valkey_server: RunningServer, broker: SignInBroker
    ):
        async with served(valkey_server, broker) as space:
            broker.next_identity = Identity("owner@example.com", email_verified=False)
            visitor = space.browser()
            answer = await sign_in_through(visitor, space.url, "github")
            assert_refused(answer, "broker_unverified")
            assert (await space.me(visitor))["workspaceEmpty"] is True

    async def test_a_replayed_callback_is_refused(
        self, valkey_server: RunningServer, broker: SignInBroker
    ):
        async with served(valkey_server, broker) as space:
            await space.claim()
            broker.next_identity = Identity("owner@example.com")
            browser = space.browser()
            callback = await broker_answer(browser, space.url, "github")
            state_cookie = dict(browser.cookies)["svc_broker_state"]
            first = await browser.get(callback)
            assert first.headers["location"] == "/"
            assert "svc_broker_state" not in dict(browser.cookies)  # cleared: one use

            again = await browser.get(callback)
            assert_refused(again, "broker_state")
            # Even with a copy of the state cookie taken before it was used.
            thief = space.browser()
            thief.cookies.set("svc_broker_state", state_cookie, path="/api/auth/broker")
            stolen = await thief.get(callback)
            assert_refused(stolen, "broker_state")
            assert (await space.me(thief))["signedIn"] is False

    async def test_a_callback_opened_in_another_browser_is_refused(
        self, valkey_server: RunningServer, broker: SignInBroker
    ):
        async with served(valkey_server, broker) as space:
            await space.claim()
            broker.next_identity = Identity("owner@example.com")
            callback = await broker_answer(space.browser(), space.url, "github")
            other = space.browser()  # no state cookie: did not start this sign-in
            answer = await other.get(callback)
            assert_refused(answer, "broker_state")
            assert (await space.me(other))["signedIn"] is False

    async def test_a_sign_in_left_for_more_than_ten_minutes_is_refused(
        self, valkey_server: RunningServer, broker: SignInBroker
    ):
        clock = FakeClock()
        async with served(valkey_server, broker, clock=clock) as space:
            await space.claim()
            broker.next_identity = Identity("owner@example.com")
            browser = space.browser()
            callback = await broker_answer(browser, space.url, "github")
            clock.advance(seconds=601)
            assert_refused(await browser.get(callback), "broker_state")

    async def test_an_invitation_for_another_email_is_not_taken(
        self, valkey_server: RunningServer, broker: SignInBroker
    ):
        async with served(valkey_server, broker) as space:
            await space.claim()
            token = await space.invite("ada@example.com", "admin")
            broker.next_identity = Identity("mallory@example.com")
            mallory = space.browser()
            answer = await sign_in_through(mallory, space.url, intent="invite", invite=token)
            assert_refused(answer, "broker_other_email")
            assert [i["status"] for i in await space.invitations()] == ["pending"]
            assert len(await space.members()) == 1

    async def test_cancelling_at_the_provider_comes_back_to_sign_in(
        self, valkey_server: RunningServer, broker: SignInBroker
    ):
        async with served(valkey_server, broker) as space:
            broker.next_identity = None
            visitor = space.browser()
            answer = await sign_in_through(visitor, space.url, "google")
            assert_refused(answer, "broker_cancelled")
            assert (await space.me(visitor))["signedIn"] is False

    async def test_an_unknown_provider_or_bad_invite_token_is_refused(
        self, valkey_server: RunningServer, broker: SignInBroker
    ):
        async with served(valkey_server, broker) as space:
            visitor = space.browser()
            unknown = await visitor.get(f"{space.url}/api/auth/broker/facebook/start")
            assert unknown.status_code == 404
            bad = await visitor.get(
                f"{space.url}/api/auth/broker/github/start",
                params={"intent": "invite", "invite": "<script>"},
            )
            assert bad.status_code == 422
            assert broker.starts == []

    async def test_crafted_error_links_show_no_crafted_text(self):
        assert broker_error_message("broker_no_account", "<b>call 555</b>") == (
            "No member of this workspace has that email address; ask an admin for an invitation"
        )
        assert broker_error_message("something-else") is None
        assert broker_error_message(None) is None


def broker_settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "NODE_ENV": "test",
        "SVC_DATA_DIR": fresh_data_dir(),
        "ENTITLEMENT_URL": LOOPBACK_NOWHERE,
        "RELEASES_URL": LOOPBACK_NOWHERE,
        "WORKSPACE_DISABLED": False,
        "DB_HOST": "127.0.0.1",
        "DB_PORT": 9,  # nothing listens: these tests never reach an instance
        "AUTH_BROKER_URL": "http://127.0.0.1:9",
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


class TestAvailability:
    @pytest.mark.parametrize(
        ("overrides", "state", "reason"),
        [
            pytest.param({"AUTH_BROKER_DISABLED": True}, "hidden", None, id="broker-disabled"),
            pytest.param({"WORKSPACE_DISABLED": True}, "hidden", None, id="workspace-disabled"),
            pytest.param(
                {"NODE_ENV": "production"},
                "unavailable",
                "third-party sign-in needs AUTH_PUBLIC_URL",
                id="production-without-public-url",
            ),
            pytest.param(
                {"AUTH_BROKER_PUBLIC_KEY": None},
                "unavailable",
                "third-party sign-in needs AUTH_BROKER_PUBLIC_KEY",
                id="no-key",
            ),
        ],
    )
    async def test_every_sign_in_route_404s_when_not_available(
        self, broker_pem: str, overrides: dict[str, Any], state: str, reason: str | None
    ):
        settings = broker_settings(**{"AUTH_BROKER_PUBLIC_KEY": broker_pem, **overrides})
        async with running_app(settings) as running:
            for path in ROUTES:
                response = await running.client.get(path, params={"state": "x", "assertion": "y"})
                assert response.status_code == 404, (path, response.text)
            providers = (await running.client.get("/api/auth/broker/providers")).json()
            assert providers["state"] == state
            assert providers["reason"] == reason
            expected = 0 if state == "hidden" else 2
            assert len(providers["providers"]) == expected

    async def test_production_with_a_public_url_sends_the_broker_there(self, broker_pem: str):
        settings = broker_settings(
            NODE_ENV="production",
            AUTH_PUBLIC_URL="https://monitor.example.com",
            AUTH_BROKER_PUBLIC_KEY=broker_pem,
            AUTH_SECRET="s" * 40,
        )
        async with running_app(settings) as running:
            listed = (await running.client.get("/api/auth/broker/providers")).json()
            assert listed == {
                "state": "available",
                "reason": None,
                "providers": [
                    {
                        "id": "github",
                        "name": "GitHub",
                        "startUrl": "/api/auth/broker/github/start?intent=login",
                    },
                    {
                        "id": "google",
                        "name": "Google",
                        "startUrl": "/api/auth/broker/google/start?intent=login",
                    },
                ],
            }
            start = await running.client.get(
                "/api/auth/broker/google/start", headers={"Host": "evil.example"}
            )
            assert start.status_code == 303
            query = query_of(start.headers["location"])
            assert query["return_to"] == "https://monitor.example.com/api/auth/broker/callback"
            cookie = start.headers["set-cookie"]
            assert cookie.startswith("__Secure-svc_broker_state=")
            assert "Secure" in cookie.split("; ")

    async def test_the_providers_list_bakes_in_the_invitation(self, broker_pem: str):
        settings = broker_settings(AUTH_BROKER_PUBLIC_KEY=broker_pem)
        async with running_app(settings) as running:
            listed = await running.client.get(
                "/api/auth/broker/providers", params={"intent": "invite", "invite": "tok_en-1"}
            )
            urls = [p["startUrl"] for p in listed.json()["providers"]]
            assert urls == [
                "/api/auth/broker/github/start?intent=invite&invite=tok_en-1",
                "/api/auth/broker/google/start?intent=invite&invite=tok_en-1",
            ]


@pytest.fixture(scope="module")
def broker_pem() -> str:
    return public_pem_of(rsa.generate_private_key(public_exponent=65537, key_size=2048))


class TestButtons:
    LINKS = (
        ProviderLink("github", "GitHub", "/api/auth/broker/github/start?intent=login"),
        ProviderLink("google", "Google", "/api/auth/broker/google/start?intent=login"),
    )

    def render(self, view: BrokerView) -> str:
        return build_templates().render("account/broker_buttons.html", {"broker": view})

    def test_hidden_shows_nothing(self):
        assert self.render(BrokerView(BrokerState.HIDDEN, None, ())).strip() == ""

    def test_unavailable_shows_disabled_buttons_and_the_reason(self):
        reason = "third-party sign-in needs AUTH_PUBLIC_URL"
        html = self.render(BrokerView(BrokerState.UNAVAILABLE, reason, self.LINKS))
        assert html.count("disabled>Continue with") == 2
        assert "Continue with GitHub" in html
        assert "Continue with Google" in html
        assert f"Unavailable: {reason}." in html
        assert "href" not in html

    def test_available_shows_links_to_start(self):
        html = self.render(BrokerView(BrokerState.AVAILABLE, None, self.LINKS))
        assert 'href="/api/auth/broker/github/start?intent=login"' in html
        assert ">Continue with Google</a>" in html
        assert "disabled" not in html
        assert "<script" not in html
        assert "style=" not in html


@pytest.fixture(scope="module")
def bad_keys() -> dict[str, str]:
    small = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return {
        "garbage": "not a key at all",
        "rsa-1024": public_pem_of(small),
        "private-key": private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode(),
    }


class TestStartup:
    @pytest.mark.parametrize("kind", ["garbage", "rsa-1024", "private-key"])
    def test_a_bad_key_is_named_in_one_line_without_its_value(
        self, bad_keys: dict[str, str], kind: str
    ):
        with pytest.raises(ValidationError) as caught:
            broker_settings(AUTH_BROKER_PUBLIC_KEY=bad_keys[kind])
        line = describe_validation_error(caught.value)
        assert line.startswith("AUTH_BROKER_PUBLIC_KEY: ")
        assert "\n" not in line
        body = bad_keys[kind].splitlines()[1] if kind != "garbage" else bad_keys[kind]
        assert body not in line

    def test_a_key_with_escaped_newlines_is_accepted(self, broker_pem: str):
        settings = broker_settings(AUTH_BROKER_PUBLIC_KEY=broker_pem.replace("\n", "\\n"))
        assert settings.AUTH_BROKER_PUBLIC_KEY is not None

    @pytest.mark.parametrize("kind", ["garbage", "rsa-1024"])
    def test_the_service_refuses_to_start_with_one_line(self, bad_keys: dict[str, str], kind: str):
        env = {k: v for k, v in os.environ.items() if k not in Settings.model_fields}
        env.update(
            PORT=str(free_port()),
            BIND_HOST="127.0.0.1",
            SVC_DATA_DIR=fresh_data_dir(),
            ENTITLEMENT_URL=LOOPBACK_NOWHERE,
            RELEASES_URL=LOOPBACK_NOWHERE,
            AUTH_BROKER_PUBLIC_KEY=bad_keys[kind],
        )
        result = subprocess.run(
            [str(Path(sys.executable).parent / "svc-monitor"), "serve"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 2
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert "AUTH_BROKER_PUBLIC_KEY" in lines[0]
        assert ("1024 bits" if kind == "rsa-1024" else "not a PEM public key") in lines[0]
