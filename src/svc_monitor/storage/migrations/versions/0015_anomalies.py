"""Anomaly detection: correlated groups and their events (anomaly/store.py).

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
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
        "anomaly_groups",
        sa.Column("pattern", sa.String(32), nullable=False),
        sa.Column("severity", sa.String(16), nullable=False),
        sa.Column("diagnosis", sa.Text, nullable=False),
        sa.Column("recommendation", sa.Text, nullable=False),
        sa.Column("metrics", sa.JSON, nullable=False),
        sa.Column("event_count", sa.Integer, nullable=False),
        sa.Column("resolved_at", sa.BigInteger, nullable=True),
    )
    _history(
        "anomaly_events",
        sa.Column("group_id", sa.Integer, nullable=True),
        sa.Column("metric", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("severity", sa.String(16), nullable=False),
        sa.Column("value", sa.Float, nullable=False),
        sa.Column("baseline", sa.Float, nullable=False),
        sa.Column("stddev", sa.Float, nullable=False),
        sa.Column("z_score", sa.Float, nullable=False),
        sa.Column("threshold", sa.Float, nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("resolved_at", sa.BigInteger, nullable=True),
    )


def downgrade() -> None:
    op.drop_table("anomaly_events")
    op.drop_table("anomaly_groups")
