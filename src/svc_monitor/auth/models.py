"""What the auth domain hands around: roles, users, who is calling, invitations, tokens."""

from dataclasses import dataclass
from enum import StrEnum


class Role(StrEnum):
    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def at_least(self, other: "Role") -> bool:
        return self.rank >= other.rank


_RANK = {Role.MEMBER: 1, Role.ADMIN: 2, Role.OWNER: 3}


@dataclass(frozen=True, slots=True)
class User:
    id: str
    email: str
    name: str
    role: Role
    created_at: int  # epoch ms
    password_hash: str | None = None  # None: signs in only through the broker


class Via(StrEnum):
    """How the caller proved who they are."""

    SESSION = "session"  # the signed session cookie
    TOKEN = "token"  # a personal API token (Authorization: Bearer)


@dataclass(frozen=True, slots=True)
class Principal:
    """The signed-in user behind a request."""

    user_id: str
    name: str
    role: Role
    via: Via
    session_id: str | None = None  # SESSION only
    token_id: str | None = None  # TOKEN only

    @property
    def is_admin(self) -> bool:
        return self.role.at_least(Role.ADMIN)


class InvitationStatus(StrEnum):
    PENDING = "pending"
    REVOKED = "revoked"
    ACCEPTED = "accepted"
    EXPIRED = "expired"


@dataclass(frozen=True, slots=True)
class Invitation:
    id: str
    email: str
    role: Role
    status: InvitationStatus
    created_at: int
    expires_at: int
    invited_by: str | None
    accepted_at: int | None = None


@dataclass(frozen=True, slots=True)
class ApiToken:
    id: str
    user_id: str
    name: str
    prefix: str  # the first characters, so a user can tell tokens apart
    created_at: int
    last_used_at: int | None
    revoked_at: int | None
    # The most it acts as, whatever its user's role later: member for a token a member
    # made; None for an admin's or the owner's, which follow their user's current role.
    max_role: Role | None = None


@dataclass(frozen=True, slots=True)
class ActivityEntry:
    id: int
    at: int  # epoch ms
    actor_id: str | None
    actor_name: str | None
    action: str  # "POST /api/connections", "auth.login", "cli.command", ...
    source_ip: str | None
    connection_id: str | None
    route: str | None
    status: int | None
    object_id: str | None
    details: dict[str, object]
