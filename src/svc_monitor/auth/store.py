"""The workspace's tables: users, sessions, invitations, API tokens and the activity log.

Secrets never rest here in the clear: invitation links and API tokens are kept as
SHA-256 digests (they are 256-bit random, so a plain hash is enough), passwords as
argon2id hashes.
"""

import json
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Integer,
    Row,
    String,
    Table,
    Text,
    delete,
    func,
    select,
    update,
)

from svc_monitor.auth.models import (
    ActivityEntry,
    ApiToken,
    Invitation,
    InvitationStatus,
    Role,
    User,
)
from svc_monitor.storage.columns import connection_id_column
from svc_monitor.storage.database import Database
from svc_monitor.storage.metadata import metadata

users = Table(
    "users",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("email", String(320), nullable=False, unique=True),  # lower-cased
    Column("name", String(100), nullable=False),
    Column("password_hash", Text, nullable=True),
    Column("role", String(16), nullable=False),
    Column("created_at", BigInteger, nullable=False),
)

auth_sessions = Table(
    "auth_sessions",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("user_id", String(64), nullable=False, index=True),
    Column("created_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Column("source_ip", String(64), nullable=True),
)

# Sessions (session_id), members (user_id) and API tokens (token_id) ended, for other
# replicas to refuse at once.
auth_revocations = Table(
    "auth_revocations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("session_id", String(64), nullable=True),
    Column("user_id", String(64), nullable=True),
    Column("token_id", String(64), nullable=True),
    Column("at", BigInteger, nullable=False, index=True),
)

invitations = Table(
    "invitations",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("email", String(320), nullable=False, index=True),
    Column("role", String(16), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    # pending, revoked or accepted; "expired" is pending past expires_at, worked out on read
    Column("status", String(16), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Column("invited_by", String(64), nullable=True),
    Column("accepted_at", BigInteger, nullable=True),
)

api_tokens = Table(
    "api_tokens",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("user_id", String(64), nullable=False, index=True),
    Column("name", String(100), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("prefix", String(16), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("last_used_at", BigInteger, nullable=True),
    Column("revoked_at", BigInteger, nullable=True),
    Column("max_role", String(16), nullable=True),  # see ApiToken.max_role
)

activity_log = Table(
    "activity_log",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", BigInteger, nullable=False, index=True),
    Column("actor_id", String(64), nullable=True, index=True),
    Column("actor_name", String(100), nullable=True),
    Column("action", String(200), nullable=False, index=True),
    Column("source_ip", String(64), nullable=True),
    connection_id_column(nullable=True),
    Column("route", String(300), nullable=True),
    Column("status", Integer, nullable=True),
    Column("object_id", String(200), nullable=True),
    Column("details", Text, nullable=False),
)


class AuthStore:
    """Every query on the workspace's tables."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @property
    def persistent(self) -> bool:
        """Whether other processes may share these tables (not memory storage)."""
        return self._db.persistent

    # --- users ---

    async def count_users(self) -> int:
        row = await self._db.fetch_one(select(func.count()).select_from(users))
        return int(row[0]) if row else 0

    async def add_first_user(self, user: User) -> bool:
        """Insert `user` only while the workspace is empty: two claims at once make one owner."""

        def claim(conn: Connection) -> bool:
            if conn.execute(select(func.count()).select_from(users)).scalar_one():
                return False
            conn.execute(users.insert().values(**_user_row(user)))
            return True

        return await self._db.run(claim)

    async def user(self, user_id: str) -> User | None:
        row = await self._db.fetch_one(select(users).where(users.c.id == user_id))
        return None if row is None else _user(row)

    async def user_by_email(self, email: str) -> User | None:
        row = await self._db.fetch_one(select(users).where(users.c.email == email))
        return None if row is None else _user(row)

    async def list_users(self) -> list[User]:
        rows = await self._db.fetch_all(select(users).order_by(users.c.created_at, users.c.id))
        return [_user(r) for r in rows]

    async def set_role(self, user_id: str, role: Role) -> None:
        await self._db.execute(update(users).where(users.c.id == user_id).values(role=role.value))

    async def transfer_ownership(self, owner_id: str, new_owner_id: str) -> None:
        def swap(conn: Connection) -> None:
            conn.execute(update(users).where(users.c.id == owner_id).values(role=Role.ADMIN.value))
            conn.execute(
                update(users).where(users.c.id == new_owner_id).values(role=Role.OWNER.value)
            )

        await self._db.run(swap)

    async def remove_user(self, user_id: str) -> None:
        """The user, their sessions and their API tokens, in one transaction."""

        def remove(conn: Connection) -> None:
            conn.execute(delete(auth_sessions).where(auth_sessions.c.user_id == user_id))
            conn.execute(delete(api_tokens).where(api_tokens.c.user_id == user_id))
            conn.execute(delete(users).where(users.c.id == user_id))

        await self._db.run(remove)

    # --- sessions ---

    async def add_session(
        self, session_id: str, user_id: str, *, now: int, expires_at: int, source_ip: str | None
    ) -> None:
        await self._db.execute(
            auth_sessions.insert().values(
                id=session_id,
                user_id=user_id,
                created_at=now,
                expires_at=expires_at,
                source_ip=source_ip,
            )
        )

    async def live_session_user(self, session_id: str, *, now: int) -> User | None:
        """The user of a session that is still open, or None."""
        row = await self._db.fetch_one(
            select(users)
            .join(auth_sessions, auth_sessions.c.user_id == users.c.id)
            .where(auth_sessions.c.id == session_id, auth_sessions.c.expires_at > now)
        )
        return None if row is None else _user(row)

    async def end_session(self, session_id: str) -> None:
        await self._db.execute(delete(auth_sessions).where(auth_sessions.c.id == session_id))

    async def add_revocation(
        self,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        token_id: str | None = None,
        at: int,
    ) -> None:
        await self._db.execute(
            auth_revocations.insert().values(
                session_id=session_id, user_id=user_id, token_id=token_id, at=at
            )
        )

    async def revocations_after(
        self, last_id: int
    ) -> list[tuple[int, str | None, str | None, str | None, int]]:
        """(id, session_id, user_id, token_id, at) of each later row, oldest first."""
        rows = await self._db.fetch_all(
            select(auth_revocations)
            .where(auth_revocations.c.id > last_id)
            .order_by(auth_revocations.c.id)
        )
        return [(int(r.id), r.session_id, r.user_id, r.token_id, int(r.at)) for r in rows]

    async def prune_revocations(self, *, older_than: int) -> int:
        return await self._db.execute(
            delete(auth_revocations).where(auth_revocations.c.at < older_than)
        )

    async def prune_sessions(self, *, now: int) -> int:
        return await self._db.execute(
            delete(auth_sessions).where(auth_sessions.c.expires_at <= now)
        )

    # --- invitations ---

    async def add_invitation(self, invitation: Invitation, token_hash: str) -> None:
        """A new pending invitation; earlier pending ones for the same email stop working."""

        def add(conn: Connection) -> None:
            conn.execute(
                update(invitations)
                .where(
                    invitations.c.email == invitation.email,
                    invitations.c.status == InvitationStatus.PENDING.value,
                )
                .values(status=InvitationStatus.REVOKED.value)
            )
            conn.execute(
                invitations.insert().values(
                    id=invitation.id,
                    email=invitation.email,
                    role=invitation.role.value,
                    token_hash=token_hash,
                    status=invitation.status.value,
                    created_at=invitation.created_at,
                    expires_at=invitation.expires_at,
                    invited_by=invitation.invited_by,
                )
            )

        await self._db.run(add)

    async def invitation(self, invitation_id: str, *, now: int) -> Invitation | None:
        row = await self._db.fetch_one(select(invitations).where(invitations.c.id == invitation_id))
        return None if row is None else _invitation(row, now)

    async def invitation_by_token(self, token_hash: str, *, now: int) -> Invitation | None:
        row = await self._db.fetch_one(
            select(invitations).where(invitations.c.token_hash == token_hash)
        )
        return None if row is None else _invitation(row, now)

    async def pending_invitation_for(self, email: str, *, now: int) -> Invitation | None:
        row = await self._db.fetch_one(
            select(invitations)
            .where(
                invitations.c.email == email,
                invitations.c.status == InvitationStatus.PENDING.value,
                invitations.c.expires_at > now,
            )
            .order_by(invitations.c.created_at.desc())
            .limit(1)
        )
        return None if row is None else _invitation(row, now)

    async def list_invitations(self, *, now: int) -> list[Invitation]:
        rows = await self._db.fetch_all(
            select(invitations).order_by(invitations.c.created_at.desc()).limit(500)
        )
        return [_invitation(r, now) for r in rows]

    async def revoke_invitation(self, invitation_id: str) -> bool:
        changed = await self._db.execute(
            update(invitations)
            .where(
                invitations.c.id == invitation_id,
                invitations.c.status == InvitationStatus.PENDING.value,
            )
            .values(status=InvitationStatus.REVOKED.value)
        )
        return changed == 1

    async def accept_invitation(self, invitation_id: str, user: User, *, now: int) -> bool:
        """Mark the invitation used and add its user, atomically: of two accepts of one link
        only the one whose UPDATE changed the row goes on."""

        def accept(conn: Connection) -> bool:
            changed = conn.execute(
                update(invitations)
                .where(
                    invitations.c.id == invitation_id,
                    invitations.c.status == InvitationStatus.PENDING.value,
                    invitations.c.expires_at > now,
                )
                .values(status=InvitationStatus.ACCEPTED.value, accepted_at=now)
            ).rowcount
            if changed != 1:
                return False
            conn.execute(users.insert().values(**_user_row(user)))
            return True

        return await self._db.run(accept)

    # --- API tokens ---

    async def add_token(self, token: ApiToken, token_hash: str) -> None:
        await self._db.execute(
            api_tokens.insert().values(
                id=token.id,
                user_id=token.user_id,
                name=token.name,
                token_hash=token_hash,
                prefix=token.prefix,
                created_at=token.created_at,
                max_role=token.max_role.value if token.max_role else None,
            )
        )

    async def tokens_of(self, user_id: str) -> list[ApiToken]:
        rows = await self._db.fetch_all(
            select(api_tokens)
            .where(api_tokens.c.user_id == user_id)
            .order_by(api_tokens.c.created_at.desc())
        )
        return [_token(r) for r in rows]

    async def token_user(self, token_hash: str) -> tuple[ApiToken, User] | None:
        """The live token with this digest and its user."""
        row = await self._db.fetch_one(
            select(api_tokens, users)
            .join(users, users.c.id == api_tokens.c.user_id)
            .where(api_tokens.c.token_hash == token_hash, api_tokens.c.revoked_at.is_(None))
        )
        if row is None:
            return None
        mapping = row._mapping
        user = User(
            id=mapping[users.c.id],
            email=mapping[users.c.email],
            name=mapping[users.c.name],
            role=Role(mapping[users.c.role]),
            created_at=int(mapping[users.c.created_at]),
        )
        token = ApiToken(
            id=mapping[api_tokens.c.id],
            user_id=mapping[api_tokens.c.user_id],
            name=mapping[api_tokens.c.name],
            prefix=mapping[api_tokens.c.prefix],
            created_at=int(mapping[api_tokens.c.created_at]),
            last_used_at=mapping[api_tokens.c.last_used_at],
            revoked_at=None,
            max_role=_role_or_none(mapping[api_tokens.c.max_role]),
        )
        return token, user

    async def revoke_token(self, token_id: str, user_id: str, *, now: int) -> bool:
        changed = await self._db.execute(
            update(api_tokens)
            .where(
                api_tokens.c.id == token_id,
                api_tokens.c.user_id == user_id,
                api_tokens.c.revoked_at.is_(None),
            )
            .values(revoked_at=now)
        )
        return changed == 1

    async def touch_token(self, token_id: str, *, now: int) -> None:
        await self._db.execute(
            update(api_tokens).where(api_tokens.c.id == token_id).values(last_used_at=now)
        )

    # --- activity log ---

    async def add_activity(self, entry: ActivityEntry) -> None:
        await self._db.execute(
            activity_log.insert().values(
                at=entry.at,
                actor_id=entry.actor_id,
                actor_name=entry.actor_name,
                action=entry.action,
                source_ip=entry.source_ip,
                connection_id=entry.connection_id,
                route=entry.route,
                status=entry.status,
                object_id=entry.object_id,
                details=json.dumps(entry.details, sort_keys=True),
            )
        )

    async def activity(
        self,
        *,
        actor: str | None,
        action: str | None,
        since: int | None,
        until: int | None,
        before_id: int | None,
        limit: int,
    ) -> list[ActivityEntry]:
        """Newest first; `before_id` continues a page."""
        query = select(activity_log).order_by(activity_log.c.id.desc()).limit(limit)
        if actor is not None:
            query = query.where(
                (activity_log.c.actor_id == actor) | (activity_log.c.actor_name == actor)
            )
        if action is not None:
            query = query.where(activity_log.c.action == action)
        if since is not None:
            query = query.where(activity_log.c.at >= since)
        if until is not None:
            query = query.where(activity_log.c.at <= until)
        if before_id is not None:
            query = query.where(activity_log.c.id < before_id)
        return [_activity(r) for r in await self._db.fetch_all(query)]

    async def prune_activity(self, *, older_than: int) -> int:
        return await self._db.execute(delete(activity_log).where(activity_log.c.at < older_than))


def _user_row(user: User) -> dict[str, Any]:
    return {
        "id": user.id,
        "email": user.email,
        "name": user.name,
        "password_hash": user.password_hash,
        "role": user.role.value,
        "created_at": user.created_at,
    }


def _user(row: Row[Any]) -> User:
    return User(
        id=row.id,
        email=row.email,
        name=row.name,
        role=Role(row.role),
        created_at=int(row.created_at),
        password_hash=row.password_hash,
    )


def _invitation(row: Row[Any], now: int) -> Invitation:
    status = InvitationStatus(row.status)
    if status is InvitationStatus.PENDING and row.expires_at <= now:
        status = InvitationStatus.EXPIRED
    return Invitation(
        id=row.id,
        email=row.email,
        role=Role(row.role),
        status=status,
        created_at=int(row.created_at),
        expires_at=int(row.expires_at),
        invited_by=row.invited_by,
        accepted_at=row.accepted_at,
    )


def _token(row: Row[Any]) -> ApiToken:
    return ApiToken(
        id=row.id,
        user_id=row.user_id,
        name=row.name,
        prefix=row.prefix,
        created_at=int(row.created_at),
        last_used_at=row.last_used_at,
        revoked_at=row.revoked_at,
        max_role=_role_or_none(row.max_role),
    )


def _role_or_none(value: str | None) -> Role | None:
    return Role(value) if value else None


def _activity(row: Row[Any]) -> ActivityEntry:
    return ActivityEntry(
        id=int(row.id),
        at=int(row.at),
        actor_id=row.actor_id,
        actor_name=row.actor_name,
        action=row.action,
        source_ip=row.source_ip,
        connection_id=row.connection_id,
        route=row.route,
        status=row.status,
        object_id=row.object_id,
        details=json.loads(row.details),
    )
