"""Personal tokens members make: the most a token acts as (`api_tokens.max_role`), and
revoked tokens among the ends other replicas read (`auth_revocations.token_id`).

Existing tokens keep following their user's current role (max_role null).

Revision ID: 0022
Revises: 0021
"""

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("max_role", sa.String(16), nullable=True))
    with op.batch_alter_table("auth_revocations") as batch:
        batch.add_column(sa.Column("token_id", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("auth_revocations") as batch:
        batch.drop_column("token_id")
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("max_role")
