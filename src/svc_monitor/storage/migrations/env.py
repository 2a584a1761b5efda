"""Alembic environment: always handed a live connection by storage.migrate."""

from alembic import context

from svc_monitor.storage.metadata import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("migrations run through svc_monitor.storage.migrate, with a connection")

# render_as_batch: SQLite can only ALTER by copying the table; Alembic does that for us.
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
