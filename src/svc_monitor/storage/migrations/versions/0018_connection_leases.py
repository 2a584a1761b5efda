"""Which replica polls which connection: one lease per polled connection
(replicas/lease_store.py).

Revision ID: 0018
Revises: 0017
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "connection_leases",
        sa.Column("connection_id", sa.String(64), nullable=False),
        sa.Column("replica_id", sa.String(120), nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=False),
        sa.Column("claimed_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("connection_id", name=op.f("pk_connection_leases")),
    )
    op.create_index(op.f("ix_connection_leases_replica_id"), "connection_leases", ["replica_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_connection_leases_replica_id"), table_name="connection_leases")
    op.drop_table("connection_leases")
