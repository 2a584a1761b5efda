"""What the licence service knows: the entitlement in force and why."""

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from svc_monitor.licensing.models import Tier
from svc_monitor.licensing.tokens import LicenseClaims


class Source(StrEnum):
    """Where the tier in force came from, in resolution order (licensing/service.py)."""

    ONLINE = "online"  # a fresh answer from the entitlement server
    CACHED = "cached"  # the last online answer, within LICENSE_CACHE_TTL_MS
    PERSISTED = "persisted"  # license.jwt, within LICENSE_MAX_STALE_MS of its check
    OFFLINE = "offline"  # an offline token
    COMMUNITY = "community"  # nothing else applied


@dataclass(frozen=True, slots=True)
class Notice:
    level: Literal["info", "warning", "error"]
    message: str


@dataclass(frozen=True, slots=True)
class Entitlement:
    tier: Tier
    source: Source
    claims: LicenseClaims | None = None
    signed: bool = True
    checked_at_ms: int | None = None  # the online check it came from
    # When local resolution must run again: the token expires, the cache or the
    # outage grace runs out. None: never by itself.
    settles_at_ms: int | None = None


COMMUNITY = Entitlement(Tier.COMMUNITY, Source.COMMUNITY)
