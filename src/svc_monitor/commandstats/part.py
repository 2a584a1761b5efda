"""The commandstats domain's part: INFO commandstats polled (or ridden), sampled, served."""

from svc_monitor.commandstats.api import router
from svc_monitor.commandstats.service import CommandstatsService
from svc_monitor.commandstats.store import HISTORY_TABLES, CommandstatsStore
from svc_monitor.parts import Part, Registry
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.commandstats_poll import CommandstatsPoller
from svc_monitor.polling.info_rides import InfoRider, InfoRides
from svc_monitor.polling.models import PollKind
from svc_monitor.services import Services


def part(registry: Registry) -> Part:
    services = registry.get(Services)
    commandstats = registry.add(
        CommandstatsService, CommandstatsService(CommandstatsStore(services.db))
    )
    pollers: list[CommandstatsPoller] = []

    def poller() -> CommandstatsPoller:
        if not pollers:
            pollers.append(CommandstatsPoller(registry.get(Pipe), services.settings))
        return pollers[0]

    def info_riders() -> list[InfoRider]:
        # Read along with INFO where the engine allows it (polling/info_rides.py).
        return [poller().rider()]

    def poll_kinds() -> list[PollKind]:
        return [poller().kind(registry.get(InfoRides))]

    return Part(
        name="commandstats",
        routers=(router,),
        facts_consumers=(commandstats,),
        info_riders=info_riders,
        poll_kinds=poll_kinds,
        sample_tables=HISTORY_TABLES,
    )
