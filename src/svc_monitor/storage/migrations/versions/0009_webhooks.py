"""Webhooks and their deliveries (the deliveries table is also the retry queue).

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhooks",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("secret", sa.Text, nullable=True),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("events", sa.Text, nullable=False),
        sa.Column("headers", sa.Text, nullable=False),
        sa.Column("retry_policy", sa.Text, nullable=False),
        sa.Column("delivery_config", sa.Text, nullable=False),
        sa.Column("alert_config", sa.Text, nullable=False),
        sa.Column("thresholds", sa.Text, nullable=False),
        sa.Column("connection_id", sa.String(64), nullable=True),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhooks")),
    )
    op.create_index(op.f("ix_webhooks_connection_id"), "webhooks", ["connection_id"])
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("public_id", sa.String(36), nullable=False),
        sa.Column("webhook_id", sa.String(36), nullable=False),
        sa.Column("connection_id", sa.String(64), nullable=True),
        sa.Column("event_type", sa.String(64), nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("status_code", sa.Integer, nullable=True),
        sa.Column("response_body", sa.Text, nullable=True),
        sa.Column("error", sa.String(500), nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("max_attempts", sa.Integer, nullable=False),
        sa.Column("duration_ms", sa.Integer, nullable=True),
        sa.Column("captured_at", sa.BigInteger, nullable=False),
        sa.Column("completed_at", sa.BigInteger, nullable=True),
        sa.Column("next_retry_at", sa.BigInteger, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
        sa.UniqueConstraint("public_id", name=op.f("uq_webhook_deliveries_public_id")),
    )
    op.create_index("ix_webhook_deliveries_webhook", "webhook_deliveries", ["webhook_id", "id"])
    op.create_index(
        "ix_webhook_deliveries_queue", "webhook_deliveries", ["status", "next_retry_at"]
    )
    op.create_index(
        "ix_webhook_deliveries_connection_time",
        "webhook_deliveries",
        ["connection_id", "captured_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_webhook_deliveries_connection_time", table_name="webhook_deliveries")
    op.drop_index("ix_webhook_deliveries_queue", table_name="webhook_deliveries")
    op.drop_index("ix_webhook_deliveries_webhook", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_index(op.f("ix_webhooks_connection_id"), table_name="webhooks")
    op.drop_table("webhooks")
