"""The CLI page: in the navigation, a terminal on the chosen connection, and a line
saying what the viewer may run."""

import re

from tests.fixtures.app import AppFactory
from tests.fixtures.workspace import WorkspaceFactory


async def test_a_member_sees_that_the_cli_is_read_only(workspace_factory: WorkspaceFactory):
    async with workspace_factory(SVC_UNSAFE_CLI=True) as space:
        member = await space.join("Mia")
        response = await member.client.get("/cli")
    assert response.status_code == 200
    html = response.text
    assert '<a href="/cli" data-nav="cli" aria-current="page">CLI</a>' in html
    assert 'data-cli-mode="member"' in html
    assert "The CLI is read-only for members" in html
    assert 'data-connection-id="env-default"' in html
    assert 'role="log"' in html


async def test_an_admin_is_told_how_writes_are_turned_on(workspace_factory: WorkspaceFactory):
    async with workspace_factory() as space:
        admin = await space.join("Ada", role="admin")
        html = (await admin.client.get("/cli")).text
    assert 'data-cli-mode="read-only"' in html
    assert "Set <code>SVC_UNSAFE_CLI=true</code> to allow write and admin commands" in html


async def test_with_unsafe_cli_the_page_warns_that_writes_run(memory_app_factory: AppFactory):
    async with memory_app_factory(SVC_UNSAFE_CLI=True) as running:
        html = (await running.client.get("/cli")).text
    assert 'data-cli-mode="unsafe"' in html


async def test_the_page_loads_its_script_and_styles_from_this_service(
    memory_app_factory: AppFactory,
):
    async with memory_app_factory() as running:
        response = await running.client.get("/cli")
        assert "script-src 'self'" in response.headers["content-security-policy"]
        assert not re.search(r"<script(?![^>]*\ssrc=)", response.text)  # nothing inline
        assert not re.search(r"\sstyle=", response.text)
        for asset in ("cli.js", "cli.css"):
            path = re.search(rf'"(/static/{asset}\?v=[^"]+)"', response.text)
            assert path is not None, asset
            assert (await running.client.get(path.group(1))).status_code == 200
