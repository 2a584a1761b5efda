"""Resolving anomalies from the Anomalies page over HTTP, with user control on: admins get
Resolve buttons and the panel back with the row resolved; a member sees no button and a
forged POST is refused; resolving twice, or another connection's group, says so.

The browser side (clicking, htmx swapping the panel) is tests/e2e/test_ui_anomalies.py.
"""

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest

from svc_monitor.app import _install_ui
from svc_monitor.web.shell import CONNECTION_COOKIE
from tests.anomaly.test_api import one_group, push_connection
from tests.fixtures.app import RunningApp
from tests.fixtures.licensing import SigningKey
from tests.fixtures.servers import RunningServer
from tests.fixtures.workspace import Workspace, WorkspaceFactory

HTMX = {"HX-Request": "true"}


@dataclass
class Team:
    space: Workspace
    admin: httpx.AsyncClient  # the owner
    member: httpx.AsyncClient
    connection: str
    group: int
    events: list[int]


def row(html: str, attribute: str, value: int) -> str:
    found = re.search(rf'<tr {attribute}="{value}".*?</tr>', html, re.S)
    assert found is not None, f"no row {attribute}={value}"
    return found.group(0)


async def groups(client: httpx.AsyncClient, connection: str) -> list[dict[str, object]]:
    answer = await client.get("/api/anomaly/groups", headers={"X-Connection-Id": connection})
    assert answer.status_code == 200, answer.text
    found: list[dict[str, object]] = answer.json()
    return found


@pytest.fixture
async def team(
    workspace_factory: WorkspaceFactory, signing_key: SigningKey, valkey_server: RunningServer
) -> AsyncIterator[Team]:
    licence = signing_key.mint(tier="pro")
    async with workspace_factory(SVC_OFFLINE_LICENSE=licence) as space:
        _install_ui(space.app)
        admin = space.owner.client
        running = RunningApp(space.app, admin, space.running.settings)
        connection = await push_connection(running)
        await one_group(running, connection, valkey_server)
        member = (await space.join("Mia")).client
        for client in (admin, member):
            client.cookies.set(CONNECTION_COOKIE, connection)
        [group] = await groups(admin, connection)
        answer = await admin.get("/api/anomaly/events", headers={"X-Connection-Id": connection})
        events = [e["id"] for e in answer.json()]
        yield Team(space, admin, member, connection, int(str(group["id"])), events)


async def test_a_member_sees_no_button_and_a_forged_post_is_refused(team: Team):
    page = await team.member.get("/anomalies")
    assert page.status_code == 200, page.text
    assert f'data-group="{team.group}"' in page.text  # they see the group ...
    assert "Resolve</button>" not in page.text  # ... and no way to resolve it
    assert 'data-action="resolve-' not in page.text

    for path in (
        f"/ui/anomalies/groups/{team.group}/resolve",
        f"/ui/anomalies/events/{team.events[0]}/resolve",
    ):
        forged = await team.member.post(path, headers=HTMX)
        assert forged.status_code == 403, forged.text
        assert forged.json()["message"].startswith("Not allowed")
    [group] = await groups(team.member, team.connection)
    assert group["resolved"] is False


async def test_an_admin_resolves_a_group_and_its_events(team: Team):
    page = await team.admin.get("/anomalies")
    shown = row(page.text, "data-group", team.group)
    assert 'data-state="open"' in shown
    assert 'data-action="resolve-group"' in shown
    assert page.text.count('data-action="resolve-event"') == len(team.events)

    answer = await team.admin.post(f"/ui/anomalies/groups/{team.group}/resolve", headers=HTMX)
    assert answer.status_code == 200, answer.text
    panel = answer.text
    assert panel.startswith('<div id="anomaly-panel">')  # the panel alone, swapped in place
    assert f"Group {team.group} resolved, with its events." in panel
    shown = row(panel, "data-group", team.group)
    assert 'data-state="resolved"' in shown
    assert re.search(r"resolved <time datetime=\"[^\"]+\"", shown)  # with when
    assert "data-action=" not in shown  # the button is gone
    for event in team.events:
        assert 'data-state="resolved"' in row(panel, "data-event", event)
    assert 'data-action="resolve-' not in panel
    [group] = await groups(team.admin, team.connection)
    assert group["resolved"] is True

    # Again (a second tab, a colleague): a message, not an error page, nothing changed.
    again = await team.admin.post(f"/ui/anomalies/groups/{team.group}/resolve", headers=HTMX)
    assert again.status_code == 200, again.text
    assert f"Group {team.group} was already resolved; nothing changed." in again.text
    [after] = await groups(team.admin, team.connection)
    assert after["resolvedAt"] == group["resolvedAt"]


async def test_an_admin_resolves_one_event(team: Team):
    first, *others = team.events
    answer = await team.admin.post(f"/ui/anomalies/events/{first}/resolve", headers=HTMX)
    assert answer.status_code == 200, answer.text
    assert f"Event {first} resolved." in answer.text
    assert 'data-state="resolved"' in row(answer.text, "data-event", first)
    for event in others:
        assert 'data-action="resolve-event"' in row(answer.text, "data-event", event)
    assert 'data-state="open"' in row(answer.text, "data-group", team.group)

    again = await team.admin.post(f"/ui/anomalies/events/{first}/resolve", headers=HTMX)
    assert f"Event {first} was already resolved; nothing changed." in again.text


async def test_another_connections_group_is_not_found_here(
    team: Team, valkey_server: RunningServer
):
    running = RunningApp(team.space.app, team.admin, team.space.running.settings)
    other = await push_connection(running, port=6393)
    await one_group(running, other, valkey_server)
    [theirs] = await groups(team.admin, other)
    # The page is on the first connection: the other's group is not there.
    answer = await team.admin.post(f"/ui/anomalies/groups/{theirs['id']}/resolve", headers=HTMX)
    assert answer.status_code == 200, answer.text
    assert f"There is no anomaly group {theirs['id']} on this connection." in answer.text
    assert (await groups(team.admin, other))[0]["resolved"] is False
    missing = await team.admin.post("/ui/anomalies/events/999999/resolve", headers=HTMX)
    assert "There is no anomaly event 999999 on this connection." in missing.text


async def test_a_post_from_elsewhere_is_refused(team: Team):
    """Without htmx's header (a form on another site): the CSRF guard refuses it."""
    refused = await team.admin.post(f"/ui/anomalies/groups/{team.group}/resolve")
    assert refused.status_code == 403
    assert (await groups(team.admin, team.connection))[0]["resolved"] is False


async def test_show_resolved_off_hides_resolved_rows(team: Team):
    await team.admin.post(f"/ui/anomalies/events/{team.events[0]}/resolve", headers=HTMX)
    everything = await team.admin.get("/anomalies")
    assert f'data-event="{team.events[0]}"' in everything.text
    assert re.search(r'name="resolved" value="show"[^>]* checked', everything.text)
    open_only = await team.admin.get("/anomalies", params={"resolved": "hide"})
    assert f'data-event="{team.events[0]}"' not in open_only.text
    assert f'data-group="{team.group}"' in open_only.text  # still open
    assert not re.search(r'name="resolved" value="show"[^>]* checked', open_only.text)
    # A resolve from the filtered page keeps the filter: the resolved group leaves the list.
    answer = await team.admin.post(
        f"/ui/anomalies/groups/{team.group}/resolve", headers=HTMX, data={"resolved": "hide"}
    )
    assert f'data-group="{team.group}"' not in answer.text
    assert "No open anomalies on this connection." in answer.text
