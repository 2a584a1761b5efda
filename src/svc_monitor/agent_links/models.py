"""Agent tokens and what the service knows of each agent's link."""

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class AgentToken:
    """One agent token: it links exactly one connection. Only its SHA-256 is stored."""

    id: str
    name: str
    connection_id: str
    created_at: int  # epoch ms
    revoked_at: int | None = None
    last_used_at: int | None = None
    token_hash: str = field(default="", repr=False)

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None
