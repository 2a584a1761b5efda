"""Models to API schemas: the one place that decides what of a connection is shown."""

from svc_monitor.connections.live import EngineSnapshot, PushStatus
from svc_monitor.connections.models import Connection
from svc_monitor.connections.schemas import (
    Capabilities,
    ConnectionRead,
    ConnectionTestResult,
    EngineStatus,
    PushedVersion,
    SshTunnelRead,
)
from svc_monitor.connections.service import TestOutcome
from svc_monitor.connections.tunnels import auth_method
from svc_monitor.engine.capabilities import EngineIdentity
from svc_monitor.kit.pem import summary


def to_read(
    connection: Connection, seen: EngineSnapshot | None, push: PushStatus | None = None
) -> ConnectionRead:
    tunnel = connection.ssh_tunnel
    if connection.pushed and seen is None:  # registered a moment ago: nothing pushed yet
        seen = PushStatus(False, connection.updated_at).snapshot()
    client_cert = summary(connection.tls_cert) if connection.tls_cert else None
    return ConnectionRead(
        id=connection.id,
        source=connection.source,
        name=connection.name,
        host=connection.host,
        port=connection.port,
        username=connection.username,
        db=connection.db,
        tls=connection.tls,
        hasTlsCaCert=connection.tls_ca_cert is not None,
        hasTlsCert=connection.tls_cert is not None,
        hasTlsKey=connection.tls_key is not None or "tlsKey" in connection.unreadable,
        tlsInsecure=connection.tls_insecure,
        tlsCertSubject=client_cert.subject if client_cert else None,
        tlsCertExpiresAt=client_cert.not_after_ms if client_cert else None,
        dbType=connection.db_type,
        hasPassword=connection.password is not None or connection.secret_error is not None,
        sshTunnel=None
        if tunnel is None
        else SshTunnelRead(
            host=tunnel.host,
            port=tunnel.port,
            username=tunnel.username,
            authMethod=auth_method(tunnel),
            privateKeyPath=tunnel.private_key_path,
            hostKeyFingerprint=tunnel.host_key_fingerprint,
            hasPassword=tunnel.password is not None,
            hasPrivateKey=tunnel.private_key is not None,
            hasPassphrase=tunnel.passphrase is not None,
        ),
        isDefault=connection.is_default,
        createdAt=connection.created_at,
        updatedAt=connection.updated_at,
        credentialError=connection.secret_error,
        engine=to_engine_status(seen),
        lastPushAt=push.last_push_ms if push else None,
        pushedVersion=_pushed_version(push) if push and push.last_push_ms else None,
    )


def _pushed_version(push: PushStatus) -> PushedVersion:
    return PushedVersion(
        type=push.engine,
        version=push.version,
        attribute=push.version_attribute,
        missing=None if push.version else push.version_attribute,
    )


def to_engine_status(seen: EngineSnapshot | None) -> EngineStatus:
    if seen is None:
        return EngineStatus(status="unknown")
    if not seen.connected:
        assert seen.error is not None
        return EngineStatus(
            status="disconnected",
            error=seen.error.message,
            errorKind=seen.error.kind,
            checkedAt=seen.checked_at_ms,
        )
    identity = seen.identity
    assert identity is not None
    return EngineStatus(
        status="connected",
        checkedAt=seen.checked_at_ms,
        type=identity.type,
        version=identity.version,
        capabilities=_capabilities(identity),
    )


def to_test_result(outcome: TestOutcome) -> ConnectionTestResult:
    if outcome.error is not None:
        return ConnectionTestResult(
            success=False,
            error=outcome.error.message,
            errorKind=outcome.error.kind,
            hint=outcome.hint,
            latencyMs=outcome.latency_ms,
            sshHostKeyFingerprint=outcome.ssh_host_key,
        )
    identity = outcome.identity
    assert identity is not None
    return ConnectionTestResult(
        success=True,
        latencyMs=outcome.latency_ms,
        sshHostKeyFingerprint=outcome.ssh_host_key,
        type=identity.type,
        version=identity.version,
        capabilities=_capabilities(identity),
    )


def _capabilities(identity: EngineIdentity) -> Capabilities:
    return Capabilities(**identity.capabilities.to_api())
