"""Request and response bodies of the workspace routes (camelCase, as the rest of the API)."""

from pydantic import BaseModel, ConfigDict, Field

from svc_monitor.auth.models import ActivityEntry, ApiToken, Invitation, Role, User
from svc_monitor.kit.plain_text import Printable
from svc_monitor.kit.records import from_attributes


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RegisterWrite(_Body):
    """The first user of a workspace (its owner)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"email": "ops@example.com", "name": "Ops Lead", "password": "a long passphrase"}
            ]
        },
    )

    email: Printable = Field(max_length=320)
    name: Printable = Field(max_length=200)
    password: str = Field(max_length=1024)


class LoginWrite(_Body):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"email": "ops@example.com", "password": "a long passphrase"}]
        },
    )

    email: Printable = Field(max_length=1024)
    password: str = Field(max_length=1024)


class AcceptInviteWrite(_Body):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "token": "the token from the invite link",
                    "name": "Sam",
                    "password": "a long passphrase",
                }
            ]
        },
    )

    token: Printable = Field(max_length=200)
    name: Printable = Field(max_length=200)
    password: str = Field(max_length=1024)


class RoleWrite(_Body):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"role": "admin"}]})

    role: Role


class TransferWrite(_Body):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"memberId": "u_8f14e45fceea167a"}]}
    )

    memberId: str = Field(max_length=64)


class InvitationWrite(_Body):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"email": "sam@example.com", "role": "member"}]},
    )

    email: Printable = Field(max_length=320)
    role: Role = Role.MEMBER


class TokenWrite(_Body):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"name": "grafana-dashboards"}]}
    )

    name: Printable = Field(max_length=200)


class MeRead(BaseModel):
    """The signed-in user; `workspaceEnabled` false means user control is off."""

    workspaceEnabled: bool
    signedIn: bool
    workspaceEmpty: bool = False
    id: str | None = None
    email: str | None = None
    name: str | None = None
    role: Role | None = None


class MemberRead(BaseModel):
    id: str
    name: str
    role: Role
    email: str | None = Field(None, description="Shown to admins and the owner only")
    createdAt: int

    @classmethod
    def of(cls, user: User, *, with_email: bool) -> "MemberRead":
        return cls(
            id=user.id,
            name=user.name,
            role=user.role,
            email=user.email if with_email else None,
            createdAt=user.created_at,
        )


class InvitationRead(BaseModel):
    id: str
    email: str
    role: Role
    status: str
    createdAt: int
    expiresAt: int
    link: str | None = Field(None, description="The one-time link: in the create answer only")

    @classmethod
    def of(cls, invitation: Invitation, link: str | None = None) -> "InvitationRead":
        return cls(
            id=invitation.id,
            email=invitation.email,
            role=invitation.role,
            status=invitation.status.value,
            createdAt=invitation.created_at,
            expiresAt=invitation.expires_at,
            link=link,
        )


class InvitationPreview(BaseModel):
    """What the invite page shows before the invitee accepts."""

    email: str
    role: Role
    expiresAt: int


class TokenRead(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "c23de7593a0e4269b42c6d65541be75b",
                    "name": "grafana-dashboards",
                    "prefix": "svc_pat_WwNQ",
                    "createdAt": 1795942051949,
                    "lastUsedAt": None,
                    "revokedAt": None,
                    "token": "svc_pat_WwNQ9uQNsDht85f-GdHOoUz-KnuBgd8wacMryOVCD0k",
                }
            ]
        }
    )

    id: str
    name: str
    prefix: str
    createdAt: int
    lastUsedAt: int | None
    revokedAt: int | None
    token: str | None = Field(None, description="The secret: in the create answer only")

    @classmethod
    def of(cls, token: ApiToken, secret: str | None = None) -> "TokenRead":
        return cls(
            id=token.id,
            name=token.name,
            prefix=token.prefix,
            createdAt=token.created_at,
            lastUsedAt=token.last_used_at,
            revokedAt=token.revoked_at,
            token=secret,
        )


class ActivityRead(BaseModel):
    id: int
    at: int
    actorId: str | None
    actorName: str | None
    action: str
    sourceIp: str | None
    connectionId: str | None
    route: str | None
    status: int | None
    objectId: str | None
    details: dict[str, object]

    @classmethod
    def of(cls, entry: ActivityEntry) -> "ActivityRead":
        return from_attributes(cls, entry)


class ActivityPage(BaseModel):
    entries: list[ActivityRead]
    nextCursor: str | None = Field(None, description="Pass as `cursor` for the next page")
