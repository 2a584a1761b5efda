"""CVE scans (cve/store.py): the last scan of each connection and its findings.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "cve_scans",
        sa.Column("connection_id", sa.String(64), nullable=False),
        sa.Column("engine", sa.String(16), nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("scanned_at", sa.BigInteger, nullable=False),
        sa.Column("dataset_generated", sa.String(10), nullable=False),
        sa.PrimaryKeyConstraint("connection_id", name=op.f("pk_cve_scans")),
    )
    op.create_table(
        "cve_findings",
        sa.Column("connection_id", sa.String(64), nullable=False),
        sa.Column("finding_id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("severity", sa.String(16), nullable=False),
        sa.Column("kev", sa.Boolean, nullable=False),
        sa.Column("cvss", sa.Float, nullable=True),
        sa.Column("fixed_in", sa.String(64), nullable=True),
        sa.Column("ghsa", sa.String(64), nullable=True),
        sa.Column("summary", sa.Text, nullable=False),
        sa.Column("first_seen_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("connection_id", "finding_id", name=op.f("pk_cve_findings")),
    )


def downgrade() -> None:
    op.drop_table("cve_findings")
    op.drop_table("cve_scans")
