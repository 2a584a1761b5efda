"""Push connections (OTLP): a connection's source, and commandstats without usec.

A pushed instance may send `cmd.calls` without `cmd.usec`: its samples keep the call
counts and store the usec columns as null.

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("connections") as batch:
        batch.add_column(sa.Column("source", sa.String(8), nullable=False, server_default="poll"))
    with op.batch_alter_table("commandstats_samples") as batch:
        for name, kind in (
            ("usec", sa.BigInteger()),
            ("usec_per_call", sa.Float()),
            ("usec_delta", sa.BigInteger()),
        ):
            batch.alter_column(name, existing_type=kind, nullable=True)


def downgrade() -> None:
    with op.batch_alter_table("commandstats_samples") as batch:
        for name, kind in (
            ("usec", sa.BigInteger()),
            ("usec_per_call", sa.Float()),
            ("usec_delta", sa.BigInteger()),
        ):
            batch.alter_column(name, existing_type=kind, nullable=False)
    with op.batch_alter_table("connections") as batch:
        batch.drop_column("source")
