"""The cluster poll kind: every other node of a cluster connection, at the INFO cadence."""

from svc_monitor.cluster.service import ClusterService
from svc_monitor.config import Settings
from svc_monitor.polling.models import PollKind
from svc_monitor.runtime_settings.schemas import RuntimeSettingsValues


def cluster_kind(clusters: ClusterService) -> PollKind:
    return PollKind(
        name="cluster", interval_ms=_interval, poll=clusters.poll, forget=clusters.forget
    )


def _interval(values: RuntimeSettingsValues, _: Settings) -> int:
    # Nodes are polled as often as the seed, so cluster views stay as fresh as its own.
    return values.anomalyPollIntervalMs
