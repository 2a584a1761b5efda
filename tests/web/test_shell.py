"""The frame of every page: connection choice, the connection dialog, safety headers."""

import re
from pathlib import Path

import httpx
import pytest

from svc_monitor.app import create_app
from svc_monitor.web.assets import STATIC
from svc_monitor.web.rendering import TEMPLATES
from svc_monitor.web.shell import CONNECTION_COOKIE
from tests.fixtures.app import RunningApp, make_settings, running_app, target_of
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

HTMX = {"HX-Request": "true"}
FORM = {**HTMX, "Content-Type": "application/x-www-form-urlencoded"}


async def add_connection(api: RunningApp, server: RunningServer, name: str) -> str:
    body = {"name": name, "host": server.host, "port": server.port}
    response = await api.client.post("/api/connections", json=body)
    assert response.status_code == 201, response.text
    connection_id: str = response.json()["id"]
    return connection_id


class TestPages:
    async def test_a_page_carries_a_strict_content_security_policy(self, api: RunningApp):
        response = await api.client.get("/")
        assert response.status_code == 200
        policy = response.headers["content-security-policy"]
        assert "script-src 'self'" in policy
        assert "'unsafe-inline'" not in policy
        assert response.headers["x-content-type-options"] == "nosniff"

    async def test_every_asset_a_page_loads_is_served_here(self, api: RunningApp):
        page = (await api.client.get("/")).text
        sources = re.findall(r'(?:src|href)="([^"]+)"', page)
        assets = [s for s in sources if s.startswith("/static/")]
        assert assets
        assert not [s for s in sources if "//" in s], "no other host"
        for asset in assets:
            assert (await api.client.get(asset)).status_code == 200, asset

    async def test_navigation_lists_every_page_and_marks_the_current_one(self, api: RunningApp):
        page = (await api.client.get("/")).text
        for path in ("/slowlog", "/clients", "/latency", "/memory", "/cluster", "/audit"):
            assert f'href="{path}"' in page
        assert 'data-nav="dashboard" aria-current="page"' in page

    async def test_an_unknown_page_is_an_html_404_and_api_paths_stay_json(self, api: RunningApp):
        page = await api.client.get("/no-such-page")
        assert page.status_code == 404
        assert "text/html" in page.headers["content-type"]
        assert (await api.client.get("/api/no-such-thing")).json()["statusCode"] == 404

    async def test_without_any_connection_the_page_invites_adding_one(self):
        async with running_app(make_settings()) as app:
            for connection in (await app.client.get("/api/connections")).json():
                await app.client.delete(f"/api/connections/{connection['id']}")
            page = await app.client.get("/")
            assert page.status_code == 200
            assert 'data-state="no-connection"' in page.text
            assert "Add connection" in page.text


