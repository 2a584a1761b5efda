import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from svc_monitor import __version__
from svc_monitor.system.version_check import VersionService
from tests.fixtures.app import AppFactory, make_settings


class ReleaseServer:
    """A real HTTP server on loopback answering like the entitlement server."""

    def __init__(self) -> None:
        self.latest = "99.0.0"
        self.hits: list[str] = []
        self.status = 200
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.hits.append(self.path)
                body = json.dumps({"latest": owner.latest, "releaseUrl": "https://rel/99"})
                self.send_response(owner.status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def releases() -> Iterator[ReleaseServer]:
    server = ReleaseServer()
    yield server
    server.close()


class TestVersionCheck:
    async def test_newer_release_is_reported(self, releases: ReleaseServer):
        service = VersionService(make_settings(ENTITLEMENT_URL=releases.url))
        assert await service.check_once()
        version = service.read()
        assert version.current == __version__
        assert version.latest == "99.0.0"
        assert version.updateAvailable is True
        assert releases.hits == ["/v1/version"]

    async def test_same_version_is_no_update(self, releases: ReleaseServer):
        releases.latest = __version__
        service = VersionService(make_settings(ENTITLEMENT_URL=releases.url))
        await service.check_once()
        assert service.read().updateAvailable is False

    async def test_falls_back_to_the_release_api(self, releases: ReleaseServer):
        service = VersionService(
            make_settings(ENTITLEMENT_URL="http://127.0.0.1:9", RELEASES_URL=releases.url + "/gh")
        )
        assert await service.check_once()
        assert service.read().latest == "99.0.0"

    async def test_unreachable_leaves_latest_unknown(self):
        service = VersionService(make_settings())
        assert not await service.check_once()
        version = service.read()
        assert version.latest is None
        assert version.updateAvailable is False

    async def test_air_gapped_never_asks(self, releases: ReleaseServer, tmp_path):
        settings = make_settings(
            ENTITLEMENT_URL=releases.url, SVC_OFFLINE_LICENSE="a.b.c", SVC_DATA_DIR=tmp_path
        )
        service = VersionService(settings)
        await service.run()  # returns at once when air-gapped
        assert not await service.check_once()
        assert releases.hits == []
        assert service.read().airGapped is True

    async def test_version_endpoint(self, memory_app_factory: AppFactory):
        async with memory_app_factory() as app:
            body = (await app.client.get("/api/version")).json()
        assert body["current"] == __version__
        assert body["versionCheckIntervalMs"] == 3600000
        assert body["airGapped"] is False
