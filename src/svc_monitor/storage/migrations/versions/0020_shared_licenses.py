"""The offline licence activated through the API, read by every replica
(licensing/store.py).

Revision ID: 0020
Revises: 0019
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "shared_licenses",
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("token", sa.Text, nullable=True),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("kind", name=op.f("pk_shared_licenses")),
    )


def downgrade() -> None:
    op.drop_table("shared_licenses")