class TestUiOnDemand:
    async def test_the_first_page_view_loads_the_ui_and_asks_again(
        self, valkey_server: RunningServer
    ):
        """What the command line does: no UI routes or templates until someone opens a page."""
        app = create_app(make_settings(**target_of(valkey_server)), ui_on_demand=True)
        transport = httpx.ASGITransport(app=app)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://svc.test") as client,
        ):

            def installed() -> bool:
                return bool(app.state.ui_installed)

            assert not installed()
            assert not hasattr(app.state, "templates")
            first = await client.get("/slowlog?log=slow")
            assert first.status_code == 307
            assert first.headers["location"] == "/slowlog?log=slow"
            assert installed()
            again = await client.get(first.headers["location"])
            assert again.status_code == 200
            assert "Slow log" in again.text
            assert (await client.get("/no-such-page")).status_code == 404

    async def test_a_form_posted_to_a_restarted_replica_is_its_first_request(
        self, valkey_server: RunningServer, tmp_path: Path
    ):
        """Behind a load balancer a page served by one replica posts its form to another
        that has just started: that first request, a signed-in htmx POST, loads the UI
        and is answered, not a 404."""
        settings = make_settings(
            **target_of(valkey_server),
            WORKSPACE_DISABLED=False,
            AUTH_SECRET="a-shared-session-secret-of-32-chars!",
            STORAGE_TYPE="sqlite",
            STORAGE_SQLITE_FILEPATH=tmp_path / "svc.db",
        )
        async with running_app(settings) as before:
            registered = await before.client.post(
                "/api/auth/register",
                json={"email": "o@example.com", "name": "Olive", "password": "correct horse b"},
                headers={"Origin": "http://svc.test"},
            )
            assert registered.status_code == 201, registered.text
            session = dict(before.client.cookies)
            interval = (await before.client.get("/api/settings")).json()["settings"]
        assert session
        restarted = create_app(settings, ui_on_demand=True)
        transport = httpx.ASGITransport(app=restarted)
        async with (
            restarted.router.lifespan_context(restarted),
            httpx.AsyncClient(
                transport=transport,
                base_url="http://svc.test",
                cookies=session,
                headers={"Origin": "http://svc.test"},  # what a browser on our page sends
            ) as browser,
        ):
            assert not restarted.state.ui_installed
            form = {name: str(value or "") for name, value in interval.items()}
            form["auditPollIntervalMs"] = "4321"
            first = await browser.post(
                "/ui/settings", data=form, headers={**FORM, "Sec-Fetch-Site": "same-origin"}
            )
            assert first.status_code == 200, first.text
            assert 'data-state="saved"' in first.text
            saved = (await browser.get("/api/settings")).json()["settings"]
            assert saved["auditPollIntervalMs"] == 4321
            # The guard still holds on that first request's route: no htmx header, no change.
            plain = await browser.post("/ui/settings", data={**form, "auditPollIntervalMs": "5"})
            assert plain.status_code == 403

    async def test_a_form_posted_before_the_features_load_is_503_with_retry_after(
        self, valkey_server: RunningServer
    ):
        app = create_app(
            make_settings(**target_of(valkey_server)),
            ui_on_demand=True,
            features_in_background=True,
        )
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://svc.test") as client:
            # No lifespan yet: the features are not loaded, as in a process just started.
            early = await client.post("/ui/settings", data={}, headers=FORM)
        assert early.status_code == 503, early.text
        assert early.headers["retry-after"] == "1"
        assert "starting" in early.json()["message"]


class TestChoosingAConnection:
    async def test_choosing_sets_the_cookie_every_page_reads(
        self, api: RunningApp, redis7_server: RunningServer
    ):
        other = await add_connection(api, redis7_server, "The Redis")
        response = await api.client.post(
            "/ui/connection", content=f"connection={other}", headers=FORM
        )
        assert response.status_code == 200
        assert response.headers["hx-refresh"] == "true"
        assert response.cookies[CONNECTION_COOKIE] == other
        page = (await api.client.get("/", headers={"Cookie": f"{CONNECTION_COOKIE}={other}"})).text
        assert f'data-connection-id="{other}"' in page
        assert re.search(rf'<option value="{other}"[^>]*selected', page)

    async def test_a_stale_cookie_falls_back_to_the_default(self, api: RunningApp):
        page = await api.client.get(
            "/", headers={"Cookie": f"{CONNECTION_COOKIE}=deleted-long-ago"}
        )
        assert page.status_code == 200
        assert 'data-connection-id="env-default"' in page.text

    async def test_a_change_from_another_site_is_refused(self, api: RunningApp):
        plain_form = {"Content-Type": "application/x-www-form-urlencoded"}
        body = "connection=env-default"
        refused = await api.client.post("/ui/connection", content=body, headers=plain_form)
        assert refused.status_code == 403
        cross_site = {**FORM, "Sec-Fetch-Site": "cross-site"}
        refused = await api.client.post("/ui/connection", content=body, headers=cross_site)
        assert refused.status_code == 403


