"""Slow-log and command-log history, each entry stored once.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _log_table(name: str, *extra: sa.Column) -> None:  # type: ignore[type-arg]
    key = ["connection_id", "node", *(c.name for c in extra), "entry_id", "started_at"]
    op.create_table(
        name,
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("connection_id", sa.String(64), nullable=False),
        sa.Column("captured_at", sa.BigInteger, nullable=False),
        sa.Column("node", sa.String(300), nullable=False),
        *extra,
        sa.Column("entry_id", sa.BigInteger, nullable=False),
        sa.Column("started_at", sa.BigInteger, nullable=False),
        sa.Column("duration", sa.BigInteger, nullable=False),
        sa.Column("command", sa.String(64), nullable=False),
        sa.Column("args", sa.Text, nullable=False),
        sa.Column("client_address", sa.String(300)),
        sa.Column("client_name", sa.String(300)),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{name}")),
        # Named, not by convention: the conventional name passes PostgreSQL's 63-character limit.
        sa.UniqueConstraint(*key, name=op.f(f"uq_{name}_entry")),
    )
    op.create_index(f"ix_{name}_connection_time", name, ["connection_id", "captured_at"])
    op.create_index(f"ix_{name}_connection_started", name, ["connection_id", "started_at"])


def upgrade() -> None:
    _log_table("slowlog_entries")
    _log_table("commandlog_entries", sa.Column("log_type", sa.String(16), nullable=False))


def downgrade() -> None:
    op.drop_table("commandlog_entries")
    op.drop_table("slowlog_entries")
