"""Which push connection a pushed ResourceMetrics belongs to (otlp/ingest/identity.py):
`service.instance.id` as host:port or Valkey Admin's `10-0-0-1-6379`, else
`server.address` + `server.port`, else nothing."""

import uuid
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import KeyValue

from svc_monitor.connections.models import Connection, Source
from svc_monitor.otlp.ingest.identity import (
    AddressBook,
    PushedAddress,
    parse_instance_id,
    resource_address,
)
from tests.fixtures.app import AppFactory

# --- units ---


def attributes(**values: Any) -> list[KeyValue]:
    """Resource attributes; keyword names use `_` for `.` (service_instance_id)."""
    found = []
    for name, value in values.items():
        attribute = KeyValue(key=name.replace("_", "."))
        if isinstance(value, bool) or value is None:
            raise TypeError(name)
        if isinstance(value, int):
            attribute.value.int_value = value
        elif isinstance(value, float):
            attribute.value.double_value = value
        else:
            attribute.value.string_value = value
        found.append(attribute)
    return found


def connection(host: str, port: int, source: Source = "push", name: str = "c") -> Connection:
    return Connection(
        id=f"{source}-{host}-{port}",
        name=name,
        host=host,
        port=port,
        username="default",
        password=None,
        tls=False,
        db=0,
        db_type="auto",
        ssh_tunnel=None,
        is_default=False,
        created_at=0,
        updated_at=0,
        source=source,
    )


class TestParseInstanceId:
    @pytest.mark.parametrize(
        ("text", "host", "port"),
        [
            ("10.0.0.1:6379", "10.0.0.1", 6379),
            ("cache-1.internal:6380", "cache-1.internal", 6380),
            ("[::1]:6379", "::1", 6379),
            ("[2001:db8::7]:7000", "2001:db8::7", 7000),
            ("  10.0.0.1:6379\n", "10.0.0.1", 6379),
            ("10.0.0.1:65535", "10.0.0.1", 65535),
            ("10.0.0.1:1", "10.0.0.1", 1),
        ],
    )
    def test_host_port(self, text: str, host: str, port: int):
        assert parse_instance_id(text) == PushedAddress(host, port)

    def test_valkey_admins_host_port_form(self):
        """The port is after the last `-`; the host stays sanitised, to be compared with
        registered hosts sanitised the same way."""
        assert parse_instance_id("10-0-0-1-6379") == PushedAddress("10-0-0-1", 6379, True)
        assert parse_instance_id("cache-1-internal-6380") == PushedAddress(
            "cache-1-internal", 6380, True
        )

    @pytest.mark.parametrize(
        "text",
        [
            "10.0.0.1:0",
            "10.0.0.1:70000",
            "10.0.0.1:65536",
            "10.0.0.1:06379",
            "10.0.0.1:+6379",
            "10.0.0.1:-1",
            "10.0.0.1:",
            ":6379",
            "10-0-0-1-0",
            "10-0-0-1-70000",
            "10-0-0-1-06379",
            "10-0-0-1-",
            "-6379",
            "10.0.0.1-6379",  # the dashed form never keeps a dot
            "6379",
            "",
            "redis",
        ],
    )
    def test_what_names_no_port_is_refused(self, text: str):
        assert parse_instance_id(text) is None

    def test_the_sdks_random_uuid_names_nothing(self):
        """The OTel SDK's default service.instance.id: dashes, but no port after them."""
        for _ in range(200):
            assert parse_instance_id(str(uuid.uuid4())) is None


class TestResourceAddress:
    def test_service_instance_id_comes_first(self):
        found = resource_address(
            attributes(
                service_instance_id="10.0.0.1:6379", server_address="10.0.0.2", server_port=6380
            )
        )
        assert found == PushedAddress("10.0.0.1", 6379)

    def test_a_uuid_instance_id_falls_back_to_server_address_and_port(self):
        found = resource_address(
            attributes(
                service_instance_id=str(uuid.uuid4()),
                server_address="10.0.0.2",
                server_port="6380",
            )
        )
        assert found == PushedAddress("10.0.0.2", 6380)

    @pytest.mark.parametrize(
        "port",
        [pytest.param("6379", id="string"), pytest.param(6379, id="int"), " 6379 "],
    )
    def test_server_port_as_a_string_or_an_int(self, port: str | int):
        """The Collector's redisreceiver sends a string; semconv says int."""
        found = resource_address(attributes(server_address="cache.internal", server_port=port))
        assert found == PushedAddress("cache.internal", 6379)

    def test_a_bracketed_ipv6_server_address(self):
        found = resource_address(attributes(server_address="[::1]", server_port=6379))
        assert found == PushedAddress("::1", 6379)

    @pytest.mark.parametrize(
        "port",
        [0, 70000, "0", "70000", "06379", "-1", "", "port", 6379.0],
    )
    def test_a_server_port_that_is_no_port_identifies_nothing(self, port: str | int | float):
        assert resource_address(attributes(server_address="10.0.0.1", server_port=port)) is None

    def test_an_address_without_a_port_identifies_nothing(self):
        assert resource_address(attributes(server_address="10.0.0.1")) is None
        assert resource_address(attributes(server_port=6379)) is None

    def test_no_attributes_identify_nothing(self):
        assert resource_address([]) is None
        assert resource_address(attributes(service_name="cache")) is None

    def test_an_unparsable_id_without_a_fallback_identifies_nothing(self):
        assert resource_address(attributes(service_instance_id=str(uuid.uuid4()))) is None
        assert resource_address(attributes(service_instance_id="10.0.0.1:0")) is None


