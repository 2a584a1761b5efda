"""The latest released version, asked for every VERSION_CHECK_INTERVAL_MS.

Sources in order: the entitlement server, then the release API. Never asked when
air-gapped (an offline licence without an online key); an unreachable source
only leaves `latest` as it was.
"""

import asyncio
import json
import logging
import re
import time
import urllib.request
from typing import Any

from svc_monitor import __version__
from svc_monitor.config import Settings
from svc_monitor.system.schemas import VersionRead

logger = logging.getLogger(__name__)

_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")


class VersionService:
    """Keeps the latest known release and whether it is newer than this one."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._latest: str | None = None
        self._release_url: str | None = None
        self._checked_at: int | None = None

    def read(self) -> VersionRead:
        latest = self._latest
        return VersionRead(
            current=__version__,
            latest=latest,
            updateAvailable=latest is not None and _key(latest) > _key(__version__),
            releaseUrl=self._release_url,
            checkedAt=self._checked_at,
            versionCheckIntervalMs=self._settings.VERSION_CHECK_INTERVAL_MS,
            airGapped=self._settings.air_gapped,
        )

    async def run(self) -> None:
        """The background loop; cancelled at shutdown."""
        if self._settings.air_gapped:
            logger.info("air-gapped: the update check is off")
            return
        interval_s = self._settings.VERSION_CHECK_INTERVAL_MS / 1000
        while True:
            await self.check_once()
            await asyncio.sleep(interval_s)

    async def check_once(self) -> bool:
        if self._settings.air_gapped:
            return False
        for url in self._sources():
            try:
                payload = await asyncio.to_thread(self._fetch_json, url)
            except (OSError, ValueError) as exc:  # URLError and HTTPError are OSErrors
                logger.debug("version source %s did not answer: %s", url, exc)
                continue
            found = _from_payload(payload)
            if found is not None:
                self._latest, self._release_url = found
                self._checked_at = int(time.time() * 1000)
                return True
        return False

    def _fetch_json(self, url: str) -> Any:
        # The standard library on a thread, not httpx: one small GET an hour does not
        # justify loading an HTTP client stack into every idle service (bench/startup.py).
        request = urllib.request.Request(
            url, headers={"User-Agent": f"Svc-Monitor/{__version__}", "Accept": "application/json"}
        )
        timeout = self._settings.LICENSE_TIMEOUT_MS / 1000
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read(1024 * 1024))

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
    if not isinstance(version, str) or not _VERSION.match(version):
        return None
    url = payload.get("releaseUrl") or payload.get("html_url")
    return version.removeprefix("v"), url if isinstance(url, str) else None


def _key(version: str) -> tuple[int, int, int]:
    match = _VERSION.match(version)
    if match is None:
        return (0, 0, 0)
    major, minor, patch = (int(g) for g in match.groups())
    return major, minor, patch
