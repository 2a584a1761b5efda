"""The dataset in force: the shipped copy, or a newer one fetched from CVE_DATASET_URL.

An update is fetched every CVE_DATASET_UPDATE_INTERVAL_MS unless the install is
air-gapped. It replaces the dataset in force only when it parses whole and is not older
(by its `generated` date); a malformed or older document is logged and ignored, so the
last good dataset stays. An adopted update is kept in app_meta, so a restart (or another
replica on the same storage) starts from it rather than from the shipped copy.
"""

import json
import logging
from collections.abc import Callable
from datetime import date
from typing import Literal

from svc_monitor.config import Settings
from svc_monitor.cve.dataset import DatasetInvalid, parse_dataset, shipped_dataset
from svc_monitor.cve.models import Dataset
from svc_monitor.kit.gil_handover import to_thread
from svc_monitor.kit.outbound import get_json
from svc_monitor.storage.app_meta import AppMetaStore

logger = logging.getLogger(__name__)

META_KEY = "cve_dataset"
UpdateOutcome = Literal["updated", "unchanged", "invalid", "unreachable", "air_gapped"]


class DatasetSource:
    """Holds the dataset in force and fetches updates."""

    def __init__(
        self, settings: Settings, meta: AppMetaStore, *, air_gapped: Callable[[], bool]
    ) -> None:
        self._settings = settings
        self._meta = meta
        self._air_gapped = air_gapped  # asked each time: an offline licence may arrive later
        self.dataset: Dataset = shipped_dataset()
        self.origin: Literal["shipped", "updated"] = "shipped"

    @property
    def url(self) -> str:
        configured = self._settings.CVE_DATASET_URL
        return configured or self._settings.ENTITLEMENT_URL.rstrip("/") + "/v1/cve-dataset"

    def age_days(self, today: date) -> int:
        return (today - self.dataset.generated).days

    def stale(self, today: date) -> bool:
        return self.age_days(today) > self._settings.CVE_DATASET_MAX_AGE_DAYS

    async def load_stored(self) -> None:
        """Take the update an earlier run adopted, when it is newer than the shipped copy."""
        text = await self._meta.get(META_KEY)
        if text is None:
            return
        try:
            stored = parse_dataset(json.loads(text))
        except (ValueError, DatasetInvalid) as exc:
            logger.warning("the stored CVE dataset is unreadable (%s); using the shipped one", exc)
            return
        if stored.generated >= self.dataset.generated:
            self.dataset, self.origin = stored, "updated"

    async def update(self) -> UpdateOutcome:
        """One fetch of CVE_DATASET_URL; the dataset in force changes only on "updated"."""
        if self._air_gapped():
            return "air_gapped"
        url = self.url
        timeout_s = self._settings.LICENSE_TIMEOUT_MS / 1000
        try:
            reply = await to_thread(get_json, url, timeout_s=timeout_s)
        except (OSError, ValueError) as exc:  # URLError and timeouts are OSErrors
            logger.info("CVE dataset source %s did not answer: %s", url, exc)
            return "unreachable"
        if reply.status != 200:
            logger.info("CVE dataset source %s answered %d", url, reply.status)
            return "unreachable"
        try:
            fetched = parse_dataset(reply.body)
        except DatasetInvalid as exc:
            logger.warning("ignored a malformed CVE dataset from %s: %s", url, exc)
            return "invalid"
        if fetched.generated < self.dataset.generated:
            return "unchanged"  # never go back to an older dataset
        if fetched == self.dataset:
            return "unchanged"
        self.dataset, self.origin = fetched, "updated"
        await self._meta.put(META_KEY, json.dumps(reply.body, separators=(",", ":")))
        logger.info("CVE dataset updated to %s from %s", fetched.generated, url)
        return "updated"
