"""Bodies of /health and /version."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from svc_monitor.connections.schemas import Capabilities


class ApiHealth(BaseModel):
    status: Literal["ok"]
    version: str
    uptimeSeconds: float


class StorageHealth(BaseModel):
    status: Literal["ok", "degraded", "error"] = Field(
        description="ok; degraded: it answers but writes fail (unreachable, read-only, full); "
        "error: it does not answer"
    )
    type: str
    persistent: bool
    error: str | None = None
    failingSince: int | None = Field(None, description="epoch ms writes began to fail")


class DatabaseHealth(BaseModel):
    """The engine of the selected connection (X-Connection-Id, else the default)."""

    status: Literal["connected", "disconnected", "unknown"] = Field(
        description="unknown: storage does not answer and this process has not looked the "
        "connection up since it started, so it cannot tell which server to check"
    )
    connectionId: str | None = None
    name: str | None = None
    host: str | None = None
    port: int | None = None
    type: Literal["valkey", "redis"] | None = None
    version: str | None = None
    capabilities: Capabilities | None = None
    error: str | None = None
    errorKind: str | None = None
    checkedAt: int | None = Field(
        None, description="epoch ms of what this says: the last INFO polled, or a PING"
    )


class HealthRead(BaseModel):
    """200 while the service can serve, even when the engine is down (the `database` part
    says so); 503 while it is starting or its own storage does not answer."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "status": "ok",
                    "api": {"status": "ok", "version": "0.1.0", "uptimeSeconds": 5321.4},
                    "storage": {"status": "ok", "type": "sqlite", "persistent": True},
                    "database": {
                        "status": "connected",
                        "connectionId": "env-default",
                        "name": "Default",
                        "host": "10.0.0.12",
                        "port": 6379,
                        "type": "valkey",
                        "version": "9.0.1",
                        "checkedAt": 1795942051935,
                    },
                }
            ]
        }
    )

    status: Literal["ok", "degraded", "error", "starting"] = Field(
        description="ok: all parts fine; degraded: the engine is down or storage writes "
        "fail; error: storage does not answer; starting: not every route answers yet"
    )
    api: ApiHealth
    storage: StorageHealth
    database: DatabaseHealth


class LivenessRead(BaseModel):
    status: Literal["ok"]


class VersionRead(BaseModel):
    current: str
    latest: str | None = Field(description="null until a check succeeds, and when air-gapped")
    updateAvailable: bool
    releaseUrl: str | None
    checkedAt: int | None = Field(description="epoch ms of the last successful check")
    versionCheckIntervalMs: int
    airGapped: bool
