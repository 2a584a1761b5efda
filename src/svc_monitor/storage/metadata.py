"""The one MetaData every store's tables hang on, so Alembic can compare the
migrations with the code (tests/storage/test_database.py, TestMigrations)."""

from sqlalchemy import MetaData

# Explicit names keep constraint names identical on SQLite and PostgreSQL, which
# Alembic needs to alter them later.
metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)
