"""The Add Connection dialog's TLS and SSH bastion sections in a real Chromium: each opens
with its box, and the SSH fields follow the chosen authentication method (CSS :has(), no
script). Every page opened here also fails its test on a console error
(tests/fixtures/browser.py)."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import expect

from tests.fixtures.app import target_of
from tests.fixtures.browser import LiveService, LiveServiceFactory, PageFactory
from tests.fixtures.servers import RunningServer, TlsFiles

pytestmark = pytest.mark.slow


@pytest.fixture
async def service(
    live_service_factory: LiveServiceFactory, valkey_server: RunningServer
) -> AsyncIterator[LiveService]:
    async with live_service_factory(**target_of(valkey_server)) as running:
        yield running


class TestConnectionDialogSections:
    async def test_tls_and_ssh_sections_open_and_follow_the_auth_method(
        self, service: LiveService, open_page: PageFactory, tls_files: TlsFiles, tmp_path: Path
    ):
        ca_file = tmp_path / "ca.pem"
        ca_file.write_text(tls_files.ca_path.read_text())
        async with open_page(service.url) as page:
            await page.get_by_role("button", name="Add connection").first.click()
            dialog = page.locator("#connection-dialog")
            await expect(dialog).to_be_visible()

            ca = dialog.get_by_label("CA certificate (PEM)", exact=True)
            client_key = dialog.get_by_label("Client key (PEM)", exact=True)
            insecure = dialog.locator("[data-insecure]")
            await expect(ca).to_be_hidden()
            await dialog.get_by_label("Use TLS", exact=True).check()
            for field in (ca, dialog.get_by_label("Client certificate (PEM)"), client_key):
                await expect(field).to_be_visible()
            await expect(insecure).to_be_visible()
            await expect(insecure).to_contain_text("insecure, for labs only")
            # A chosen file lands in its text area (read in the browser, nothing uploaded).
            await dialog.get_by_label("CA certificate file", exact=True).set_input_files(ca_file)
            await expect(ca).to_have_value(tls_files.ca_path.read_text())

            bastion = dialog.get_by_label("Bastion host", exact=True)
            ssh_password = dialog.get_by_label("SSH password", exact=True)
            private_key = dialog.get_by_label("Private key (OpenSSH or PEM)", exact=True)
            passphrase = dialog.get_by_label("Key passphrase", exact=True)
            await expect(bastion).to_be_hidden()
            await dialog.get_by_label("Connect through an SSH bastion", exact=True).check()
            await expect(bastion).to_be_visible()
            await expect(dialog.get_by_label("SSH port", exact=True)).to_have_value("22")
            await expect(ssh_password).to_be_visible()
            await expect(private_key).to_be_hidden()

            auth = dialog.get_by_label("Authentication", exact=True)
            await auth.select_option("privateKey")
            await expect(private_key).to_be_visible()
            await expect(passphrase).to_be_visible()
            await expect(ssh_password).to_be_hidden()
            key_path = dialog.get_by_label("Or a key file on the svc-monitor server")
            await expect(key_path).to_be_disabled()  # this service has no SVC_SSH_KEY_DIR
            await expect(dialog.locator('[data-key-files="disabled"]')).to_be_visible()

            await auth.select_option("keyboard-interactive")
            await expect(ssh_password).to_be_visible()
            await expect(private_key).to_be_hidden()

            await dialog.get_by_label("Use TLS", exact=True).uncheck()
            await expect(ca).to_be_hidden()
