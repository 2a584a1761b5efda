"""MONITOR capture sessions and their lines.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "monitor_sessions",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("connection_id", sa.String(64), nullable=False),
        sa.Column("captured_at", sa.BigInteger, nullable=False),
        sa.Column("ended_at", sa.BigInteger, nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("duration_ms", sa.Integer, nullable=False),
        sa.Column("max_lines", sa.Integer, nullable=False),
        sa.Column("max_bytes", sa.BigInteger, nullable=False),
        sa.Column("line_count", sa.Integer, nullable=False),
        sa.Column("byte_count", sa.BigInteger, nullable=False),
        sa.Column("end_reason", sa.String(300), nullable=True),
        sa.Column("requested_by", sa.String(100), nullable=True),
        sa.Column("redacted", sa.Boolean, nullable=False),
        sa.Column("heartbeat_at", sa.BigInteger, nullable=False),
        sa.Column("stop_requested_by", sa.String(120), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_monitor_sessions")),
    )
    op.create_index(
        "ix_monitor_sessions_connection_time", "monitor_sessions", ["connection_id", "captured_at"]
    )
    op.create_table(
        "monitor_lines",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("session_id", sa.Integer, nullable=False),
        sa.Column("connection_id", sa.String(64), nullable=False),
        sa.Column("captured_at", sa.BigInteger, nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("ts", sa.String(32), nullable=True),
        sa.Column("ts_ms", sa.BigInteger, nullable=True),
        sa.Column("db", sa.Integer, nullable=True),
        sa.Column("client", sa.String(300), nullable=True),
        sa.Column("command", sa.String(64), nullable=True),
        sa.Column("args", sa.Text, nullable=True),
        sa.Column("arg_count", sa.Integer, nullable=False),
        sa.Column("shortened", sa.Boolean, nullable=False),
        sa.Column("raw", sa.Text, nullable=True),
        sa.Column("size", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_monitor_lines")),
        sa.UniqueConstraint("session_id", "seq", name=op.f("uq_monitor_lines_session_id_seq")),
    )
    op.create_index(
        "ix_monitor_lines_connection_time", "monitor_lines", ["connection_id", "captured_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_monitor_lines_connection_time", table_name="monitor_lines")
    op.drop_table("monitor_lines")
    op.drop_index("ix_monitor_sessions_connection_time", table_name="monitor_sessions")
    op.drop_table("monitor_sessions")
