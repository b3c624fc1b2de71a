"""Secrets a second held-out probe (h3) found on disk: a secret-named
variable given as a name field with its value in the next field or on the
next line (Kubernetes env lists, `{"name": …, "value": …}` records), a
snake_case config key ending in _key or _pat, and three tokens known by
their own shape but with no trigger word of their own: an X (Twitter)
app-only bearer token, an Asana personal access token, an Okta token
after its `SSWS` scheme without the header name. Fake values built here.
Each holds as is, in a JSON string and in JSON inside JSON; beside each,
the look-alikes that must stay exactly as written."""
from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid

import pytest

from reducers.redact import redact
from tests.secret_samples import ALNUM, B64, URLSAFE, rand

_RNG = random.Random(2424)
HEX = "0123456789abcdef"


def _r(alphabet: str, n: int) -> str:
    return rand(alphabet, n, _RNG)


def _encodings(text: str) -> list[str]:
    return [text, json.dumps({"output": text}), json.dumps({"arguments": json.dumps({"cmd": text})})]


def _redacted_once(text: str, secret: str) -> None:
    for encoded in _encodings(text):
        out, n = redact(encoded)
        assert n == 1 and secret not in out, encoded


SECRET = _r(ALNUM, 20) + "+/" + _r(B64, 18)
SHA = hashlib.sha1(b"h3").hexdigest()

SPLIT = [
    json.dumps({"name": "AWS_SECRET_ACCESS_KEY", "value": SECRET}),
    json.dumps([{"Name": "DB_PASSWORD", "Value": SECRET}]),
    json.dumps({"env": [{"name": "GITHUB_TOKEN", "value": SECRET}]}, indent=2),
    f'env:\n  - name: API_TOKEN\n    value: "{SECRET}"\n',
    f"- name: STRIPE_SECRET_KEY\n  value: {SECRET}\n",
    f"key: CLIENT_SECRET\nvalue: {SECRET}\n",
]


@pytest.mark.parametrize("text", SPLIT)
def test_a_secret_named_in_one_field_and_given_in_the_next_is_redacted(text):
    for encoded in _encodings(text):
        out, n = redact(encoded)
        assert n >= 1 and SECRET not in out, encoded
        assert "value" in out.lower()          # the field names stay


@pytest.mark.parametrize("text", [
    json.dumps({"name": "SYNC_TOKEN", "value": SHA}),                 # a handle's name: a SHA stays
    json.dumps({"name": "SECRET_NAME", "value": "prod-db-credentials-for-payments"}),
    json.dumps({"name": "TOKEN_URL", "value": "https://auth.example.com/oauth/token"}),
    f"- name: PASSWORD_FILE\n  value: /run/secrets/{_r(string.ascii_lowercase, 24)}\n",
    "name: api_token_count\nvalue: 1234567890123",
    "secret, value = load_pair(config_path_and_other_things)",
    json.dumps({"name": "token", "value": "NextPageToken"}),
])
def test_a_name_value_pair_that_holds_no_secret_stays(text):
    for encoded in _encodings(text):
        assert redact(encoded) == (encoded, 0), encoded


OKTA = "00" + _r(URLSAFE, 40)
TWITTER = "A" * 21 + _r(ALNUM, 30) + "%3D" + _r(ALNUM, 50)
ASANA = f"2/{_RNG.randrange(10 ** 15, 10 ** 16)}/{_RNG.randrange(10 ** 15, 10 ** 16)}:{_r(HEX, 32)}"
ASANA_V1 = f"1/{_RNG.randrange(10 ** 15, 10 ** 16)}:{_r(HEX, 32)}"


@pytest.mark.parametrize("secret,text,kind", [
    (OKTA, f"curl -H 'SSWS {OKTA}' https://dev-1.okta.com/api/v1/users", "okta_token"),
    (OKTA, f"headers = {{'Accept': 'application/json', 'auth': 'SSWS {OKTA}'}}", "okta_token"),
    (TWITTER, f"my bearer is {TWITTER}", "twitter_bearer"),
    (TWITTER, f"client = tweepy.Client({TWITTER!r})", "twitter_bearer"),
    (ASANA, f"use {ASANA} for the workspace", "asana_token"),
    (ASANA_V1, f"asana.Client.access_token({ASANA_V1!r})", "asana_token"),
    (ASANA, f"call/{ASANA}/7786dc94/1", "asana_token"),        # a key built from it
])
def test_a_shape_with_no_word_of_its_own_is_found_wherever_it_is(secret, text, kind):
    for encoded in _encodings(text):
        out, n = redact(encoded)
        assert n == 1 and secret not in out and f"[REDACTED:{kind}]" in out, encoded


