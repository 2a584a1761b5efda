"""Key analytics: runs, their key patterns, and each connection's SCAN cursor
(key_analytics/store.py).

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
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
        "key_analytics_runs",
        sa.Column("source", sa.String(300), nullable=False),
        sa.Column("on_replica", sa.Boolean, nullable=False),
        sa.Column("started_cursor", sa.String(32), nullable=False),
        sa.Column("next_cursor", sa.String(32), nullable=False),
        sa.Column("sampled_keys", sa.Integer, nullable=False),
        sa.Column("keyspace_keys", sa.BigInteger, nullable=False),
        sa.Column("duration_ms", sa.BigInteger, nullable=False),
        sa.Column("paused_ms", sa.BigInteger, nullable=False),
        sa.Column("complete", sa.Boolean, nullable=False),
        sa.Column("eviction_policy", sa.String(32)),
        sa.Column("hot_keys_note", sa.Text),
        sa.Column("size_buckets", sa.JSON, nullable=False),
        sa.Column("hot_keys", sa.JSON, nullable=False),
        sa.Column("largest_keys", sa.JSON, nullable=False),
    )
    _history(
        "key_pattern_snapshots",
        sa.Column("pattern", sa.String(512), nullable=False),
        sa.Column("key_count", sa.BigInteger, nullable=False),
        sa.Column("sampled_key_count", sa.Integer, nullable=False),
        sa.Column("keys_with_ttl", sa.Integer, nullable=False),
        sa.Column("total_memory_bytes", sa.BigInteger, nullable=False),
        sa.Column("sampled_memory_bytes", sa.BigInteger, nullable=False),
        sa.Column("avg_memory_bytes", sa.Float, nullable=False),
        sa.Column("max_memory_bytes", sa.BigInteger, nullable=False),
        sa.Column("avg_ttl_seconds", sa.Float),
        sa.Column("types", sa.JSON, nullable=False),
    )
    op.create_table(
        "key_analytics_cursors",
        sa.Column("connection_id", sa.String(64), nullable=False),
        sa.Column("source", sa.String(300), nullable=False),
        sa.Column("cursor", sa.String(32), nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("connection_id", name=op.f("pk_key_analytics_cursors")),
    )


def downgrade() -> None:
    op.drop_table("key_analytics_cursors")
    op.drop_table("key_pattern_snapshots")
    op.drop_table("key_analytics_runs")
