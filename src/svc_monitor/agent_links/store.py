"""The agent_tokens table."""

from typing import Any

from sqlalchemy import BigInteger, Column, Row, String, Table, select, update

from svc_monitor.agent_links.models import AgentToken
from svc_monitor.storage.columns import CONNECTION_ID_LENGTH
from svc_monitor.storage.database import Database
from svc_monitor.storage.metadata import metadata

agent_tokens = Table(
    "agent_tokens",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("name", String(100), nullable=False),
    Column("connection_id", String(CONNECTION_ID_LENGTH), nullable=False),
    # hex SHA-256 of the token: the token itself is shown once and never stored.
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("created_at", BigInteger, nullable=False),
    Column("revoked_at", BigInteger, nullable=True),
    Column("last_used_at", BigInteger, nullable=True),
)


class AgentTokenStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def insert(self, token: AgentToken) -> None:
        await self._db.execute(
            agent_tokens.insert().values(
                id=token.id,
                name=token.name,
                connection_id=token.connection_id,
                token_hash=token.token_hash,
                created_at=token.created_at,
            )
        )

    async def list(self) -> list[AgentToken]:
        rows = await self._db.fetch_all(select(agent_tokens).order_by(agent_tokens.c.created_at))
        return [_model(row) for row in rows]

    async def get(self, token_id: str) -> AgentToken | None:
        row = await self._db.fetch_one(select(agent_tokens).where(agent_tokens.c.id == token_id))
        return None if row is None else _model(row)

    async def by_hash(self, token_hash: str) -> AgentToken | None:
        row = await self._db.fetch_one(
            select(agent_tokens).where(agent_tokens.c.token_hash == token_hash)
        )
        return None if row is None else _model(row)

    async def revoke(self, token_id: str, at_ms: int) -> bool:
        result = await self._db.execute(
            update(agent_tokens)
            .where(agent_tokens.c.id == token_id, agent_tokens.c.revoked_at.is_(None))
            .values(revoked_at=at_ms)
        )
        return bool(result)

    async def used(self, token_id: str, at_ms: int) -> None:
        await self._db.execute(
            update(agent_tokens).where(agent_tokens.c.id == token_id).values(last_used_at=at_ms)
        )


def _model(row: Row[Any]) -> AgentToken:
    m = row._mapping
    return AgentToken(
        id=str(m["id"]),
        name=str(m["name"]),
        connection_id=str(m["connection_id"]),
        created_at=int(m["created_at"]),
        revoked_at=None if m["revoked_at"] is None else int(m["revoked_at"]),
        last_used_at=None if m["last_used_at"] is None else int(m["last_used_at"]),
        token_hash=str(m["token_hash"]),
    )
