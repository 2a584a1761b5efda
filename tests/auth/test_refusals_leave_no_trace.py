"""The refusals a hostile caller tries, against one served app (real uvicorn, real sockets), and
the activity log afterwards exactly as it was: a refusal is not an action.

A tampered cookie, an expired invitation, a reused invitation token, a member's CONFIG SET
over the CLI socket, and a socket without a session (or from another site).
"""

import json
import zlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from itsdangerous import URLSafeTimedSerializer
from itsdangerous.encoding import base64_decode, base64_encode
from websockets import InvalidStatus

from svc_monitor.app import create_app
from svc_monitor.auth.sessions import COOKIE_SALT
from tests.fixtures.app import serve_app
from tests.fixtures.licensing import FakeClock
from tests.fixtures.served_team import ServedTeam
from tests.fixtures.servers import RunningServer
from tests.fixtures.workspace import PASSWORD, workspace_settings


@pytest.fixture
async def served(valkey_server: RunningServer) -> AsyncIterator[tuple[ServedTeam, FakeClock]]:
    clock = FakeClock()
    app = create_app(workspace_settings(valkey_server, SVC_UNSAFE_CLI=True), clock=clock)
    async with serve_app(app) as url:
        team = ServedTeam(app, url)
        try:
            await team.claim()
            yield team, clock
        finally:
            await team.aclose()


async def everything_recorded(team: ServedTeam) -> list[dict[str, Any]]:
    assert team.owner is not None
    answer = await team.owner.client.get("/api/workspace/activity", params={"limit": 100})
    assert answer.status_code == 200, answer.text
    entries: list[dict[str, Any]] = answer.json()["entries"]
    return entries


def tampered(cookie: str) -> list[str]:
    """The cookie with its role edited to owner (same signature), signed with another
    secret, with its signature cut, and with one character of its signature changed."""
    compressed, payload, timestamp, signature = cookie.split(".")
    assert compressed == ""  # itsdangerous marks a zlib-compressed payload with a leading "."
    claims = json.loads(zlib.decompress(base64_decode(payload)))
    assert claims["r"] == "member"
    claims["r"] = "owner"
    edited = base64_encode(zlib.compress(json.dumps(claims).encode())).decode()
    elsewhere = URLSafeTimedSerializer("another install's secret " * 2, salt=COOKIE_SALT)
    return [
        f".{edited}.{timestamp}.{signature}",
        str(elsewhere.dumps(claims)),
        f".{payload}.{timestamp}.",
        # The signature's first character: its last carries two padding bits, and a change
        # there alone (A <-> B) decodes to the same signature.
        f".{payload}.{timestamp}.{'B' if signature[0] == 'A' else 'A'}{signature[1:]}",
    ]


async def test_each_refusal_is_refused_and_leaves_no_trace(
    served: tuple[ServedTeam, FakeClock], valkey_server: RunningServer
):
    team, clock = served
    assert team.owner is not None
    mia = await team.join("Mia")
    reused = (
        (
            await team.owner.client.post(
                "/api/workspace/invitations", json={"email": "ivy@example.com", "role": "admin"}
            )
        )
        .json()["link"]
        .rsplit("/", 1)[1]
    )
    accepted = await team.browser().post(
        "/api/auth/accept-invite", json={"token": reused, "name": "Ivy", "password": PASSWORD}
    )
    assert accepted.status_code == 201
    expiring = (
        (
            await team.owner.client.post(
                "/api/workspace/invitations", json={"email": "late@example.com", "role": "admin"}
            )
        )
        .json()["link"]
        .rsplit("/", 1)[1]
    )
    before = await everything_recorded(team)

    # a tampered session cookie is nobody: 401 for a change, whatever the cookie claims
    for cookie in tampered(mia.cookie):
        forged = team.browser()
        forged.cookies.set(team.cookie_name, cookie)
        answer = await forged.put("/api/settings", json={"auditPollIntervalMs": 5000})
        assert answer.status_code == 401, cookie

    # a reused invitation link, and one used after its 7 days
    again = await team.browser().post(
        "/api/auth/accept-invite", json={"token": reused, "name": "Eve", "password": PASSWORD}
    )
    assert again.status_code == 404
    clock.advance(days=7, seconds=1)
    late = await team.browser().post(
        "/api/auth/accept-invite", json={"token": expiring, "name": "Lou", "password": PASSWORD}
    )
    assert late.status_code == 404
    assert "expired" in late.json()["message"]
    clock.advance(days=-7, seconds=-1)

    # a member's CONFIG SET over the CLI socket (SVC_UNSAFE_CLI does not lift it for members)
    with valkey_server.client() as direct:
        policy = direct.config_get("maxmemory-policy")["maxmemory-policy"]
    async with team.cli(mia) as cli:
        refusal = await cli.refusal("CONFIG SET maxmemory-policy allkeys-lru")
    assert refusal.startswith("CONFIG is not allowed for members")
    with valkey_server.client() as direct:
        assert direct.config_get("maxmemory-policy")["maxmemory-policy"] == policy

    # a socket without a session, or from another site, is refused before the handshake
    for person, origin in ((None, None), (mia, "http://evil.example")):
        with pytest.raises(InvalidStatus) as refused:
            async with team.cli(person, origin=origin):
                pass
        assert refused.value.response.status_code == 403

    after = await everything_recorded(team)
    assert after == before
    names = {e["actorName"] for e in after}
    assert not names & {"Eve", "Lou"}
    async with httpx.AsyncClient(base_url=team.url) as anonymous:
        assert (await anonymous.get("/api/workspace/activity")).status_code == 401