@pytest.mark.parametrize("text", [
    "data:application/octet-stream;base64," + "A" * 400 + "==",          # zeros in base64
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA%20end",
    "iVBORw0KGgoAAAANSUhEUgAA" + base64.b64encode(bytes(range(200))).decode(),
    "1/2 of the runs and 2/3 of 1234567890123456 requests finished in 12.5s",
    f"see https://app.asana.com/0/1204567890123456/1204567890123457 and {SHA}",
    f"ratio 1/1234567890:{SHA}",                    # 40 hex, not an Asana token's 32
    "SSWS is the scheme Okta uses for API tokens",
])
def test_runs_of_a_fractions_and_ids_stay(text):
    for encoded in _encodings(text):
        assert redact(encoded) == (encoded, 0), encoded


KEY = _r(ALNUM, 30) + "+/" + _r(B64, 24) + "=="
PAT = _r(ALNUM, 40)


@pytest.mark.parametrize("text,secret", [
    (f"config:\n  azure_storage_key: {KEY}\n", KEY),
    (json.dumps({"service": "jira", "jira_pat": PAT}), PAT),
    (f'signing_key: "{KEY}"', KEY),
])
def test_a_snake_case_key_or_pat_in_config_holds_a_secret(text, secret):
    _redacted_once(text, secret)


@pytest.mark.parametrize("text", [
    f"cache_key: {hashlib.sha256(b'x').hexdigest()}",                   # a digest stays
    f'idempotency_key: "{uuid.UUID(int=_RNG.getrandbits(128))}"',
    f"sort_key={KEY}",                                                  # code: a keyword argument
    "primary_key: organisation_membership_identifier",
    "ssh_key: /home/dev/.ssh/id_ed25519_deploy_key",
    "file_path: /srv/app/settings/production.py",
    "def sign(self, public_key: ed25519.Ed25519PublicKey, f_pub: _FragList):",    # a type annotation
    "token_hash: sha512-" + base64.b64encode(hashlib.sha512(b"x").digest()).decode(),
    json.dumps({"password_digest": "sha256:" + hashlib.sha256(b"y").hexdigest() + "Zz"}),
])
def test_a_snake_case_key_that_holds_a_digest_a_name_or_a_path_stays(text):
    for encoded in _encodings(text):
        assert redact(encoded) == (encoded, 0), encoded


@pytest.mark.parametrize("text", [
    f"Error: request failed with 401 Unauthorized (token {PAT} is invalid or expired)",
    f"NAME\tVALUE\nAPI_SECRET\t{PAT}\n",
    f"the secret {KEY} was rotated",
])
def test_a_long_random_value_right_after_a_secret_word_in_prose_is_redacted(text):
    _redacted_once(text, PAT if PAT in text else KEY)


@pytest.mark.parametrize("text", [
    f"token {SHA} was used to sign the commit",                     # a handle stays
    f"token {hashlib.sha256(b'z').hexdigest()} in the cache",
    f"secret {uuid.UUID(int=_RNG.getrandbits(128))} deleted",
    "the token sha512-" + base64.b64encode(hashlib.sha512(b"x").digest()).decode() + " is the integrity",
    "token /home/dev/projects/payments/settings/production_secrets.py",
    "secret abcdefghijklmnopqrstuvwxyzabcdefgh and more prose",          # one case: a word-like run
    "password reset instructions were sent to the address on file",
    "token 50256 is the end of text marker in GPT2TokenizerFastVersion2",
])
def test_a_secret_word_followed_by_a_handle_a_path_or_prose_stays(text):
    for encoded in _encodings(text):
        assert redact(encoded) == (encoded, 0), encoded
