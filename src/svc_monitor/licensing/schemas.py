"""Bodies of /api/license/*."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from svc_monitor.licensing.models import FEATURE_TIERS, Tier, features_of
from svc_monitor.licensing.resolution import Source
from svc_monitor.licensing.service import LicenseService
from svc_monitor.licensing.tokens import MAX_TOKEN_CHARS


class CustomerRead(BaseModel):
    name: str
    email: str


class NoticeRead(BaseModel):
    level: Literal["info", "warning", "error"]
    message: str


class LicenseStatusRead(BaseModel):
    """The tier in force, where it came from and anything the operator should know."""

    tier: Tier
    features: list[str] = Field(description="the paid features this tier unlocks")
    lockedFeatures: list[str] = Field(description="the paid features it does not")
    source: Source = Field(
        description="online (fresh check), cached (last check, within LICENSE_CACHE_TTL_MS), "
        "persisted (license.jwt, within LICENSE_MAX_STALE_MS of its check), offline, community"
    )
    mode: Literal["online", "offline"] | None = Field(description="the mode of the token in use")
    signed: bool = Field(description="false only for an unsigned grant (LICENSE_ALLOW_UNSIGNED)")
    airGapped: bool = Field(
        description="an offline licence and no SVC_LICENSE_KEY: no outbound request is made"
    )
    licenseId: str | None
    customer: CustomerRead | None
    expiresAt: int | None = Field(description="epoch milliseconds when the token in use expires")
    instanceLimit: int | None = Field(description="shown and logged; not enforced offline")
    checkedAt: int | None = Field(description="epoch milliseconds of the online check in use")
    lastCheckAttemptAt: int | None
    onlineKeyConfigured: bool
    offlineFromEnvironment: bool = Field(
        description="SVC_OFFLINE_LICENSE is set: the licence cannot be changed from here"
    )
    telemetryEnabled: bool
    clockRollbackSuspected: bool
    warnings: list[NoticeRead]

    @classmethod
    def of(cls, license: LicenseService, *, telemetry_enabled: bool) -> "LicenseStatusRead":
        entitlement = license.entitlement()
        claims = entitlement.claims
        unlocked = features_of(entitlement.tier)
        return cls(
            tier=entitlement.tier,
            features=[f.value for f in unlocked],
            lockedFeatures=[f.value for f in FEATURE_TIERS if f not in unlocked],
            source=entitlement.source,
            mode=claims.mode if claims else None,
            signed=entitlement.signed,
            airGapped=license.air_gapped,
            licenseId=claims.license_id if claims else None,
            customer=CustomerRead(name=claims.customer.name, email=claims.customer.email)
            if claims
            else None,
            expiresAt=claims.expires_at * 1000 if claims else None,
            instanceLimit=claims.instance_limit if claims else None,
            checkedAt=entitlement.checked_at_ms,
            lastCheckAttemptAt=license.last_check_ms,
            onlineKeyConfigured=license.online_key_configured,
            offlineFromEnvironment=license.offline_from_env,
            telemetryEnabled=telemetry_enabled,
            clockRollbackSuspected=license.rollback_suspected,
            warnings=[NoticeRead(level=n.level, message=n.message) for n in license.notices()],
        )


class FeatureRead(BaseModel):
    id: str
    name: str
    tier: Tier = Field(description="the lowest tier that unlocks it")
    enabled: bool


class FeaturesRead(BaseModel):
    tier: Tier
    features: list[FeatureRead]


class OfflineLicenseWrite(BaseModel):
    """An offline licence token, as pasted (the file's contents)."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"token": "eyJhbGciOiJSUzI1NiJ9..."}]}
    )

    token: str = Field(min_length=1, max_length=MAX_TOKEN_CHARS)


class AllowedEventsRead(BaseModel):
    tier: Tier
    allowedEvents: list[str]
    lockedEvents: list[str]
