"""The migration domain's part: analysis jobs between two connections, stored and served."""

from collections.abc import Sequence

from svc_monitor.info_history.schemas import MemorySnapshot
from svc_monitor.migration.api import router
from svc_monitor.migration.service import MigrationService
from svc_monitor.migration.store import MigrationStore
from svc_monitor.parts import Part, Registry
from svc_monitor.services import Services

# The baseline averages at most this many memory snapshots, from the start of its window:
# enough for a steady figure, and a bounded read however often the instance is sampled.
BASELINE_SAMPLES = 5_000


def part(registry: Registry) -> Part:
    s = registry.get(Services)

    async def memory_samples(connection_id: str, since: int) -> Sequence[MemorySnapshot]:
        return await s.info_history.memory_snapshots(
            connection_id, since=since, until=None, limit=BASELINE_SAMPLES, offset=0
        )

    migration = registry.add(
        MigrationService,
        MigrationService(MigrationStore(s.db), s.connections, memory_samples, clock=s.clock),
    )
    return Part(name="migration", routers=(router,), start=migration.settle, stop=migration.stop)
