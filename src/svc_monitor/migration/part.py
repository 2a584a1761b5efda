"""The migration domain's part: analysis jobs between two connections, stored and served."""

from collections.abc import Sequence

from svc_monitor.info_history.schemas import MemorySnapshot
from svc_monitor.migration.api import paid, router
from svc_monitor.migration.service import MigrationService
from svc_monitor.migration.store import MigrationStore
from svc_monitor.parts import Part, Registry, Task
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

    async def record(action: str, job_id: str, details: dict[str, object]) -> None:
        await s.auth.activity.record(
            action, actor_id=None, actor_name="svc-monitor", object_id=job_id, details=details
        )

    migration = registry.add(
        MigrationService,
        MigrationService(
            MigrationStore(s.db),
            s.connections,
            s.live_state,
            memory_samples,
            s.bus,
            record,
            clock=s.clock,
            shared=s.db.shared,
        ),
    )
    return Part(
        name="migration",
        routers=(router, paid),
        tasks=(Task("migration jobs", migration.watch),),
        stop=migration.stop,
    )
