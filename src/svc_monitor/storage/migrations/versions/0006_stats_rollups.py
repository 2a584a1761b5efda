"""Five-minute rollups of the stats samples, for charts over days.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_SERIES = (
    "ops_per_sec",
    "connected_clients",
    "blocked_clients",
    "used_memory",
    "cpu_sys_percent",
    "cpu_user_percent",
    "net_input_kbps",
    "net_output_kbps",
    "hit_ratio",
    "keys",
    "expires",
    "connected_replicas",
)


def upgrade() -> None:
    op.create_table(
        "stats_rollups",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("connection_id", sa.String(64), nullable=False),
        sa.Column("captured_at", sa.BigInteger, nullable=False),
        sa.Column("samples", sa.Integer, nullable=False),
        *(sa.Column(column, sa.Float) for column in _SERIES),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_stats_rollups")),
    )
    op.create_index(
        "ix_stats_rollups_connection_time", "stats_rollups", ["connection_id", "captured_at"]
    )


def downgrade() -> None:
    op.drop_table("stats_rollups")
