import pytest

from svc_monitor import __version__
from svc_monitor.system.version_check import VersionService
from tests.fixtures.app import AppFactory, make_settings
from tests.fixtures.licensing import RecordingServer

MAJOR_MINOR = __version__.rsplit(".", 1)[0]
NEXT_PATCH = f"{MAJOR_MINOR}.{int(__version__.rsplit('.', 1)[1]) + 1}"


def never() -> bool:
    return False


@pytest.fixture
def releases(recording_server: RecordingServer) -> RecordingServer:
    """A real HTTP server on loopback answering like the entitlement server."""
    recording_server.reply = {"latest": "99.0.0", "releaseUrl": "https://rel/99"}
    return recording_server


class TestVersionCheck:
    async def test_newer_release_is_reported(self, releases: RecordingServer):
        service = VersionService(make_settings(ENTITLEMENT_URL=releases.url), air_gapped=never)
        assert await service.check_once()
        version = service.read()
        assert version.current == __version__
        assert version.latest == "99.0.0"
        assert version.updateAvailable is True
        assert [hit.path for hit in releases.hits] == ["/v1/version"]

    async def test_same_version_is_no_update(self, releases: RecordingServer):
        releases.reply = {"latest": __version__}
        service = VersionService(make_settings(ENTITLEMENT_URL=releases.url), air_gapped=never)
        await service.check_once()
        assert service.read().updateAvailable is False

    @pytest.mark.parametrize(
        ("latest", "update"),
        [
            pytest.param(f"{__version__}-rc1", False, id="a-pre-release-of-this-one"),
            pytest.param(f"{NEXT_PATCH}-rc1", True, id="a-pre-release-of-the-next"),
        ],
    )
    async def test_orders_pre_releases(self, releases: RecordingServer, latest: str, update: bool):
        releases.reply = {"latest": latest}
        service = VersionService(make_settings(ENTITLEMENT_URL=releases.url), air_gapped=never)
        assert await service.check_once()
        assert service.read().updateAvailable is update

    async def test_a_reply_that_is_not_a_version_is_ignored(self, releases: RecordingServer):
        releases.reply = {"latest": "latest-and-greatest"}
        service = VersionService(make_settings(ENTITLEMENT_URL=releases.url), air_gapped=never)
        assert not await service.check_once()
        assert service.read().latest is None

    async def test_falls_back_to_the_release_api(self, releases: RecordingServer):
        service = VersionService(
            make_settings(ENTITLEMENT_URL="http://127.0.0.1:9", RELEASES_URL=releases.url + "/gh"),
            air_gapped=never,
        )
        assert await service.check_once()
        assert service.read().latest == "99.0.0"

    async def test_unreachable_leaves_latest_unknown(self):
        service = VersionService(make_settings(), air_gapped=never)
        assert not await service.check_once()
        version = service.read()
        assert version.latest is None
        assert version.updateAvailable is False

    async def test_air_gapped_never_asks(self, releases: RecordingServer):
        settings = make_settings(ENTITLEMENT_URL=releases.url)
        service = VersionService(settings, air_gapped=lambda: True)
        assert not await service.check_once()
        assert releases.hits == []
        assert service.read().airGapped is True

    async def test_version_endpoint(self, memory_app_factory: AppFactory):
        async with memory_app_factory() as app:
            body = (await app.client.get("/api/version")).json()
        assert body["current"] == __version__
        assert body["versionCheckIntervalMs"] == 3600000
        assert body["airGapped"] is False
