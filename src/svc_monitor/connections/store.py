"""The connections table. Secrets are sealed by SecretBox on the way in, opened on the way out."""

import json
from dataclasses import replace
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection as DbConnection,
    Integer,
    Row,
    String,
    Table,
    Text,
    false,
    select,
    update,
)

from svc_monitor.connections.models import Connection, SshTunnel
from svc_monitor.kit.secret_box import SecretBox, SecretUndecryptable
from svc_monitor.storage.columns import CONNECTION_ID_LENGTH
from svc_monitor.storage.database import Database
from svc_monitor.storage.metadata import metadata

connections = Table(
    "connections",
    metadata,
    Column("id", String(CONNECTION_ID_LENGTH), primary_key=True),
    Column("name", String(100), nullable=False),
    Column("host", String(255), nullable=False),
    Column("port", Integer, nullable=False),
    Column("username", String(255), nullable=False),
    Column("password", Text, nullable=True),
    Column("tls", Boolean, nullable=False),
    Column("db", Integer, nullable=False),
    Column("db_type", String(16), nullable=False),
    Column("ssh_tunnel", Text, nullable=True),
    Column("is_default", Boolean, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    # "poll": we connect to it; "push": a Collector sends its metrics to /v1/external/metrics.
    Column("source", String(8), nullable=False, server_default="poll"),
    # PEM text; tls_key is sealed like the password.
    Column("tls_ca_cert", Text, nullable=True),
    Column("tls_cert", Text, nullable=True),
    Column("tls_key", Text, nullable=True),
    Column("tls_insecure", Boolean, nullable=False, server_default=false()),
)

_SSH_SECRETS = ("password", "private_key", "passphrase")


class ConnectionStore:
    """Every query on `connections`."""

    def __init__(self, db: Database, secrets: SecretBox) -> None:
        self._db = db
        self._secrets = secrets
        # The model of each row as last listed, by the row's every value: the poll
        # supervisor and the push receiver list all connections every few seconds, and
        # opening each one's secrets again cost more than the query. A changed row has
        # another key, so it is built afresh; rows no longer listed are let go.
        self._models: dict[tuple[Any, ...], Connection] = {}

    async def list(self) -> list[Connection]:
        rows = await self._db.fetch_all(select(connections).order_by(connections.c.created_at))
        built, models = self._models, {}
        for row in rows:
            key = tuple(row)
            model = built.get(key)
            models[key] = self._to_model(row) if model is None else model
        self._models = models
        return list(models.values())

    async def get(self, connection_id: str) -> Connection | None:
        row = await self._db.fetch_one(select(connections).where(connections.c.id == connection_id))
        return None if row is None else self._to_model(row)

    async def get_default(self) -> Connection | None:
        row = await self._db.fetch_one(
            select(connections).where(connections.c.is_default.is_(True)).limit(1)
        )
        return None if row is None else self._to_model(row)

    async def insert(self, connection: Connection) -> None:
        values = self._to_row(connection)

        def insert(conn: DbConnection) -> None:
            if connection.is_default:
                conn.execute(update(connections).values(is_default=False))
            conn.execute(connections.insert().values(**values))

        await self._db.run(insert)

    async def update(self, connection: Connection) -> bool:
        values = self._to_row(connection)
        del values["id"], values["created_at"], values["is_default"]
        statement = update(connections).where(connections.c.id == connection.id).values(**values)
        return await self._db.execute(statement) > 0

    async def set_default(self, connection_id: str) -> bool:
        def flip(conn: DbConnection) -> bool:
            exists = conn.execute(
                select(connections.c.id).where(connections.c.id == connection_id)
            ).first()
            if exists is None:
                return False
            conn.execute(update(connections).values(is_default=connections.c.id == connection_id))
            return True

        return await self._db.run(flip)

    async def delete(self, connection_id: str) -> bool:
        """Remove one; if it was the default, the oldest remaining one becomes default."""

        def delete(conn: DbConnection) -> bool:
            removed = conn.execute(
                connections.delete().where(connections.c.id == connection_id)
            ).rowcount
            if not removed:
                return False
            has_default = conn.execute(
                select(connections.c.id).where(connections.c.is_default.is_(True))
            ).first()
            if has_default is None:
                oldest = conn.execute(
                    select(connections.c.id).order_by(connections.c.created_at).limit(1)
                ).first()
                if oldest is not None:
                    conn.execute(
                        update(connections)
                        .where(connections.c.id == oldest.id)
                        .values(is_default=True)
                    )
            return True

        return await self._db.run(delete)

    async def reseal_plaintext(self) -> int:
        """Encrypt secrets stored in plain text before ENCRYPTION_KEY was set; how many rows."""
        if not self._secrets.encrypting:
            return 0

        def reseal(conn: DbConnection) -> int:
            changed = 0
            for row in conn.execute(select(connections)).all():
                plain_secret = any(
                    value is not None and SecretBox.is_plain(value)
                    for value in (row.password, row.tls_key)
                )
                plain_tunnel = row.ssh_tunnel is not None and any(
                    isinstance(v, str) and SecretBox.is_plain(v)
                    for k, v in json.loads(row.ssh_tunnel).items()
                    if k in _SSH_SECRETS
                )
                if plain_secret or plain_tunnel:
                    model = self._to_model(row)
                    if model.secret_error:
                        # Its secrets did not all open: rewriting the row would erase them.
                        continue
                    values = self._to_row(model)
                    conn.execute(
                        update(connections)
                        .where(connections.c.id == row.id)
                        .values(
                            password=values["password"],
                            ssh_tunnel=values["ssh_tunnel"],
                            tls_key=values["tls_key"],
                        )
                    )
                    changed += 1
            return changed

        return await self._db.run(reseal)

    # --- mapping ---

    def _to_row(self, c: Connection) -> dict[str, Any]:
        return {
            "id": c.id,
            "name": c.name,
            "host": c.host,
            "port": c.port,
            "username": c.username,
            "password": None
            if c.password is None
            else self._secrets.seal(c.password, context=f"connections:{c.id}:password"),
            "tls": c.tls,
            "db": c.db,
            "db_type": c.db_type,
            "ssh_tunnel": None if c.ssh_tunnel is None else self._ssh_to_json(c.id, c.ssh_tunnel),
            "is_default": c.is_default,
            "created_at": c.created_at,
            "updated_at": c.updated_at,
            "source": c.source,
            "tls_ca_cert": c.tls_ca_cert,
            "tls_cert": c.tls_cert,
            "tls_key": None
            if c.tls_key is None
            else self._secrets.seal(c.tls_key, context=f"connections:{c.id}:tls_key"),
            "tls_insecure": c.tls_insecure,
        }

    def _to_model(self, row: Row[Any]) -> Connection:
        connection = Connection(
            id=row.id,
            name=row.name,
            host=row.host,
            port=row.port,
            username=row.username,
            password=None,
            tls=bool(row.tls),
            db=row.db,
            db_type=row.db_type,
            ssh_tunnel=None,
            is_default=bool(row.is_default),
            created_at=row.created_at,
            updated_at=row.updated_at,
            source=row.source,
            tls_ca_cert=row.tls_ca_cert,
            tls_cert=row.tls_cert,
            tls_insecure=bool(row.tls_insecure),
        )
        # Each secret opens on its own, so one bad value does not hide the others.
        errors: dict[str, str] = {}
        password = tunnel = tls_key = None
        try:
            if row.password is not None:
                context = f"connections:{row.id}:password"
                password = self._secrets.open(row.password, context=context)
        except SecretUndecryptable as exc:
            errors["password"] = str(exc)
        try:
            if row.ssh_tunnel is not None:
                tunnel = self._ssh_from_json(row.id, row.ssh_tunnel)
        except SecretUndecryptable as exc:
            errors["sshTunnel"] = str(exc)
        try:
            if row.tls_key is not None:
                tls_key = self._secrets.open(row.tls_key, context=f"connections:{row.id}:tls_key")
        except SecretUndecryptable as exc:
            errors["tlsKey"] = str(exc)
        return replace(
            connection,
            password=password,
            ssh_tunnel=tunnel,
            tls_key=tls_key,
            secret_error="; ".join(f"{k}: {v}" for k, v in errors.items()) or None,
            unreadable=frozenset(errors),
        )

    def _ssh_to_json(self, connection_id: str, tunnel: SshTunnel) -> str:
        data: dict[str, Any] = {
            "host": tunnel.host,
            "port": tunnel.port,
            "username": tunnel.username,
            "auth_method": tunnel.auth_method,
            "private_key_path": tunnel.private_key_path,
            "host_key_fingerprint": tunnel.host_key_fingerprint,
        }
        for name in _SSH_SECRETS:
            value = getattr(tunnel, name)
            context = f"connections:{connection_id}:ssh.{name}"
            data[name] = None if value is None else self._secrets.seal(value, context=context)
        return json.dumps(data)

    def _ssh_from_json(self, connection_id: str, text: str) -> SshTunnel:
        data = json.loads(text)
        for name in _SSH_SECRETS:
            if data.get(name) is not None:
                context = f"connections:{connection_id}:ssh.{name}"
                data[name] = self._secrets.open(data[name], context=context)
        return SshTunnel(**data)
