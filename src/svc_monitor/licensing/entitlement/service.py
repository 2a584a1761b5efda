"""The entitlement server's logic: licences, the tokens it mints for them, accounts.

Online tokens (`POST /v1/entitlements`) last min(now + 7 days, licence expiry): a
monitor re-checks hourly, so a cancelled licence stops within a week at most.
Offline tokens last min(licence expiry, now + 366 days) and cannot be revoked, so
minting one re-checks everything first: ownership, active status, a paid tier and
expiry.
"""

import hashlib
import secrets
import time
import uuid
from collections.abc import Callable
from typing import Any

from svc_monitor.errors import AppError, Forbidden, NotFound
from svc_monitor.licensing import tokens
from svc_monitor.licensing.entitlement.config import EntitlementSettings
from svc_monitor.licensing.entitlement.schemas import (
    AccountCreate,
    AccountCreated,
    CustomerWrite,
    EntitlementGrant,
    LicenseCreate,
    LicenseCreated,
    LicenseRead,
    LicenseUpdate,
    TelemetryReport,
)
from svc_monitor.licensing.entitlement.store import (
    EntitlementStore,
    accounts,
    issuances,
    licenses,
    telemetry_reports,
)
from svc_monitor.licensing.models import Tier, features_of

DAY_MS = 86_400_000
ONLINE_VALIDITY_MS = 7 * DAY_MS
OFFLINE_VALIDITY_MS = 366 * DAY_MS
KEY_PREFIX = "svc_"


class Unauthorized(AppError):
    status_code = 401


class LicenseGone(AppError):
    """The key is known but not entitled now (suspended, cancelled, expired)."""

    status_code = 403


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class Caller:
    """Who is calling an admin route: staff (the server's admin token) or an account."""

    def __init__(self, account_id: str | None) -> None:
        self.account_id = account_id

    @property
    def is_staff(self) -> bool:
        return self.account_id is None


