"""OTLP export to a collector behind TLS, set up with the standard variables:
OTEL_EXPORTER_OTLP_CERTIFICATE (the CA to trust), _CLIENT_CERTIFICATE and _CLIENT_KEY
(for a collector that asks for client certificates), general and per signal with the
per-signal one first; files that cannot serve stop the start naming the variable, never
showing a key."""

import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trustme
from pydantic import ValidationError

from svc_monitor.config import describe_validation_error
from svc_monitor.otlp.export.exporter_options import signal_options
from svc_monitor.otlp.export.transport import OtlpTransport, PostResult
from tests.fixtures.app import make_settings, running_app
from tests.fixtures.otlp_receiver import LOGS, METRICS, OtlpReceiver, running_otlp_receiver
from tests.fixtures.servers import HOST


@dataclass(frozen=True)
class Pki:
    """A private CA that signed the collector's certificate, another CA nobody uses, and
    a client certificate from a third CA the collector trusts for clients."""

    server_ca: Path
    other_ca: Path
    client_cert: Path
    client_key: Path
    client_key_text: str
    server: ssl.SSLContext  # serves the collector's certificate, asks for none
    server_mtls: ssl.SSLContext  # also requires a client certificate from the client CA


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    folder = tmp_path_factory.mktemp("otlp-pki")
    server_ca, other_ca, client_ca = trustme.CA(), trustme.CA(), trustme.CA()
    issued = server_ca.issue_cert(HOST)
    client = client_ca.issue_cert("svc-monitor@example.test")
    server_ca.cert_pem.write_to_path(folder / "ca.pem")
    other_ca.cert_pem.write_to_path(folder / "other-ca.pem")
    client.cert_chain_pems[0].write_to_path(folder / "client.pem")
    client.private_key_pem.write_to_path(folder / "client-key.pem")
    plain = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    issued.configure_cert(plain)
    mtls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    issued.configure_cert(mtls)
    mtls.verify_mode = ssl.CERT_REQUIRED
    client_ca.configure_trust(mtls)
    return Pki(
        server_ca=folder / "ca.pem",
        other_ca=folder / "other-ca.pem",
        client_cert=folder / "client.pem",
        client_key=folder / "client-key.pem",
        client_key_text=client.private_key_pem.bytes().decode(),
        server=plain,
        server_mtls=mtls,
    )


@pytest.fixture
async def tls_receiver(pki: Pki) -> AsyncIterator[OtlpReceiver]:
    async with running_otlp_receiver(pki.server) as receiver:
        yield receiver


@pytest.fixture
async def mtls_receiver(pki: Pki) -> AsyncIterator[OtlpReceiver]:
    async with running_otlp_receiver(pki.server_mtls) as receiver:
        yield receiver


async def export_both(receiver: OtlpReceiver, **variables: Any) -> dict[str, PostResult]:
    """One metrics and one logs post, configured from `variables` as at start-up."""
    settings = make_settings(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.base_url, **variables)
    options = {s: signal_options(settings, s) for s in ("metrics", "logs")}
    transport = OtlpTransport(settings.OTEL_EXPORTER_OTLP_ENDPOINT, options=options)
    try:
        return {
            "metrics": await transport.post(METRICS, b""),
            "logs": await transport.post(LOGS, b""),
        }
    finally:
        await transport.close()


class TestServerCertificate:
    async def test_a_private_ca_is_trusted_only_when_certificate_names_it(
        self, pki: Pki, tls_receiver: OtlpReceiver
    ) -> None:
        untrusted = await export_both(tls_receiver)
        wrong = await export_both(tls_receiver, OTEL_EXPORTER_OTLP_CERTIFICATE=pki.other_ca)
        assert not untrusted["metrics"].ok
        assert not wrong["metrics"].ok
        assert "certificate" in (untrusted["metrics"].error or "").lower()
        assert tls_receiver.requests == []  # nothing reached the collector unverified
        trusted = await export_both(tls_receiver, OTEL_EXPORTER_OTLP_CERTIFICATE=pki.server_ca)
        assert trusted["metrics"].ok, trusted["metrics"].error
        assert trusted["logs"].ok, trusted["logs"].error
        assert [r.path for r in tls_receiver.requests] == [METRICS, LOGS]

    async def test_the_per_signal_certificate_wins_over_the_general_one(
        self, pki: Pki, tls_receiver: OtlpReceiver
    ) -> None:
        results = await export_both(
            tls_receiver,
            OTEL_EXPORTER_OTLP_CERTIFICATE=pki.other_ca,
            OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE=pki.server_ca,
        )
        assert results["logs"].ok, results["logs"].error
        assert not results["metrics"].ok
        assert [r.path for r in tls_receiver.requests] == [LOGS]


