"""Migration jobs: analyses, executions and validations (migration/store.py).

Revision ID: 0025
Revises: 0024
"""

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "migration_jobs",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("source_id", sa.String(64), nullable=False),
        sa.Column("target_id", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.Column("completed_at", sa.BigInteger),
        sa.Column("progress", sa.Float, nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("params", sa.JSON, nullable=False),
        sa.Column("state", sa.JSON, nullable=False),
        sa.Column("report", sa.JSON),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_migration_jobs")),
    )
    op.create_index("ix_migration_jobs_kind_created", "migration_jobs", ["kind", "created_at"])


def downgrade() -> None:
    op.drop_table("migration_jobs")
