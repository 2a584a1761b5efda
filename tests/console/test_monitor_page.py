"""The MONITOR page, server-rendered: what admins and members see and may do from it."""

import re
from collections.abc import Callable

from tests.console.monitor_helpers import ended, start
from tests.fixtures.app import AppFactory, target_of
from tests.fixtures.servers import RunningServer
from tests.fixtures.workspace import ORIGIN, WorkspaceFactory

HTMX = {"HX-Request": "true", "Origin": ORIGIN}


async def test_an_admin_gets_the_start_form_and_starts_from_it(
    workspace_factory: WorkspaceFactory,
):
    async with workspace_factory() as space:
        admin = await space.join("Ada", role="admin")
        page = await admin.client.get("/monitor")
        assert page.status_code == 200
        assert '<a href="/monitor" data-nav="monitor" aria-current="page">MONITOR</a>' in page.text
        assert "data-monitor-start" in page.text
        started = await admin.client.post(
            "/ui/monitor/sessions", content="durationMs=10000", headers=HTMX
        )
        assert started.status_code == 204
        location = started.headers["HX-Redirect"]
        assert re.fullmatch(r"/monitor/\d+", location)
        view = (await admin.client.get(location)).text
        assert 'data-action="stop-capture"' in view
        assert 'data-monitor-tail data-session-id="' in view
        session_id = location.rsplit("/", 1)[1]
        stopped = await admin.client.post(f"/ui/monitor/sessions/{session_id}/stop", headers=HTMX)
        assert 'data-status="stopped"' in stopped.text
        assert "stopped by Ada" in stopped.text
        assert 'data-action="delete-capture"' in stopped.text


async def test_a_member_sees_captures_but_no_controls(workspace_factory: WorkspaceFactory):
    async with workspace_factory() as space:
        member = await space.join("Mia")
        session = await start(space.owner.client, durationMs=60_000)
        page = await member.client.get("/monitor")
        assert 'data-state="admins-only"' in page.text
        assert "data-monitor-start" not in page.text
        assert f'data-capture="{session["id"]}"' in page.text
        view = (await member.client.get(f"/monitor/{session['id']}")).text
        assert 'data-export="json"' in view
        assert 'data-export="csv"' in view
        assert "stop-capture" not in view
        assert "delete-capture" not in view
        refused = await member.client.post(
            "/ui/monitor/sessions", content="durationMs=10000", headers=HTMX
        )
        assert refused.status_code == 403
        panel = await member.client.get("/ui/monitor/preflight")
        assert 'data-allowed="yes"' in panel.text
        assert "A capture is running on this connection" in panel.text


async def test_a_refused_start_says_why_in_the_form(memory_app_factory: AppFactory):
    async with memory_app_factory() as running:
        await start(running.client, durationMs=60_000)
        response = await running.client.post(
            "/ui/monitor/sessions", content="durationMs=10000", headers=HTMX
        )
        assert response.status_code == 200
        assert 'data-state="refused"' in response.text
        assert "already running" in response.text


async def test_the_list_and_the_view_show_how_a_capture_ended(memory_app_factory: AppFactory):
    async with memory_app_factory(MONITOR_REDACT_VALUES=True) as running:
        session = await start(running.client, durationMs=500)
        await ended(running.client, session["id"])
        listing = (await running.client.get("/ui/monitor/sessions")).text
        assert 'data-status="completed"' in listing
        assert "duration reached" in listing
        view = (await running.client.get(f"/monitor/{session['id']}")).text
        assert 'data-field="redacted"' in view
        assert "hx-trigger" not in view.split('id="monitor-facts"', 1)[1].split(">", 1)[0]
        missing = await running.client.get("/monitor/987654")
        assert missing.status_code == 200
        assert "Capture 987654 not found" in missing.text


async def test_the_page_loads_its_script_and_styles_from_this_service(
    memory_app_factory: AppFactory,
):
    async with memory_app_factory() as running:
        session = await start(running.client, durationMs=500)
        for path in ("/monitor", f"/monitor/{session['id']}"):
            response = await running.client.get(path)
            assert not re.search(r"<script(?![^>]*\ssrc=)", response.text), path
            assert not re.search(r"\sstyle=", response.text), path
            for asset in ("monitor.js", "monitor.css"):
                found = re.search(rf'"(/static/{asset}\?v=[^"]+)"', response.text)
                assert found is not None, asset
                assert (await running.client.get(found.group(1))).status_code == 200


class TestWithoutMonitor:
    async def test_a_renamed_monitor_is_explained_in_place_of_preflight_and_form(
        self, memory_app_factory: AppFactory, fresh: Callable[..., RunningServer]
    ):
        server = fresh("valkey", config={"rename-command": 'MONITOR ""'})
        async with memory_app_factory(**target_of(server)) as running:
            await running.client.get("/health")  # detected, as the shell will know it
            page = (await running.client.get("/monitor")).text
            panel = (await running.client.get("/ui/monitor/preflight")).text
            refused = await running.client.post(
                "/ui/monitor/sessions", content="durationMs=10000", headers=HTMX
            )
        explanation = (
            "MONITOR is not available on this server: the command is renamed or disabled "
            "(managed providers disable it on some plans)"
        )
        for html in (page, panel):
            assert 'data-problem="unsupported"' in html
            assert explanation in html
        assert "data-monitor-start" not in page
        assert 'data-section="captures"' in page  # stored captures stay listed
        assert "data-preflight" not in panel
        assert explanation in refused.text  # a start that slips through says the same
