"""Columns that mean the same thing in many tables, each written once."""

from typing import Any

from sqlalchemy import Column, String

# connections.id is at most this long, and so is every connection_id that names one.
CONNECTION_ID_LENGTH = 64


def connection_id_column(**options: Any) -> Column[str]:
    """The `connection_id` column: the connection a row is about."""
    return Column("connection_id", String(CONNECTION_ID_LENGTH), **options)
