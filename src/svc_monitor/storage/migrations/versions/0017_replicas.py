"""Replicas sharing this storage: one row per running process (replicas/store.py).

Revision ID: 0017
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "replicas",
        sa.Column("id", sa.String(120), nullable=False),
        sa.Column("address", sa.String(300), nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("started_at", sa.BigInteger, nullable=False),
        sa.Column("heartbeat_at", sa.BigInteger, nullable=False),
        sa.Column("polled_connections", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_replicas")),
    )


def downgrade() -> None:
    op.drop_table("replicas")