class TestClientCertificate:
    async def test_a_collector_requiring_client_certificates_takes_the_export_only_with_them(
        self, pki: Pki, mtls_receiver: OtlpReceiver
    ) -> None:
        trust = {"OTEL_EXPORTER_OTLP_CERTIFICATE": pki.server_ca}
        without = await export_both(mtls_receiver, **trust)
        assert not without["metrics"].ok
        assert not without["logs"].ok
        assert mtls_receiver.requests == []
        with_pair = await export_both(
            mtls_receiver,
            **trust,
            OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=pki.client_cert,
            OTEL_EXPORTER_OTLP_CLIENT_KEY=pki.client_key,
        )
        assert with_pair["metrics"].ok, with_pair["metrics"].error
        assert with_pair["logs"].ok, with_pair["logs"].error
        assert [r.path for r in mtls_receiver.requests] == [METRICS, LOGS]

    async def test_a_per_signal_client_pair_serves_that_signal_only(
        self, pki: Pki, mtls_receiver: OtlpReceiver
    ) -> None:
        results = await export_both(
            mtls_receiver,
            OTEL_EXPORTER_OTLP_CERTIFICATE=pki.server_ca,
            OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE=pki.client_cert,
            OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY=pki.client_key,
        )
        assert results["metrics"].ok, results["metrics"].error
        assert not results["logs"].ok
        for result in results.values():
            assert pki.client_key_text not in (result.error or "")
        assert [r.path for r in mtls_receiver.requests] == [METRICS]

    async def test_the_running_service_exports_metrics_over_mutual_tls(
        self, pki: Pki, mtls_receiver: OtlpReceiver
    ) -> None:
        settings = make_settings(
            DB_HOST="127.0.0.1",
            DB_PORT=9,  # nothing listens: the export carries our own families
            OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=f"{mtls_receiver.base_url}{METRICS}",
            OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE=str(pki.server_ca),
            OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=str(pki.client_cert),
            OTEL_EXPORTER_OTLP_CLIENT_KEY=str(pki.client_key),
            OTEL_METRICS_EXPORT_INTERVAL_MS=1000,
        )
        async with running_app(settings):
            arrived = (await mtls_receiver.wait_for(path=METRICS, within=15))[0]
        assert arrived.message is not None
        assert len(arrived.metrics.resource_metrics) >= 1


def refusal(**variables: Any) -> str:
    with pytest.raises(ValidationError) as refused:
        make_settings(**variables)
    return describe_validation_error(refused.value)  # the one line `serve` prints


class TestStartupChecks:
    @pytest.mark.parametrize(
        "variable",
        [
            "OTEL_EXPORTER_OTLP_CERTIFICATE",
            "OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE",
            "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE",
            "OTEL_EXPORTER_OTLP_CLIENT_KEY",
        ],
    )
    def test_a_missing_file_stops_the_start_naming_the_variable(
        self, variable: str, tmp_path: Path
    ) -> None:
        text = refusal(**{variable: tmp_path / "nowhere.pem"})
        assert text.startswith(f"{variable}: cannot read")

    def test_a_file_that_cannot_be_read_stops_the_start_naming_the_variable(
        self, pki: Pki, tmp_path: Path
    ) -> None:
        # A directory where the file should be: unreadable whoever runs the test (root
        # reads a file whatever its mode).
        text = refusal(OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY=tmp_path)
        assert text.startswith("OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY: cannot read")

    def test_a_key_given_as_the_ca_is_refused_without_showing_it(self, pki: Pki) -> None:
        text = refusal(OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE=pki.client_key)
        assert text == (
            "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE: holds a private key: give only CA "
            "certificates here (a client key goes in OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY)"
        )
        assert pki.client_key_text.splitlines()[1] not in text

    def test_a_certificate_given_as_the_key_is_refused(self, pki: Pki) -> None:
        text = refusal(OTEL_EXPORTER_OTLP_CLIENT_KEY=pki.client_cert)
        assert text.startswith("OTEL_EXPORTER_OTLP_CLIENT_KEY: must hold exactly one private key")

    def test_a_client_certificate_without_its_key_names_both(self, pki: Pki) -> None:
        text = refusal(OTEL_EXPORTER_OTLP_LOGS_CLIENT_CERTIFICATE=pki.client_cert)
        assert text == (
            "OTEL_EXPORTER_OTLP_CLIENT_KEY is required with "
            "OTEL_EXPORTER_OTLP_LOGS_CLIENT_CERTIFICATE"
        )

    def test_a_key_that_is_not_the_certificates_is_refused(self, pki: Pki, tmp_path: Path) -> None:
        stranger = tmp_path / "stranger-key.pem"
        trustme.CA().issue_cert("x.example").private_key_pem.write_to_path(stranger)
        text = refusal(
            OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=pki.client_cert,
            OTEL_EXPORTER_OTLP_CLIENT_KEY=stranger,
        )
        assert text == (
            "OTEL_EXPORTER_OTLP_CLIENT_KEY is not the private key of "
            "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"
        )
        assert stranger.read_text().splitlines()[1] not in text
