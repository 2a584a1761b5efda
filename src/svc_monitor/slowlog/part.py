"""The slow-log domain's part: SLOWLOG and COMMANDLOG polled, kept and served."""

from svc_monitor.detection.config_watch import ConfigWatch
from svc_monitor.parts import Part, Registry
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.polling.log_polls import LogPoller
from svc_monitor.polling.models import PollKind
from svc_monitor.polling.size_log_gate import SizeLogGate
from svc_monitor.services import Services
from svc_monitor.slowlog.api import router
from svc_monitor.slowlog.service import SlowlogService
from svc_monitor.slowlog.store import HISTORY_TABLES, SlowlogStore


def part(registry: Registry) -> Part:
    services = registry.get(Services)
    slowlog = registry.add(
        SlowlogService, SlowlogService(SlowlogStore(services.db), services.connections)
    )

    def poll_kinds() -> list[PollKind]:
        live_state = services.live_state
        # The log size the engine is configured with, as the config watch last read it.
        gate = SizeLogGate(
            live_state,
            parameter=registry.get(ConfigWatch).parameter,
            resets=slowlog.commandlog_resets,
        )
        poller = LogPoller(slowlog, pipe=registry.get(Pipe), live_state=live_state, gate=gate)
        return list(poller.kinds())

    return Part(
        name="slowlog", routers=(router,), poll_kinds=poll_kinds, history_tables=HISTORY_TABLES
    )
