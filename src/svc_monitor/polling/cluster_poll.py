"""The cluster poll kind: every other node of a cluster connection, at the INFO cadence."""

from svc_monitor.cluster.service import ClusterService
from svc_monitor.config import Settings
from svc_monitor.polling.models import PollKind, PollTarget
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues


def cluster_kind(clusters: ClusterService) -> PollKind:
    async def poll(target: PollTarget) -> None:
        await clusters.poll(target.connection, target.client, target.identity)

    return PollKind(
        name="cluster",
        interval_ms=_interval,
        poll=poll,
        forget=clusters.forget,
        # Not detected yet (or down): the pass runs, and finds nothing to do.
        applies=lambda target: target.identity is None or target.identity.cluster_enabled,
    )


def _interval(values: RuntimeSettingsValues, _: Settings) -> int:
    # Nodes are polled as often as the seed, so cluster views stay as fresh as its own.
    return values.anomalyPollIntervalMs
