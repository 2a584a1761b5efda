"""Connections, runtime settings and the service's own key-value facts.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "connections",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("port", sa.Integer, nullable=False),
        sa.Column("username", sa.String(255), nullable=False),
        sa.Column("password", sa.Text, nullable=True),
        sa.Column("tls", sa.Boolean, nullable=False),
        sa.Column("db", sa.Integer, nullable=False),
        sa.Column("db_type", sa.String(16), nullable=False),
        sa.Column("ssh_tunnel", sa.Text, nullable=True),
        sa.Column("is_default", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_connections")),
    )
    op.create_table(
        "runtime_settings",
        sa.Column("id", sa.Integer, autoincrement=False, nullable=False),
        sa.Column("values", sa.Text, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runtime_settings")),
    )
    op.create_table(
        "app_meta",
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_app_meta")),
    )


def downgrade() -> None:
    op.drop_table("app_meta")
    op.drop_table("runtime_settings")
    op.drop_table("connections")
