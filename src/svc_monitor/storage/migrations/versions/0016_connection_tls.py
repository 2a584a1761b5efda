"""Per-connection TLS: CA certificates, a client certificate and its key, insecure mode.

`tls_key` holds the key sealed like `password` (connections/secrets.py); the PEM
certificates are stored as given. Existing connections keep verifying (tls_insecure false).

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("connections") as batch:
        batch.add_column(sa.Column("tls_ca_cert", sa.Text, nullable=True))
        batch.add_column(sa.Column("tls_cert", sa.Text, nullable=True))
        batch.add_column(sa.Column("tls_key", sa.Text, nullable=True))
        batch.add_column(
            sa.Column("tls_insecure", sa.Boolean, nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("connections") as batch:
        for name in ("tls_insecure", "tls_key", "tls_cert", "tls_ca_cert"):
            batch.drop_column(name)
