"""Our fast text writer says what prometheus_client's `generate_latest` says."""

import math

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
)
from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from svc_monitor.prometheus.catalogue import Family
from svc_monitor.prometheus.collector import Rows
from svc_monitor.prometheus.text import render


class _Registry:
    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> list[Metric]:
        return self._families


def parsed(
    text: str,
) -> list[tuple[str, str, str, list[tuple[str, tuple[tuple[str, str], ...], float]]]]:
    found = []
    for family in text_string_to_metric_families(text):
        samples = [
            (s.name, tuple(sorted(s.labels.items())), s.value)
            for s in family.samples
            if not math.isnan(s.value)
        ]
        found.append((family.name, family.type, family.documentation, samples))
    return found


def families() -> list[Metric]:
    gauge = GaugeMetricFamily(
        "svc_g", 'Help with a \\ backslash\nand a "line".', labels=["connection", "pattern"]
    )
    gauge.add_metric(["127.0.0.1:1", 'GET "user:*"'], 1.5)
    gauge.add_metric(["127.0.0.1:1", "back\\slash\nnew line"], 7)
    gauge.add_metric(["127.0.0.1:2", "plain"], math.inf)
    gauge.add_metric(["127.0.0.1:3", "plain"], -math.inf)
    gauge.add_metric(["127.0.0.1:4", "plain"], 123456789012345)
    counter = CounterMetricFamily("svc_c", "A counter.", labels=["connection"])
    counter.add_metric(["127.0.0.1:1"], 42)
    info = InfoMetricFamily("svc_instance", "Info.", labels=["connection"])
    info.add_metric(["127.0.0.1:1"], {"type": "valkey", "version": "9.1.0", "role": "master"})
    histogram = HistogramMetricFamily("svc_h_seconds", "A histogram.", labels=["kind"])
    histogram.add_metric(["info"], [("0.1", 3), ("+Inf", 5)], 0.7)
    plain = GaugeMetricFamily("svc_unlabelled", "No labels.", value=0.25)
    return [gauge, counter, info, histogram, plain]


def test_the_same_families_samples_and_help_as_generate_latest():
    ours = render(families()).decode()
    theirs = generate_latest(_Registry(families())).decode()
    assert parsed(ours) == parsed(theirs)
    assert "# TYPE svc_c_total counter" in ours
    assert "# TYPE svc_instance_info gauge" in ours


def test_not_a_number_is_written_as_prometheus_reads_it():
    gauge = GaugeMetricFamily("svc_n", "NaN.", value=math.nan)
    assert render([gauge]).decode().endswith("svc_n NaN\n")


def _rows() -> list[Rows]:
    """The collector's own families, labelled by the connection alone, by one more label,
    and by two more, with values that need escaping and numbers of every kind."""
    single = Rows(Family("svc_s", "gauge", "One label."))
    single.add("127.0.0.1:1", 1.5)
    single.add('odd"host\\name:2', 7)
    single.add("127.0.0.1:3", math.inf)
    single.add("127.0.0.1:4", -math.inf)
    single.add("127.0.0.1:5", 123456789012345)
    single.add("127.0.0.1:6", 0.1)
    pair = Rows(Family("svc_p", "counter", "Two labels.", ("command",)))
    pair.add_metric(["127.0.0.1:1", "get"], 42)
    pair.add_metric(['odd"host', 'GET "user:*"'], 2.5)
    pair.add_metric(["127.0.0.1:1", "back\\slash\nnew line"], -math.inf)
    three = Rows(Family("svc_t", "gauge", "Three labels.", ("db", "kind")))
    three.add_metric(["127.0.0.1:1", "db0", 'k"1'], 3.0)
    return [single, pair, three]


def test_the_collectors_rows_read_as_their_prometheus_client_families_do():
    ours = render(_rows()).decode()
    theirs = generate_latest(_Registry([rows.metric() for rows in _rows()])).decode()
    assert parsed(ours) == parsed(theirs)
    assert 'svc_s{connection="odd\\"host\\\\name:2"} 7.0\n' in ours
    assert 'svc_p_total{connection="127.0.0.1:1",command="get"} 42.0\n' in ours
    assert 'svc_s{connection="127.0.0.1:3"} +Inf\n' in ours
