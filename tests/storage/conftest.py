from collections.abc import AsyncIterator
from typing import Any

import pytest

from svc_monitor.storage.database import Database
from tests.fixtures.app import make_settings


@pytest.fixture
async def db(storage: dict[str, Any]) -> AsyncIterator[Database]:
    """A migrated, empty database on each storage backend in turn."""
    database = Database.from_settings(make_settings(**storage))
    await database.migrate()
    yield database
    await database.close()
