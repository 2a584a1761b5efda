"""Bodies of the entitlement server's API."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from svc_monitor.licensing.models import Tier

LicenseStatus = Literal["active", "suspended", "cancelled"]
# Shape only: who receives the licence is a human's job, not a DNS lookup's.
Email = Annotated[str, Field(max_length=320, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")]


class EntitlementRequest(BaseModel):
    """What a monitor sends to check its key (unknown members are ignored: newer monitors
    may say more)."""

    licenseKey: str = Field(min_length=1, max_length=200)
    instanceId: str | None = Field(None, max_length=64)
    version: str | None = Field(None, max_length=40)


class EntitlementGrant(BaseModel):
    token: str = Field(description="RS256 licence token, mode online")
    tier: Tier
    expiresAt: int = Field(description="epoch milliseconds when the token expires")


class CustomerWrite(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    email: Email


class AccountCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    email: Email


class AccountCreated(BaseModel):
    id: str
    name: str
    email: str
    token: str = Field(description="the account's admin token; shown once, store it now")


class LicenseCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    accountId: str | None = Field(None, description="the account that owns it")
    tier: Tier
    customer: CustomerWrite
    instanceLimit: int = Field(1, ge=1, le=100_000)
    expiresAt: int | None = Field(
        None, ge=0, description="epoch milliseconds; absent or null: perpetual"
    )


class LicenseUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tier: Tier | None = None
    status: LicenseStatus | None = None
    instanceLimit: int | None = Field(None, ge=1, le=100_000)
    expiresAt: int | None = Field(None, ge=0)
    perpetual: bool | None = Field(None, description="true clears expiresAt")


class LicenseRead(BaseModel):
    id: str
    accountId: str | None
    keyHint: str = Field(description="the key's first characters, to recognise it")
    tier: Tier
    status: LicenseStatus
    customer: CustomerWrite
    instanceLimit: int
    expiresAt: int | None
    createdAt: int
    updatedAt: int


class LicenseCreated(LicenseRead):
    key: str = Field(description="the licence key (SVC_LICENSE_KEY); shown once, store it now")


class TelemetryReport(BaseModel):
    instanceHash: str = Field(min_length=1, max_length=64)
    appVersion: str = Field(min_length=1, max_length=40)
    platform: str = Field(min_length=1, max_length=80)
    runtimeVersion: str = Field(min_length=1, max_length=40)
    tier: Tier


class VersionRead(BaseModel):
    latest: str
    releaseUrl: str | None
