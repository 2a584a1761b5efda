"""Anonymous usage telemetry (SVC_TELEMETRY): one small report a day.

What is sent, all of it: the instance hash (see LicenseService), this version, the
platform, the Python version and the tier. Never sent when SVC_TELEMETRY=false or
when air-gapped; a failed send is dropped, never retried or queued, and never holds
anything else up (it runs on a thread, as its own task).
"""

import asyncio
import logging
import platform

from svc_monitor import __version__
from svc_monitor.config import Settings
from svc_monitor.kit.gil_handover import to_thread
from svc_monitor.kit.outbound import post_json
from svc_monitor.licensing.service import LicenseService

logger = logging.getLogger(__name__)

REPORT_EVERY_S = 24 * 3600.0
# Long enough for the first licence check to settle, so the report carries its tier.
FIRST_REPORT_AFTER_S = 30.0


class UsageTelemetry:
    def __init__(
        self,
        settings: Settings,
        license: LicenseService,
        *,
        first_after_s: float = FIRST_REPORT_AFTER_S,
    ) -> None:
        self._settings = settings
        self._license = license
        self._first_after_s = first_after_s
        self.sent = 0

    @property
    def enabled(self) -> bool:
        return self._settings.SVC_TELEMETRY and not self._license.air_gapped

    def report(self) -> dict[str, str]:
        return {
            "eventType": "heartbeat",
            "instanceHash": self._license.instance_hash,
            "appVersion": __version__,
            "platform": f"{platform.system()}-{platform.machine()}".lower(),
            "runtimeVersion": f"python-{platform.python_version()}",
            "tier": self._license.tier.value,
        }

    async def run(self) -> None:
        """The background loop; cancelled at shutdown."""
        if not self._settings.SVC_TELEMETRY:
            return
        await asyncio.sleep(self._first_after_s)
        while True:
            await self.send_once()
            await asyncio.sleep(REPORT_EVERY_S)

    async def send_once(self) -> bool:
        if not self.enabled:  # asked each time: an offline licence may have been activated
            return False
        url = self._settings.ENTITLEMENT_URL.rstrip("/") + "/v1/telemetry"
        timeout_s = self._settings.LICENSE_TIMEOUT_MS / 1000
        try:
            reply = await to_thread(post_json, url, self.report(), timeout_s=timeout_s)
        except OSError as exc:
            logger.debug("telemetry not sent: %s", exc)
            return False
        if reply.status >= 300:
            logger.debug("telemetry not accepted: HTTP %d", reply.status)
            return False
        self.sent += 1
        return True
