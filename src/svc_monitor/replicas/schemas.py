"""Body of GET /api/replicas."""

from pydantic import BaseModel, Field

from svc_monitor.replicas.models import Replica


class ReplicaRead(BaseModel):
    id: str = Field(description="Host, pid and a random tail, fixed for the process's life")
    address: str = Field(description="REPLICA_ADDRESS, else http://<hostname>:<PORT>")
    version: str
    startedAt: int = Field(description="Unix milliseconds")
    heartbeatAt: int = Field(description="Unix milliseconds of its last heartbeat")
    heartbeatAgeMs: int = Field(description="Milliseconds since then, as this replica sees it")
    live: bool = Field(description="Heartbeat within REPLICA_TIMEOUT_MS")
    self: bool = Field(description="The replica that answered this request")
    polledConnections: int = Field(description="Connections it polled at its last heartbeat")
    ownedConnections: list[str] = Field(
        description=(
            "Ids of the connections it holds the lease on, so it alone polls them (a dead "
            "replica's until the others take them over); every polled connection on memory "
            "or SQLite storage, which serve one process"
        )
    )

    @classmethod
    def of(cls, replica: Replica, owned: list[str]) -> "ReplicaRead":
        record = replica.record
        return cls(
            id=record.id,
            address=record.address,
            version=record.version,
            startedAt=record.started_at_ms,
            heartbeatAt=record.heartbeat_at_ms,
            heartbeatAgeMs=replica.heartbeat_age_ms,
            live=replica.live,
            self=replica.is_self,
            polledConnections=record.polled_connections,
            ownedConnections=owned,
        )


class ReplicasRead(BaseModel):
    heartbeatMs: int = Field(description="REPLICA_HEARTBEAT_MS")
    timeoutMs: int = Field(description="REPLICA_TIMEOUT_MS: silent longer, a replica is gone")
    replicas: list[ReplicaRead]