class EntitlementService:
    def __init__(
        self,
        settings: EntitlementSettings,
        store: EntitlementStore,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._settings = settings
        self._store = store
        self._clock = clock
        self._signing_key = tokens.load_private_key(
            settings.LICENSE_SIGNING_PRIVATE_KEY.get_secret_value()
        )

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    # --- callers ---

    async def caller(self, bearer: str | None) -> Caller:
        if not bearer:
            raise Unauthorized("send an admin token as Authorization: Bearer <token>")
        staff = self._settings.ENTITLEMENT_ADMIN_TOKEN.get_secret_value()
        if secrets.compare_digest(bearer.encode(), staff.encode()):
            return Caller(None)
        account = await self._store.account_by_token(digest(bearer))
        if account is None:
            raise Unauthorized("the admin token is not valid")
        return Caller(account.id)

    async def create_account(self, caller: Caller, body: AccountCreate) -> AccountCreated:
        _staff_only(caller)
        token = "svcadm_" + secrets.token_urlsafe(32)
        account_id = str(uuid.uuid4())
        await self._store.add(
            accounts,
            {
                "id": account_id,
                "name": body.name,
                "email": body.email,
                "token_sha256": digest(token),
                "created_at": self._now_ms(),
            },
        )
        return AccountCreated(id=account_id, name=body.name, email=body.email, token=token)

    # --- licences ---

    async def create_license(self, caller: Caller, body: LicenseCreate) -> LicenseCreated:
        _staff_only(caller)
        if body.accountId is not None and await self._store.account(body.accountId) is None:
            raise NotFound(f"no account {body.accountId}", field="accountId")
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        now = self._now_ms()
        values = {
            "id": str(uuid.uuid4()),
            "account_id": body.accountId,
            "key_sha256": digest(key),
            "key_hint": key[:10],
            "tier": body.tier.value,
            "status": "active",
            "customer_name": body.customer.name,
            "customer_email": body.customer.email,
            "instance_limit": body.instanceLimit,
            "expires_at": body.expiresAt,
            "created_at": now,
            "updated_at": now,
        }
        await self._store.add(licenses, values)
        return LicenseCreated(**_license_read(values).model_dump(), key=key)

    async def list_licenses(self, caller: Caller) -> list[LicenseRead]:
        rows = await self._store.licenses_of(caller.account_id)
        return [_license_read(row._mapping) for row in rows]

    async def get_license(self, caller: Caller, license_id: str) -> LicenseRead:
        return _license_read((await self._owned(caller, license_id))._mapping)

    async def update_license(
        self, caller: Caller, license_id: str, body: LicenseUpdate
    ) -> LicenseRead:
        _staff_only(caller)
        await self._owned(caller, license_id)
        values: dict[str, Any] = {"updated_at": self._now_ms()}
        if body.tier is not None:
            values["tier"] = body.tier.value
        if body.status is not None:
            values["status"] = body.status
        if body.instanceLimit is not None:
            values["instance_limit"] = body.instanceLimit
        if body.expiresAt is not None:
            values["expires_at"] = body.expiresAt
        if body.perpetual:
            values["expires_at"] = None
        await self._store.update_license(license_id, values)
        return await self.get_license(caller, license_id)

    # --- tokens ---

    async def online_grant(self, key: str, instance_id: str | None) -> EntitlementGrant:
        row = await self._store.license_by_key(digest(key.strip()))
        if row is None:
            raise NotFound("unknown licence key")
        self._entitled(row, now_ms=self._now_ms())
        return await self._mint(row, "online", ONLINE_VALIDITY_MS, instance_id, issued_by=None)

    async def offline_file(self, caller: Caller, license_id: str) -> tuple[str, int]:
        """(token, expiry in epoch ms) of a new offline token for this licence."""
        row = await self._owned(caller, license_id)
        now = self._now_ms()
        self._entitled(row, now_ms=now)
        if Tier(row.tier) is Tier.COMMUNITY:
            raise Forbidden("offline licences are issued for Pro and Enterprise licences only")
        grant = await self._mint(
            row, "offline", OFFLINE_VALIDITY_MS, None, issued_by=caller.account_id
        )
        return grant.token, grant.expiresAt

    async def _mint(
        self,
        row: Any,
        mode: tokens.Mode,
        validity_ms: int,
        instance_id: str | None,
        *,
        issued_by: str | None,
    ) -> EntitlementGrant:
        now = self._now_ms()
        expires = now + validity_ms
        if row.expires_at is not None:
            expires = min(expires, row.expires_at)
        tier = Tier(row.tier)
        jti = str(uuid.uuid4())
        token = tokens.sign(
            private_key=self._signing_key,
            kid=self._settings.LICENSE_SIGNING_KID,
            license_id=row.id,
            issuance_id=jti,
            tier=tier,
            features=[f.value for f in features_of(tier)],
            customer=tokens.Customer(row.customer_name, row.customer_email),
            instance_limit=row.instance_limit,
            mode=mode,
            issued_at=now // 1000,
            expires_at=expires // 1000,
        )
        await self._store.add(
            issuances,
            {
                "jti": jti,
                "license_id": row.id,
                "mode": mode,
                "instance_id": instance_id,
                "issued_by": issued_by,
                "issued_at": now,
                "expires_at": expires,
            },
        )
        return EntitlementGrant(token=token, tier=tier, expiresAt=expires)

    async def _owned(self, caller: Caller, license_id: str) -> Any:
        row = await self._store.license(license_id)
        if row is None:
            raise NotFound(f"no licence {license_id}")
        if not caller.is_staff and row.account_id != caller.account_id:
            raise Forbidden("this licence belongs to another account")
        return row

    def _entitled(self, row: Any, *, now_ms: int) -> None:
        if row.status != "active":
            raise LicenseGone(f"the licence is {row.status}")
        if row.expires_at is not None and row.expires_at <= now_ms:
            raise LicenseGone(f"the licence expired on {tokens.day_of(row.expires_at // 1000)}")

    # --- telemetry ---

    async def record_telemetry(self, report: TelemetryReport) -> None:
        await self._store.add(
            telemetry_reports,
            {
                "instance_hash": report.instanceHash,
                "app_version": report.appVersion,
                "platform": report.platform,
                "runtime_version": report.runtimeVersion,
                "tier": report.tier.value,
                "received_at": self._now_ms(),
            },
        )


def _staff_only(caller: Caller) -> None:
    if not caller.is_staff:
        raise Forbidden("only the server's admin token may do this")


def _license_read(row: Any) -> LicenseRead:
    return LicenseRead(
        id=row["id"],
        accountId=row["account_id"],
        keyHint=row["key_hint"],
        tier=Tier(row["tier"]),
        status=row["status"],
        customer=CustomerWrite(name=row["customer_name"], email=row["customer_email"]),
        instanceLimit=row["instance_limit"],
        expiresAt=row["expires_at"],
        createdAt=row["created_at"],
        updatedAt=row["updated_at"],
    )
