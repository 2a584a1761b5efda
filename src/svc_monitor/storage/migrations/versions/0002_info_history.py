"""INFO history: memory snapshots and stats samples.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
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
        "memory_snapshots",
        sa.Column("used_memory", sa.BigInteger),
        sa.Column("used_memory_rss", sa.BigInteger),
        sa.Column("used_memory_peak", sa.BigInteger),
        sa.Column("mem_fragmentation_ratio", sa.Float),
        sa.Column("maxmemory", sa.BigInteger),
        sa.Column("allocator_frag_ratio", sa.Float),
        sa.Column("ops_per_sec", sa.BigInteger),
        sa.Column("cpu_sys_percent", sa.Float),
        sa.Column("cpu_user_percent", sa.Float),
        sa.Column("io_threaded_reads", sa.BigInteger),
        sa.Column("io_threaded_writes", sa.BigInteger),
    )
    _history(
        "stats_samples",
        sa.Column("ops_per_sec", sa.BigInteger),
        sa.Column("connected_clients", sa.BigInteger),
        sa.Column("blocked_clients", sa.BigInteger),
        sa.Column("used_memory", sa.BigInteger),
        sa.Column("cpu_sys_percent", sa.Float),
        sa.Column("cpu_user_percent", sa.Float),
        sa.Column("net_input_kbps", sa.Float),
        sa.Column("net_output_kbps", sa.Float),
        sa.Column("keyspace_hits", sa.BigInteger),
        sa.Column("keyspace_misses", sa.BigInteger),
        sa.Column("hit_ratio", sa.Float),
        sa.Column("keys", sa.BigInteger),
        sa.Column("expires", sa.BigInteger),
        sa.Column("evicted_keys", sa.BigInteger),
        sa.Column("expired_keys", sa.BigInteger),
        sa.Column("connected_replicas", sa.BigInteger),
        sa.Column("repl_offset", sa.BigInteger),
        sa.Column("role", sa.String(16)),
    )


def downgrade() -> None:
    op.drop_table("stats_samples")
    op.drop_table("memory_snapshots")
