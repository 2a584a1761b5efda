"""ACL audit trail and client snapshots.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _history(name: str, *columns: sa.Column) -> None:  # type: ignore[type-arg]
    op.create_table(
        name,
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("connection_id", sa.String(64), nullable=False),
        sa.Column("captured_at", sa.BigInteger, nullable=False),
        *columns,
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{name}")),
    )
    op.create_index(f"ix_{name}_connection_time", name, ["connection_id", "captured_at"])


def upgrade() -> None:
    _history(
        "acl_entries",
        sa.Column("entry_id", sa.BigInteger),
        sa.Column("count", sa.BigInteger, nullable=False),
        sa.Column("reason", sa.String(32), nullable=False),
        sa.Column("context", sa.String(64), nullable=False),
        sa.Column("object", sa.Text, nullable=False),
        sa.Column("username", sa.String(256), nullable=False),
        sa.Column("age_seconds", sa.Float, nullable=False),
        sa.Column("client_info", sa.Text, nullable=False),
        sa.Column("timestamp_created", sa.BigInteger, nullable=False),
        sa.Column("timestamp_last_updated", sa.BigInteger, nullable=False),
    )
    _history(
        "client_snapshots",
        sa.Column("client_id", sa.BigInteger),
        sa.Column("addr", sa.String(128)),
        sa.Column("laddr", sa.String(128)),
        sa.Column("name", sa.String(256)),
        sa.Column("username", sa.String(256)),
        sa.Column("db", sa.Integer),
        sa.Column("cmd", sa.String(64)),
        sa.Column("age", sa.BigInteger),
        sa.Column("idle", sa.BigInteger),
        sa.Column("flags", sa.String(32)),
        sa.Column("sub", sa.Integer),
        sa.Column("psub", sa.Integer),
        sa.Column("multi", sa.Integer),
        sa.Column("qbuf", sa.BigInteger),
        sa.Column("qbuf_free", sa.BigInteger),
        sa.Column("obl", sa.BigInteger),
        sa.Column("oll", sa.BigInteger),
        sa.Column("omem", sa.BigInteger),
        sa.Column("tot_mem", sa.BigInteger),
        sa.Column("lib_name", sa.String(128)),
    )


def downgrade() -> None:
    op.drop_table("client_snapshots")
    op.drop_table("acl_entries")
