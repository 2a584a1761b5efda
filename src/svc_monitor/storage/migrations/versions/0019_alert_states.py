"""The alerts firing now, for the replica that takes a connection over
(detection/alerts/store.py).

Revision ID: 0019
Revises: 0018
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "alert_states",
        sa.Column("connection_id", sa.String(64), nullable=False),
        sa.Column("alert", sa.String(200), nullable=False),
        sa.Column("since", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("connection_id", "alert", name=op.f("pk_alert_states")),
    )


def downgrade() -> None:
    op.drop_table("alert_states")
