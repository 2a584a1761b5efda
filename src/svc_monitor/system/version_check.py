"""The latest released version, asked for every VERSION_CHECK_INTERVAL_MS.

Sources in order: the entitlement server, then the release API. Never asked when
air-gapped (an offline licence without an online key); an unreachable source
only leaves `latest` as it was.
"""

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from svc_monitor import __version__
from svc_monitor.config import Settings
from svc_monitor.kit.gil_handover import to_thread
from svc_monitor.kit.outbound import get_json
from svc_monitor.kit.versions import is_newer, server_version
from svc_monitor.system.schemas import VersionRead

logger = logging.getLogger(__name__)


class VersionService:
    """Keeps the latest known release and whether it is newer than this one."""

    def __init__(self, settings: Settings, *, air_gapped: Callable[[], bool]) -> None:
        self._settings = settings
        # Asked each time: activating an offline licence makes the install air-gapped.
        self._air_gapped = air_gapped
        self._latest: str | None = None
        self._release_url: str | None = None
        self._checked_at: int | None = None

    def read(self) -> VersionRead:
        latest = self._latest
        return VersionRead(
            current=__version__,
            latest=latest,
            updateAvailable=latest is not None and is_newer(latest, __version__),
            releaseUrl=self._release_url,
            checkedAt=self._checked_at,
            versionCheckIntervalMs=self._settings.VERSION_CHECK_INTERVAL_MS,
            airGapped=self._air_gapped(),
        )

    async def run(self) -> None:
        """The background loop; cancelled at shutdown."""
        interval_s = self._settings.VERSION_CHECK_INTERVAL_MS / 1000
        while True:
            await self.check_once()
            await asyncio.sleep(interval_s)

    async def check_once(self) -> bool:
        if self._air_gapped():
            logger.debug("air-gapped: no update check")
            return False
        timeout_s = self._settings.LICENSE_TIMEOUT_MS / 1000
        for url in self._sources():
            try:
                reply = await to_thread(get_json, url, timeout_s=timeout_s)
            except (OSError, ValueError) as exc:  # URLError and timeouts are OSErrors
                logger.debug("version source %s did not answer: %s", url, exc)
                continue
            found = _from_payload(reply.body) if reply.status == 200 else None
            if found is not None:
                self._latest, self._release_url = found
                self._checked_at = int(time.time() * 1000)
                return True
        return False

    def _sources(self) -> list[str]:
        return [
            self._settings.ENTITLEMENT_URL.rstrip("/") + "/v1/version",
            self._settings.RELEASES_URL,
        ]


def _from_payload(payload: Any) -> tuple[str, str | None] | None:
    """{"latest": "1.2.3", "releaseUrl": ...} from the entitlement server, or a release
    object {"tag_name": "v1.2.3", "html_url": ...}."""
    if not isinstance(payload, dict):
        return None
    version = payload.get("latest") or payload.get("version") or payload.get("tag_name")
    if not isinstance(version, str) or server_version(version) is None:
        return None
    url = payload.get("releaseUrl") or payload.get("html_url")
    return version.removeprefix("v"), url if isinstance(url, str) else None
