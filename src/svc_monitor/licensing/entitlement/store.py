"""The entitlement server's tables: accounts, licences, issued tokens, telemetry.

Created from these definitions when the server starts (it has no migrations yet:
the first change to a table here should bring Alembic in, as the monitor has).
Licence keys and account tokens are stored as SHA-256 digests, never in clear.
"""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    ForeignKey,
    Integer,
    MetaData,
    Row,
    String,
    Table,
    insert,
    select,
    update,
)

from svc_monitor.storage.database import Database

metadata = MetaData()

accounts = Table(
    "ent_accounts",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("email", String(320), nullable=False),
    Column("token_sha256", String(64), nullable=False, unique=True),
    Column("created_at", BigInteger, nullable=False),
)

licenses = Table(
    "ent_licenses",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("account_id", String(36), ForeignKey("ent_accounts.id"), nullable=True),
    Column("key_sha256", String(64), nullable=False, unique=True),
    Column("key_hint", String(16), nullable=False),
    Column("tier", String(16), nullable=False),
    Column("status", String(16), nullable=False),
    Column("customer_name", String(200), nullable=False),
    Column("customer_email", String(320), nullable=False),
    Column("instance_limit", Integer, nullable=False),
    Column("expires_at", BigInteger, nullable=True),  # epoch ms; NULL = perpetual
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

issuances = Table(
    "ent_issuances",
    metadata,
    Column("jti", String(36), primary_key=True),
    Column("license_id", String(36), ForeignKey("ent_licenses.id"), nullable=False, index=True),
    Column("mode", String(8), nullable=False),
    Column("instance_id", String(64), nullable=True),
    Column("issued_by", String(36), nullable=True),  # account id; NULL = staff or online check
    Column("issued_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
)

telemetry_reports = Table(
    "ent_telemetry_reports",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("instance_hash", String(64), nullable=False),
    Column("app_version", String(40), nullable=False),
    Column("platform", String(80), nullable=False),
    Column("runtime_version", String(40), nullable=False),
    Column("tier", String(16), nullable=False),
    Column("received_at", BigInteger, nullable=False),
)


class EntitlementStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def create_tables(self) -> None:
        await self.db.run(metadata.create_all)

    async def add(self, table: Table, values: dict[str, Any]) -> None:
        await self.db.execute(insert(table).values(**values))

    async def account_by_token(self, token_sha256: str) -> Row[Any] | None:
        return await self.db.fetch_one(
            select(accounts).where(accounts.c.token_sha256 == token_sha256)
        )

    async def account(self, account_id: str) -> Row[Any] | None:
        return await self.db.fetch_one(select(accounts).where(accounts.c.id == account_id))

    async def license(self, license_id: str) -> Row[Any] | None:
        return await self.db.fetch_one(select(licenses).where(licenses.c.id == license_id))

    async def license_by_key(self, key_sha256: str) -> Row[Any] | None:
        return await self.db.fetch_one(select(licenses).where(licenses.c.key_sha256 == key_sha256))

    async def licenses_of(self, account_id: str | None) -> Sequence[Row[Any]]:
        query = select(licenses).order_by(licenses.c.created_at)
        if account_id is not None:
            query = query.where(licenses.c.account_id == account_id)
        return await self.db.fetch_all(query)

    async def update_license(self, license_id: str, values: dict[str, Any]) -> None:
        await self.db.execute(update(licenses).where(licenses.c.id == license_id).values(**values))

    async def telemetry(self) -> Sequence[Row[Any]]:
        return await self.db.fetch_all(select(telemetry_reports).order_by(telemetry_reports.c.id))
