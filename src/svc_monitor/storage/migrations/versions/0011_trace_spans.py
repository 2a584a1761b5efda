"""Trace spans from POST /v1/traces (traces/store.py), kept like other history.

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "trace_spans",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("trace_id", sa.String(32), nullable=False),
        sa.Column("span_id", sa.String(16), nullable=False),
        sa.Column("parent_span_id", sa.String(16), nullable=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("scope_name", sa.Text, nullable=False),
        sa.Column("service_name", sa.Text, nullable=True),
        sa.Column("kind", sa.SmallInteger, nullable=False),
        sa.Column("start_time_unix_nano", sa.BigInteger, nullable=False),
        sa.Column("end_time_unix_nano", sa.BigInteger, nullable=False),
        sa.Column("captured_at", sa.BigInteger, nullable=False),
        sa.Column("duration_ns", sa.BigInteger, nullable=False),
        sa.Column("status_code", sa.SmallInteger, nullable=False),
        sa.Column("status_message", sa.Text, nullable=True),
        sa.Column("attributes", sa.Text, nullable=False),
        sa.Column("events", sa.Text, nullable=False),
        sa.Column("resource_attributes", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_trace_spans")),
        sa.UniqueConstraint("trace_id", "span_id", name=op.f("uq_trace_spans_trace_id_span_id")),
    )
    op.create_index("ix_trace_spans_captured_at", "trace_spans", ["captured_at"])


def downgrade() -> None:
    op.drop_index("ix_trace_spans_captured_at", table_name="trace_spans")
    op.drop_table("trace_spans")
