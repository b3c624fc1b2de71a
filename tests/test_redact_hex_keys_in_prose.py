"""Provider keys that are only hex digits (32, 40 or 64 of them, as many
services issue) behind a label written the way people write it in prose
or tool output: "API key: <hex>", "access key = <hex>", "secret key <hex>",
"access token: <hex>". The label says what the value is, so it goes
whatever its shape, as it does for `api_key=<hex>`. Beside them, the same
SHA-shaped hex (40 or 64 digits) after words that name a handle (commit,
sha256, etag, sync token, the token) stays: people recall those later. Fake values built here."""
from __future__ import annotations

import json
import random

import pytest

from reducers.redact import redact

_RNG = random.Random(4096)


def _hex(n: int) -> str:
    while True:
        value = "".join(_RNG.choice("0123456789abcdef") for _ in range(n))
        if any(c.isalpha() for c in value) and any(c.isdigit() for c in value):
            return value


_KEYS = [_hex(32), _hex(40), _hex(64)]


@pytest.mark.parametrize("key", _KEYS, ids=["hex32", "hex40", "hex64"])
@pytest.mark.parametrize("template", [
    "API key: {}", "Your API key: {}", "api key = {}", "Api Key {}", "access key: {}", "secret key: {}",
    "Secret Key {}", "private key: {}", "private key: 0x{}", "access token: {}", "API token: {}", "bot token: {}", "set the API key to x; API key: {} ok",
])
def test_a_hex_key_behind_a_spaced_credential_label_is_redacted(template, key):
    for text in (template.format(key), json.dumps({"output": template.format(key)})):
        out, n = redact(text)
        assert key not in out and n == 1, out
        assert "[REDACTED:secret_value]" in out


@pytest.mark.parametrize("key", _KEYS[1:], ids=["sha1", "sha256"])
@pytest.mark.parametrize("template", [
    "commit {} fixed it", "sha256:{}", "checksum={}", "etag: {}", "hash: {}", "the token: {}",
    "sync token: {}", "next token: {}", "keys {}", "request_id={}",
])
def test_the_same_hex_after_a_handle_word_stays(template, key):
    text = template.format(key)
    assert redact(text) == (text, 0)


def test_a_spaced_label_keeps_prose_about_keys():
    for text in ("the API key: see the dashboard", "access key rotation is weekly",
                 "API key is read from the environment", "secret key management in vault",
                 "private key: ~/.ssh/id_ed25519", "the private key is stored in the vault"):
        assert redact(text) == (text, 0)
