"""Per-connection, per-metric capacity forecast settings (forecast/store.py).

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "metric_forecast_settings",
        sa.Column("connection_id", sa.String(64), nullable=False),
        sa.Column("metric_kind", sa.String(32), nullable=False),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("ceiling", sa.Float, nullable=True),
        sa.Column("rolling_window_ms", sa.BigInteger, nullable=False),
        sa.Column("alert_threshold_ms", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint(
            "connection_id", "metric_kind", name=op.f("pk_metric_forecast_settings")
        ),
    )


def downgrade() -> None:
    op.drop_table("metric_forecast_settings")
