"""Each connection's anomaly detector state, for the replica that takes it over
(anomaly/baseline_store.py).

Revision ID: 0021
Revises: 0020
"""

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "anomaly_baselines",
        sa.Column("connection_id", sa.String(64), nullable=False),
        sa.Column("state", sa.JSON, nullable=False),
        sa.Column("saved_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("connection_id", name=op.f("pk_anomaly_baselines")),
    )


def downgrade() -> None:
    op.drop_table("anomaly_baselines")
