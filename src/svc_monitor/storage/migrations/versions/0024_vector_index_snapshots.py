"""Vector index snapshots: one row per search index per vector index poll
(vector_search/store.py).

Revision ID: 0024
Revises: 0023
"""

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "vector_index_snapshots",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("connection_id", sa.String(64), nullable=False),
        sa.Column("captured_at", sa.BigInteger, nullable=False),
        sa.Column("index_name", sa.String(256), nullable=False),
        sa.Column("node", sa.String(300)),
        sa.Column("docs", sa.BigInteger),
        sa.Column("records", sa.BigInteger),
        sa.Column("indexing_failures", sa.BigInteger),
        sa.Column("percent_indexed", sa.Float),
        sa.Column("indexing", sa.Boolean),
        sa.Column("memory_bytes", sa.BigInteger),
        sa.Column("vector_memory_bytes", sa.BigInteger),
        sa.Column("vector_fields", sa.JSON, nullable=False),
        sa.Column("last_error", sa.String(1024)),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_vector_index_snapshots")),
    )
    op.create_index(
        "ix_vector_index_snapshots_connection_time",
        "vector_index_snapshots",
        ["connection_id", "captured_at"],
    )


def downgrade() -> None:
    op.drop_table("vector_index_snapshots")
