"""When each webhook delivery's event happened, and the delivery that superseded it: a
newer delivery of the same state supersedes an older one (webhooks/states.py).

Revision ID: 0023
Revises: 0022
"""

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.add_column(sa.Column("event_at", sa.BigInteger, nullable=True))
        batch.add_column(sa.Column("superseded_by", sa.String(36), nullable=True))
    # Rows queued before: their event happened when they were created, give or take the
    # milliseconds the dispatcher took.
    op.execute("UPDATE webhook_deliveries SET event_at = captured_at")


def downgrade() -> None:
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.drop_column("superseded_by")
        batch.drop_column("event_at")
