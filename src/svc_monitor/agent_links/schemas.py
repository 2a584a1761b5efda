"""Request and response models of /api/agent-tokens and /api/agents (docs/features/agent.md)."""

from pydantic import BaseModel, ConfigDict, Field

from svc_monitor.agent_links.models import AgentToken
from svc_monitor.agent_links.service import LinkView


class AgentTokenCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"name": "payments-eu (private subnet)"}]}
    )

    name: str = Field(
        min_length=1, max_length=100, description="Names the token and its new connection"
    )


class AgentTokenRead(BaseModel):
    id: str
    name: str
    connectionId: str = Field(description="The agent connection this token links")
    createdAt: int
    revokedAt: int | None = None
    lastUsedAt: int | None = Field(None, description="When an agent last linked with it")

    @classmethod
    def of(cls, token: AgentToken) -> "AgentTokenRead":
        return cls(
            id=token.id,
            name=token.name,
            connectionId=token.connection_id,
            createdAt=token.created_at,
            revokedAt=token.revoked_at,
            lastUsedAt=token.last_used_at,
        )


class AgentTokenCreated(AgentTokenRead):
    token: str = Field(
        description="Give it to the agent (SVC_AGENT_TOKEN); shown only in this answer"
    )


class AgentLinkRead(BaseModel):
    """One agent connection and its link now."""

    tokenId: str
    connectionId: str
    name: str
    revoked: bool
    linked: bool = Field(description="Whether the agent's link is up now")
    linkedAt: int | None = None
    version: str | None = Field(None, description="The agent's own version")
    engine: str | None = Field(None, description="valkey or redis, as the agent found it")
    engineVersion: str | None = None
    tls: bool | None = Field(None, description="Whether the agent reaches its instance over TLS")
    cluster: bool | None = None
    nodes: list[str] = Field(default_factory=list, description="Nodes the agent reaches")
    rttMs: float | None = Field(None, description="Round trip of the last heartbeat")
    refusedCommands: int = Field(0, description="Commands the agent refused over this link")
    lastRefused: str | None = None
    sessions: int = Field(0, description="Connections the service holds open through it")

    @classmethod
    def of(cls, view: LinkView) -> "AgentLinkRead":
        token, link = view.token, view.link
        base = cls(
            tokenId=token.id,
            connectionId=token.connection_id,
            name=token.name,
            revoked=token.revoked,
            linked=link is not None,
        )
        if link is None:
            return base
        hello = link.hello
        return base.model_copy(
            update={
                "linkedAt": link.linked_at_ms,
                "version": hello.version,
                "engine": hello.engine,
                "engineVersion": hello.engine_version,
                "tls": hello.tls,
                "cluster": hello.cluster,
                "nodes": hello.nodes,
                "rttMs": None if link.rtt_ms is None else round(link.rtt_ms, 3),
                "refusedCommands": link.refused,
                "lastRefused": link.last_refused,
                "sessions": link.sessions,
            }
        )
