"""Redaction: credentials go, context stays, hashes and ids are never touched."""
from __future__ import annotations

import random
import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from reducers.redact import MAX_SECRET, StreamRedactor, redact

# Fake but correctly shaped credentials, built here (never pasted).
FAKE = {
    "openai_key": "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5q" * 2,
    "anthropic_key": "sk-ant-api03-" + "x7Y2" * 12,
    "github_token": "ghp_" + "a1B2c3D4e5" * 4,
    "slack_token": "xoxb-2048-4096-" + "Zq8" * 6,
    "aws_access_key": "AKIA" + "QWERTYUIOP123456",
    "jwt": "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiJ0ZXN0In0." + "c2lnbmF0dXJlLXRlc3Q",
    "private_key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQUJDRA==\n-----END OPENSSH PRIVATE KEY-----",
}

GIT_SHA = "9f2c4e1a7b3d5f60812ab4c9d0e7f3a2b1c4d5e6"
UUID = "123e4567-e89b-12d3-a456-426614174000"
SHA256 = "5be1c0a4d0f9e2b7c3a18d46f07e9b21c5a3d8e4f6b7a9c0d1e2f3a4b5c6d7e8"
ULID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"


@pytest.mark.parametrize("kind", sorted(FAKE))
def test_every_known_shape_is_redacted_with_its_kind(kind):
    out, n = redact(f"here it is: {FAKE[kind]} (do not share)")
    assert FAKE[kind] not in out and f"[REDACTED:{kind}]" in out and n == 1
    assert out.startswith("here it is: ") and out.endswith(" (do not share)")


@pytest.mark.parametrize("text, kept, gone", [
    ("Authorization: Bearer abcdefghijklmnop1234", "Authorization: Bearer ", "abcdefghijklmnop1234"),
    ('curl -H "Authorization: Basic dXNlcjpwYXNzd29yZA=="', "Authorization: Basic ", "dXNlcjpwYXNzd29yZA=="),
    ("postgres://admin:hunter2secret@db.example.com:5432/app", "postgres://admin:", "hunter2secret"),
    ('{"password": "s3cr3t-P@ss!", "user": "bob"}', '"password": "', "s3cr3t-P@ss!"),
    ('DB_PASSWORD="correct horse battery"', 'DB_PASSWORD="', "correct horse battery"),
    ("client_secret: 9f8e7d6c5b4a3f2e1d", "client_secret: ", "9f8e7d6c5b4a3f2e1d"),
    ("X-Api-Key: 1234abcd5678efgh", "X-Api-Key: ", "1234abcd5678efgh"),
    ("export GITHUB_TOKEN=abc123def456ghi789", "export GITHUB_TOKEN=", "abc123def456ghi789"),
    ("access_token=ya29.a0AfH6SMBx3kq", "access_token=", "ya29.a0AfH6SMBx3kq"),
])
def test_context_is_kept_and_only_the_credential_goes(text, kept, gone):
    out, n = redact(text)
    assert kept in out and gone not in out and n == 1
    assert "db.example.com" in out or "db.example.com" not in text


@pytest.mark.parametrize("text", [
    f"commit {GIT_SHA} fixed it", f"short sha {GIT_SHA[:8]}", f"uuid {UUID}", f"sha256:{SHA256}",
    f"digest {SHA256}", f"event {ULID}", "the token budget is 4000 tokens; keep this secret",
    '"max_tokens": 4000, "token_count": 12', "password_reset_url is /reset", "API_KEY=${OPENAI_API_KEY}",
    "api_key: <your-api-key>", "ops-oncall@example.org wrote /srv/app/config/payments.yaml",
    "password: required", "token: data.token,", "const token = generateSecureToken();",
    "git@github.com:org/repo.git", "https://github.com/org/repo/blob/main/README.md",
    "tokenizer = load_tokenizer()", "secret_name: prod-db", "password=xxxxxxxx", "pwd=/home/user/project",
])
def test_hashes_ids_and_ordinary_prose_are_never_touched(text):
    assert redact(text) == (text, 0)


def test_labelled_credentials_are_redacted_even_when_they_look_like_hex():
    for text in (f"Authorization: token {GIT_SHA}", f"Bearer {SHA256}", f'password="{GIT_SHA}"',
                 f"client_secret: {UUID}"):
        out, n = redact(text)
        assert n == 1 and "[REDACTED:" in out, text


def test_a_hex_id_under_a_token_name_is_an_identifier_not_a_secret():
    for text in (f"sync_token: {GIT_SHA}", f'"request_token": "{UUID}"', f"etag_token={SHA256}"):
        assert redact(text) == (text, 0)


def test_redaction_is_idempotent():
    text = " ".join(FAKE.values()) + ' password="hunter2hunter2" ' + GIT_SHA
    once = redact(text)[0]
    assert redact(once) == (once, 0)


hex_ids = st.sampled_from([GIT_SHA, UUID, SHA256, f"sha256:{SHA256}", GIT_SHA[:12], ULID])


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.one_of(st.text(max_size=12), hex_ids,
                                st.sampled_from(["token", "token:", "sync_token=", "commit", "sk-", "://", "eyJ"])),
                      max_size=30))
def test_hashes_and_ids_survive_any_surrounding_text(words):
    text = " ".join(words)
    assume("bearer" not in text.lower() and "authoriz" not in text.lower())   # labelled credentials: above
    out, _ = redact(text)
    for ident in (GIT_SHA, UUID, SHA256, ULID):
        assert out.count(ident) >= text.count(f" {ident} ") if f" {ident} " in text else True
    assert redact(out)[0] == out


@settings(max_examples=100, deadline=None)
@given(pieces=st.lists(st.one_of(st.text(max_size=40), st.sampled_from(list(FAKE.values())),
                                 st.just("\n"), st.just('password: "hunter2hunter2"\n')), max_size=40),
       cuts=st.lists(st.integers(min_value=1, max_value=50), max_size=20))
def test_the_stream_redactor_matches_whole_text_redaction_for_any_chunking(pieces, cuts):
    text = "".join(pieces)
    stream, out, pos = StreamRedactor(), [], 0
    for c in cuts:
        out.append(stream.feed(text[pos:pos + c]))
        pos += c
    out.append(stream.feed(text[pos:]))
    out.append(stream.close())
    assert "".join(out) == redact(text)[0]
    assert stream.count == redact(text)[1]


def test_the_stream_redactor_holds_bounded_memory():
    stream = StreamRedactor()
    line = "plain output line with nothing secret in it\n"
    emitted = 0
    for _ in range(20000):
        emitted += len(stream.feed(line))
        assert len(stream._pending) <= 2 * MAX_SECRET + len(line)
    assert emitted + len(stream.close()) == 20000 * len(line)


def test_real_transcripts_keep_every_hash_and_uuid(shared_transcripts):
    import json
    hexes = re.compile(r"\b[0-9a-f]{40}\b|\b[0-9a-f]{64}\b|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
    texts = []

    def walk(o):
        if isinstance(o, str):
            texts.append(o)
        elif isinstance(o, dict):
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    for path in sorted(shared_transcripts.rglob("*.json*")):
        for line in path.read_text(errors="replace").splitlines():
            try:
                walk(json.loads(line))
            except ValueError:
                continue
    assert len(texts) > 10000
    checked = 0
    for t in texts:
        out, _ = redact(t)
        for ident in hexes.findall(t):
            assert ident in out
            checked += 1
    assert checked > 100