class TestConnectionDialog:
    async def test_test_shows_the_detected_engine(
        self, api: RunningApp, redis7_server: RunningServer
    ):
        body = f"quick={redis7_server.host}:{redis7_server.port}"
        result = await api.client.post("/ui/connections/test", content=body, headers=FORM)
        assert result.status_code == 200
        assert 'data-result="ok"' in result.text
        assert re.search(r"<span data-detected>redis 7\.0\.\d+</span>", result.text)

    async def test_a_bad_port_names_the_field(self, api: RunningApp):
        body = "host=127.0.0.1&port=70000"
        result = await api.client.post("/ui/connections/test", content=body, headers=FORM)
        assert 'data-field-error="port"' in result.text

    async def test_a_url_that_is_not_redis_names_the_quick_connect_box(self, api: RunningApp):
        body = "quick=http://127.0.0.1:6379"
        result = await api.client.post("/ui/connections/test", content=body, headers=FORM)
        assert 'data-result="invalid"' in result.text

    async def test_save_adds_it_and_chooses_it(self, api: RunningApp, redis7_server: RunningServer):
        body = f"quick=redis://{redis7_server.host}:{redis7_server.port}/0&name=From+the+form"
        saved = await api.client.post("/ui/connections", content=body, headers=FORM)
        assert saved.headers["hx-refresh"] == "true"
        listed = (await api.client.get("/api/connections")).json()
        added = next(c for c in listed if c["name"] == "From the form")
        assert added["port"] == redis7_server.port
        assert saved.cookies[CONNECTION_COOKIE] == added["id"]

    async def test_save_of_an_unreachable_instance_stores_nothing(
        self, api: RunningApp, server_factory: ServerFactory
    ):
        gone = server_factory.start("valkey")
        server_factory.stop(gone)

        async def stored() -> list[tuple[str, str, int]]:
            listed = (await api.client.get("/api/connections")).json()
            return [(c["id"], c["name"], c["updatedAt"]) for c in listed]

        before = await stored()
        body = f"host={gone.host}&port={gone.port}&name=Gone"
        result = await api.client.post("/ui/connections", content=body, headers=FORM)
        assert 'data-result="invalid"' in result.text
        assert "hx-refresh" not in result.headers
        assert await stored() == before

    async def test_edit_keeps_the_password_unless_asked_to_remove_it(
        self, api: RunningApp, server_factory: ServerFactory
    ):
        locked = server_factory.start("valkey", password="s3cret")
        try:
            created = await api.client.post(
                "/api/connections",
                json={
                    "name": "Locked",
                    "host": locked.host,
                    "port": locked.port,
                    "password": "s3cret",
                },
            )
            cid = created.json()["id"]
            form = await api.client.get(f"/ui/connections/{cid}/edit")
            assert "s3cret" not in form.text  # a stored secret never comes back
            body = f"name=Renamed&host={locked.host}&port={locked.port}&password="
            renamed = await api.client.post(f"/ui/connections/{cid}", content=body, headers=FORM)
            assert renamed.headers["hx-refresh"] == "true"
            after = (await api.client.get(f"/api/connections/{cid}")).json()
            assert after["name"] == "Renamed"
            assert after["hasPassword"] is True
        finally:
            server_factory.stop(locked)

    async def test_set_default_and_delete(self, api: RunningApp, redis7_server: RunningServer):
        cid = await add_connection(api, redis7_server, "Short-lived")
        await api.client.post(f"/ui/connections/{cid}/default", headers=HTMX)
        assert (await api.client.get(f"/api/connections/{cid}")).json()["isDefault"] is True
        deleted = await api.client.post(f"/ui/connections/{cid}/delete", headers=HTMX)
        assert deleted.status_code == 200
        assert (await api.client.get(f"/api/connections/{cid}")).status_code == 404

    async def test_manage_lists_every_connection_with_its_status(self, api: RunningApp):
        dialog = (await api.client.get("/ui/connections")).text
        assert 'data-connection="env-default"' in dialog

        async def shown_connected() -> bool:
            # A poll that timed out on a loaded machine shows the connection down until the
            # next one succeeds: the status follows the polls.
            return "status-connected" in (await api.client.get("/ui/connections")).text

        await eventually(shown_connected)


class TestTemplatesAndAssets:
    @pytest.mark.parametrize(
        "path", sorted(TEMPLATES.rglob("*.html")), ids=lambda p: str(p.relative_to(TEMPLATES))
    )
    def test_no_template_has_inline_script_or_style(self, path: Path):
        """The CSP would block them and the browser would log an error."""
        text = path.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)", text), "inline <script>"
        assert not re.search(r"\sstyle=", text), "style attribute"
        assert "<style" not in text
        assert "hx-on" not in text
        assert "javascript:" not in text

    def test_every_vendored_library_keeps_its_licence(self):
        vendored = [p for p in (STATIC / "vendor").iterdir() if p.is_dir()]
        assert vendored
        for library in vendored:
            assert (library / "LICENSE").is_file(), library.name
