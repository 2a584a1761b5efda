import base64
import contextlib

import pytest
from hypothesis import given, strategies as st
from pydantic import SecretStr

from svc_monitor.kit.secret_box import SecretBox, SecretUndecryptable

KEY = SecretStr("correct horse battery staple")
SALT = "svc-kek-salt-v1"
CONTEXT = "connections:abc:password"


# Deriving the key costs ~40 ms of scrypt, so the boxes are built once per module.
@pytest.fixture(scope="module")
def box() -> SecretBox:
    return SecretBox(KEY, salt=SALT)


@pytest.fixture(scope="module")
def sealed(box: SecretBox) -> str:
    return box.seal("hunter2", context=CONTEXT)


def _blob(sealed: str) -> bytes:
    return base64.urlsafe_b64decode(sealed.removeprefix("v1:"))


def _stored(blob: bytes) -> str:
    return "v1:" + base64.urlsafe_b64encode(blob).decode()


class TestSecretBox:
    @pytest.mark.parametrize(
        "secret", ["hunter2", "", " spaced out ", "pässwörd ✓", "x" * 1024, "plain:not-a-prefix"]
    )
    def test_sealed_secret_opens_to_the_same_text(self, box: SecretBox, secret: str) -> None:
        stored = box.seal(secret, context=CONTEXT)
        assert stored.startswith("v1:")
        assert box.open(stored, context=CONTEXT) == secret

    def test_sealed_form_does_not_contain_the_secret(self, box: SecretBox) -> None:
        stored = box.seal("hunter2-hunter2", context=CONTEXT)
        assert "hunter2" not in stored
        assert b"hunter2" not in _blob(stored)

    def test_same_secret_sealed_twice_differs(self, box: SecretBox) -> None:
        assert box.seal("hunter2", context=CONTEXT) != box.seal("hunter2", context=CONTEXT)

    def test_another_box_with_the_same_key_and_salt_opens_it(self, sealed: str) -> None:
        assert SecretBox(KEY, salt=SALT).open(sealed, context=CONTEXT) == "hunter2"

    @pytest.mark.parametrize(
        ("key", "salt"),
        [
            pytest.param(SecretStr("a different key of 16+"), SALT, id="other-key"),
            pytest.param(KEY, "another-salt", id="other-salt"),
        ],
    )
    def test_wrong_key_or_salt_is_undecryptable(
        self, sealed: str, key: SecretStr, salt: str
    ) -> None:
        with pytest.raises(SecretUndecryptable):
            SecretBox(key, salt=salt).open(sealed, context=CONTEXT)

    @pytest.mark.parametrize(
        "context", ["connections:other-row:password", "connections:abc:ssh.password", ""]
    )
    def test_wrong_context_is_undecryptable(
        self, box: SecretBox, sealed: str, context: str
    ) -> None:
        with pytest.raises(SecretUndecryptable):
            box.open(sealed, context=context)

    @given(data=st.data())
    def test_any_flipped_bit_is_undecryptable(
        self, box: SecretBox, sealed: str, data: st.DataObject
    ) -> None:
        blob = bytearray(_blob(sealed))
        bit = data.draw(st.integers(0, len(blob) * 8 - 1), label="bit")
        blob[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(SecretUndecryptable):
            box.open(_stored(bytes(blob)), context=CONTEXT)

    @given(data=st.data())
    def test_any_changed_character_is_undecryptable_or_unchanged(
        self, box: SecretBox, sealed: str, data: st.DataObject
    ) -> None:
        # Edits of the stored text itself, prefix included: never another exception.
        index = data.draw(st.integers(0, len(sealed) - 1), label="index")
        char = data.draw(st.characters(), label="char")
        stored = sealed[:index] + char + sealed[index + 1 :]
        try:
            opened = box.open(stored, context=CONTEXT)
        except SecretUndecryptable:
            return
        # base64 ignores some characters (and the last one's spare bits): still the same blob.
        assert opened == "hunter2"

    @given(st.text())
    def test_arbitrary_stored_text_opens_or_is_undecryptable(
        self, box: SecretBox, text: str
    ) -> None:
        with contextlib.suppress(SecretUndecryptable):
            box.open(text, context=CONTEXT)

    @pytest.mark.parametrize(
        "stored",
        [
            pytest.param("v1:", id="empty"),
            pytest.param("v1:AAAA", id="too-short"),
            pytest.param("v1:A", id="bad-padding"),
            pytest.param("v1:!!!!", id="not-base64"),
            pytest.param("v2:AAAA", id="unknown-version"),
            pytest.param("hunter2", id="no-prefix"),
            pytest.param("", id="empty-string"),
        ],
    )
    def test_malformed_stored_value_is_undecryptable(self, box: SecretBox, stored: str) -> None:
        with pytest.raises(SecretUndecryptable):
            box.open(stored, context=CONTEXT)

    def test_truncated_sealed_value_is_undecryptable(self, box: SecretBox, sealed: str) -> None:
        blob = _blob(sealed)
        for length in (0, 12, 60, 72, len(blob) - 1):
            with pytest.raises(SecretUndecryptable):
                box.open(_stored(blob[:length]), context=CONTEXT)


class TestSecretBoxWithoutKey:
    def test_stores_plain_form_and_opens_it(self) -> None:
        box = SecretBox(None, salt=SALT)
        assert not box.encrypting
        stored = box.seal("hunter2", context=CONTEXT)
        assert stored == "plain:hunter2"
        assert SecretBox.is_plain(stored)
        assert box.open(stored, context="any context") == "hunter2"

    def test_keyed_box_still_opens_plain_form(self, box: SecretBox) -> None:
        assert box.open("plain:hunter2", context=CONTEXT) == "hunter2"

    def test_sealed_value_is_undecryptable_without_key(self, sealed: str) -> None:
        with pytest.raises(SecretUndecryptable, match="ENCRYPTION_KEY is not set"):
            SecretBox(None, salt=SALT).open(sealed, context=CONTEXT)