class TestAddressBook:
    def test_the_valkey_admin_form_finds_the_registered_address(self):
        registered = connection("10.0.0.1", 6379)
        book = AddressBook([registered, connection("10.0.0.2", 6379)])
        assert book.find(PushedAddress("10-0-0-1", 6379, True)) is registered
        assert book.find(PushedAddress("10.0.0.1", 6379)) is registered

    def test_the_port_must_match(self):
        book = AddressBook([connection("10.0.0.1", 6379)])
        assert book.find(PushedAddress("10-0-0-1", 6380, True)) is None
        assert book.find(PushedAddress("10.0.0.1", 6380)) is None

    def test_a_dotted_address_never_matches_a_dashed_host(self):
        """Only the dashed form is compared after sanitising."""
        book = AddressBook([connection("10-0-0-1", 6379)])
        assert book.find(PushedAddress("10.0.0.1", 6379)) is None

    def test_host_names_compare_without_case(self):
        registered = connection("Cache-1.Internal", 6379)
        book = AddressBook([registered])
        assert book.find(PushedAddress("cache-1.internal", 6379)) is registered
        found = parse_instance_id("CACHE-1-INTERNAL-6379")
        assert found is not None
        assert book.find(found) is registered

    def test_ipv6_in_either_form(self):
        registered = connection("::1", 6379)
        book = AddressBook([registered])
        by_colon = parse_instance_id("[::1]:6379")
        assert by_colon is not None
        assert book.find(by_colon) is registered

    @pytest.mark.parametrize("push_first", [True, False])
    def test_a_push_connection_wins_an_address_it_shares_with_a_polled_one(self, push_first: bool):
        push, poll = connection("10.0.0.1", 6379, "push"), connection("10.0.0.1", 6379, "poll")
        book = AddressBook([push, poll] if push_first else [poll, push])
        assert book.find(PushedAddress("10.0.0.1", 6379)) is push
        assert book.find(PushedAddress("10-0-0-1", 6379, True)) is push

    def test_an_empty_book_finds_nothing(self):
        assert AddressBook().find(PushedAddress("10.0.0.1", 6379)) is None


# --- through the receiver ---


def _resource(request: ExportMetricsServiceRequest, used_memory: int, **identity: Any) -> None:
    resource_metrics = request.resource_metrics.add()
    resource_metrics.resource.attributes.extend(attributes(**identity))
    metric = resource_metrics.scope_metrics.add().metrics.add(name="redis.memory.used")
    metric.gauge.data_points.add(as_int=used_memory)


async def test_pushed_points_reach_the_connection_they_identify(memory_app_factory: AppFactory):
    """Valkey Admin's `10-0-0-1-6379` finds the push connection registered as
    10.0.0.1:6379; an SDK's random service.instance.id falls back to server.address and
    server.port (string or int)."""
    async with memory_app_factory() as running:
        client = running.client
        ids = {}
        for name, host, port in [
            ("admin", "10.0.0.1", 6379),
            ("sdk-string", "10.0.0.2", 6380),
            ("sdk-int", "cache.internal", 7000),
        ]:
            created = await client.post(
                "/api/connections",
                json={"source": "push", "name": name, "host": host, "port": port},
            )
            assert created.status_code == 201, created.text
            ids[name] = created.json()["id"]
        request = ExportMetricsServiceRequest()
        _resource(request, 111, service_instance_id="10-0-0-1-6379")
        _resource(
            request,
            222,
            service_instance_id=str(uuid.uuid4()),
            server_address="10.0.0.2",
            server_port="6380",
        )
        _resource(
            request,
            333,
            service_instance_id=str(uuid.uuid4()),
            server_address="CACHE.internal",
            server_port=7000,
        )
        _resource(request, 444, service_instance_id=str(uuid.uuid4()))
        answer = await client.post(
            "/v1/external/metrics",
            content=request.SerializeToString(),
            headers={"content-type": "application/x-protobuf"},
        )
        assert answer.status_code == 200
        for name, used_memory in [("admin", 111), ("sdk-string", 222), ("sdk-int", 333)]:
            info = await client.get("/api/metrics/info", headers={"X-Connection-Id": ids[name]})
            assert info.status_code == 200, info.text
            assert info.json()["sections"]["memory"] == {"used_memory": used_memory}, name
            shown = (await client.get(f"/api/connections/{ids[name]}")).json()
            assert shown["engine"]["status"] == "connected"
        response = ExportMetricsServiceResponse.FromString(answer.content)
        assert response.partial_success.error_message == "unidentified=1"
