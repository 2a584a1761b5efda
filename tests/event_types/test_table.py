"""The event table: each type declared once and whole, and what a bus event turns into."""

import json
from typing import Any

import pytest

from svc_monitor.detection.alerts.schemas import Thresholds
from svc_monitor.event_types.access import AclDenied
from svc_monitor.event_types.base import EventType, Measured, Occurrence
from svc_monitor.event_types.instance import InstanceUp
from svc_monitor.event_types.readings import ClientsReading, MemoryReading
from svc_monitor.event_types.table import AREAS, BY_NAME, EVENT_TYPES, candidates

ENTRIES = pytest.mark.parametrize("entry", EVENT_TYPES, ids=[e.name for e in EVENT_TYPES])


def payload_of(entry: EventType[Any]) -> dict[str, Any]:
    found = entry.candidate(entry.example)
    assert found is not None, f"{entry.name}: its example sends nothing"
    if isinstance(found, Occurrence):
        return found.data
    level = Thresholds().level(found.threshold, automatic=found.automatic)
    assert level is not None
    return found.data(level)


class TestDeclarations:
    def test_names_and_places_in_the_list_are_unique(self):
        assert len(BY_NAME) == len(EVENT_TYPES)
        assert len({e.order for e in EVENT_TYPES}) == len(EVENT_TYPES)

    def test_each_type_is_listed_by_the_module_of_its_bus_event(self):
        # The bus event, its builder and its entry live in one file, so adding a type
        # touches that file, its detector and its test.
        for area in AREAS:
            for entry in area.EVENT_TYPES:
                assert entry.source.__module__ == area.__name__, entry.name

    @ENTRIES
    def test_a_threshold_names_a_field_of_thresholds(self, entry: EventType[Any]):
        if entry.threshold is not None:
            assert entry.threshold in Thresholds.model_fields

    @ENTRIES
    def test_the_example_builds_its_own_notification(self, entry: EventType[Any]):
        found = entry.candidate(entry.example)
        assert found is not None
        assert found.event_type == entry.name
        assert isinstance(found, Measured) == (entry.threshold is not None)
        assert entry.name in [c.event_type for c in candidates(entry.example)]

    @ENTRIES
    def test_the_payload_is_json_with_a_message(self, entry: EventType[Any]):
        data = payload_of(entry)
        assert isinstance(data["message"], str)
        assert json.loads(json.dumps(data)) == data

    @ENTRIES
    def test_a_summary_is_one_line(self, entry: EventType[Any]):
        assert entry.summary
        assert "\n" not in entry.summary
        assert "|" not in entry.summary  # a cell of the API docs' table


class TestCandidates:
    def test_a_denial_is_an_acl_violation_then_its_audit_record(self):
        denied = AclDenied(
            connection_id="c",
            reason="key",
            username="u",
            client_info="addr=1.2.3.4:5",
            context="toplevel",
            object="k",
            count=2,
            timestamp_s=10,
        )
        assert [c.event_type for c in candidates(denied)] == [
            "acl.violation",
            "audit.policy.violation",
        ]

    def test_a_failed_auth_is_only_client_blocked(self):
        denied = AclDenied(
            connection_id="c",
            reason="auth",
            username="u",
            client_info="addr=1.2.3.4:5",
            context="toplevel",
            object="AUTH",
            count=1,
            timestamp_s=10,
        )
        assert [c.event_type for c in candidates(denied)] == ["client.blocked"]

    def test_memory_under_noeviction_is_memory_critical_then_compliance(self):
        reading = MemoryReading(
            connection_id="c", used_memory=95, maxmemory=100, maxmemory_policy="noeviction"
        )
        assert [c.event_type for c in candidates(reading)] == [
            "memory.critical",
            "compliance.alert",
        ]

    def test_memory_without_a_limit_sends_nothing(self):
        reading = MemoryReading(
            connection_id="c", used_memory=95, maxmemory=0, maxmemory_policy="noeviction"
        )
        assert candidates(reading) == []

    def test_clients_without_maxclients_can_only_spike(self):
        reading = ClientsReading(connection_id="c", connected_clients=5, maxclients=None)
        assert [c.event_type for c in candidates(reading)] == ["connection.spike"]

    def test_the_first_contact_announces_no_recovery(self):
        assert candidates(InstanceUp(connection_id="c")) == []


class TestLevels:
    def test_a_spike_level_of_zero_is_the_automatic_baseline(self):
        reading = ClientsReading(
            connection_id="c", connected_clients=50, maxclients=None, spike_level=30.0
        )
        (spike,) = candidates(reading)
        assert isinstance(spike, Measured)
        assert Thresholds().level(spike.threshold, automatic=spike.automatic) == 30.0
        given = Thresholds(connectionSpikeCount=40)
        assert given.level(spike.threshold, automatic=spike.automatic) == 40.0

    def test_no_level_while_the_baseline_learns(self):
        reading = ClientsReading(connection_id="c", connected_clients=50, maxclients=None)
        (spike,) = candidates(reading)
        assert isinstance(spike, Measured)
        assert Thresholds().level(spike.threshold, automatic=spike.automatic) is None
