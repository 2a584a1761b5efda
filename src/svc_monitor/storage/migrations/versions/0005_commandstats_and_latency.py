"""Commandstats samples, latency snapshots and latency histograms.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
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
        "commandstats_samples",
        sa.Column("command", sa.String(128), nullable=False),
        sa.Column("calls", sa.BigInteger, nullable=False),
        sa.Column("usec", sa.BigInteger, nullable=False),
        sa.Column("usec_per_call", sa.Float, nullable=False),
        sa.Column("rejected_calls", sa.BigInteger),
        sa.Column("failed_calls", sa.BigInteger),
        sa.Column("calls_delta", sa.BigInteger, nullable=False),
        sa.Column("usec_delta", sa.BigInteger, nullable=False),
        sa.Column("interval_ms", sa.BigInteger, nullable=False),
    )
    op.create_index(
        "ix_commandstats_samples_connection_command_time",
        "commandstats_samples",
        ["connection_id", "command", "captured_at"],
    )
    _history(
        "latency_snapshots",
        sa.Column("event_name", sa.String(64), nullable=False),
        sa.Column("latest_event_at", sa.BigInteger, nullable=False),
        sa.Column("latest_ms", sa.BigInteger, nullable=False),
        sa.Column("max_ms", sa.BigInteger, nullable=False),
    )
    _history("latency_histograms", sa.Column("data", sa.JSON, nullable=False))


def downgrade() -> None:
    op.drop_table("latency_histograms")
    op.drop_table("latency_snapshots")
    op.drop_table("commandstats_samples")
