"""Secrets in the forms agents really meet them, found by a held-out probe
(fake values built here, never real ones): a key file read through Claude
Code's Read tool (its lines numbered), a registry or database login that
passes the password as `-p` after `-u`, an env name ending in `_PASS`, a
Django project's generated key, and a key inside a URL-encoded query. Each
holds when the text is stored as is, inside a JSON string (a tool result)
and inside a JSON string inside a JSON string (Codex's function-call
arguments). Beside them, the look-alikes that must stay."""
from __future__ import annotations

import json
import random
import string

import pytest

from reducers.redact import redact
from tests.secret_samples import ALNUM, B64, rand

_RNG = random.Random(3232)


def _r(alphabet: str, n: int) -> str:
    return rand(alphabet, n, _RNG)


def _encodings(text: str) -> list[str]:
    """The text as a transcript stores it: plain, a JSON string, and a
    JSON string holding a JSON object (Codex's function_call arguments)."""
    return [text, json.dumps({"output": text}), json.dumps({"arguments": json.dumps({"cmd": text})})]


def _gone(secret: str, text: str) -> bool:
    out, _ = redact(text)
    return not any(form in out for form in (secret, json.dumps(secret)[1:-1], json.dumps(json.dumps(secret))[1:-1]))


# ---- a private key read through the Read tool -------------------------------------------------

_KEY_LINES = [_r(B64, 70) for _ in range(6)]


def _numbered(lines: list[str], mark: str) -> str:
    """Claude Code's Read tool: each line behind its number and an arrow (or a tab)."""
    return "\n".join(f"{i + 1:>6}{mark}{line}" for i, line in enumerate(lines))


@pytest.mark.parametrize("mark", ["\u2192", "\t"])
@pytest.mark.parametrize("label", ["OPENSSH PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY"])
def test_a_private_key_read_with_numbered_lines_is_redacted_whole(label, mark):
    text = _numbered([f"-----BEGIN {label}-----", *_KEY_LINES, f"-----END {label}-----"], mark)
    for stored in _encodings(text):
        out, n = redact(stored)
        assert n == 1 and "[REDACTED:private_key]" in out, (mark, stored[:80])
        assert not any(line in out for line in _KEY_LINES)
        assert "BEGIN " + label in out and "END " + label in out      # what it was stays readable


@pytest.mark.parametrize("mark", ["\u2192", "\t"])
def test_a_private_key_whose_read_stopped_before_its_end_is_redacted_too(mark):
    # the Read tool's limit cut the file: no END line
    text = _numbered(["-----BEGIN OPENSSH PRIVATE KEY-----", *_KEY_LINES], mark)
    for stored in _encodings(text):
        assert all(_gone(line, stored) for line in _KEY_LINES), stored[:80]


def test_numbered_lines_of_code_that_print_pem_markers_stay():
    code = _numbered(['print("-----BEGIN RSA PRIVATE KEY-----")', "for line in body:", "    print(line)",
                      'print("-----END RSA PRIVATE KEY-----")'], "\u2192")
    assert redact(code) == (code, 0)


# ---- -u user -p password ---------------------------------------------------------------------

@pytest.mark.parametrize("command", [
    "docker login -u admin -p {pw} registry.example.com",
    "podman login --username ci -p '{pw}' quay.io",
    "sqlcmd -S db -U sa -P {pw} -Q 'select 1'",
    'helm registry login ghcr.io -u bot -p "{pw}"',
    "mysql -u root -p{pw} app",
])
def test_a_password_passed_as_dash_p_after_a_user_is_redacted(command):
    pw = _r(ALNUM + "!#%", 16)
    for stored in _encodings(command.format(pw=pw)):
        assert _gone(pw, stored), stored


@pytest.mark.parametrize("command", [
    "docker run -u 1000 -p 8080:80 nginx", "docker run -u $(id -u) -p 127.0.0.1:5432:5432 postgres",
    "mysql -u root -p app", "mysql -u root -p mydatabase", "docker login -u admin -p $REGISTRY_PASSWORD reg",
    "docker login -u admin --password-stdin reg", "ssh -p 2222 deploy@host", "mkdir -p build/output",
    "sqlcmd -U sa -P $SA_PASSWORD", "pg_dump -U postgres -p 5432 app",
])
def test_dash_p_that_is_a_port_a_prompt_or_a_variable_stays(command):
    assert redact(command) == (command, 0)


# ---- env names ending in _PASS ---------------------------------------------------------------

@pytest.mark.parametrize("line", ["SMTP_PASS={pw}", 'export MAIL_PASS="{pw}"', '"RABBITMQ_DEFAULT_PASS": "{pw}"',
                                  "  - FTP_PASS={pw}", "KEY_PASSPHRASE={pw}"])
def test_an_env_name_ending_in_pass_holds_a_password(line):
    pw = _r(ALNUM + "!@", 18)
    for stored in _encodings(line.format(pw=pw)):
        assert _gone(pw, stored), stored


@pytest.mark.parametrize("line", ["SKIP_PASS=true", "FIRST_PASS=done", "BYPASS=enabled", "SMTP_PASS=$SMTP_PASSWORD",
                                  "SMTP_PASS=${SMTP_PASSWORD}", "COMPILER_PASS=optimize", "X_PASS: 12345678"])
def test_env_names_ending_in_pass_that_hold_no_password_stay(line):
    assert redact(line) == (line, 0)


# ---- a Django project's generated key --------------------------------------------------------

_DJANGO = string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)"     # what startproject draws from


@pytest.mark.parametrize("line", ["SECRET_KEY = 'django-insecure-{k}'", "SECRET_KEY=django-insecure-{k}",
                                  '"SECRET_KEY": "django-insecure-{k}"', "django-insecure-{k}"])
def test_a_django_generated_key_goes_whatever_its_symbols(line):
    for _ in range(20):
        key = "".join(_RNG.choice(_DJANGO) for _ in range(50))
        for stored in _encodings(line.format(k=key)):
            out, n = redact(stored)
            assert n >= 1 and key not in out and json.dumps(key)[1:-1] not in out, stored


def test_a_hand_made_django_key_with_capitals_goes_too():
    # whole: the env value stops at the first symbol, the shape behind it runs on
    for _ in range(40):
        key = "".join(_RNG.choice(_DJANGO + string.ascii_uppercase) for _ in range(49)) + "Q"
        out, n = redact(f"SECRET_KEY=django-insecure-{key}")
        assert n >= 1 and not any(key[i:i + 12] in out for i in range(len(key) - 11)), out


def test_prose_about_djangos_insecure_prefix_stays():
    for text in ("Keys that start with django-insecure- are for development only.",
                 "django-insecure-Keys-Are-For-Development-Only-And-Must-Be-Rotated-Now"):
        assert redact(text) == (text, 0)


# ---- inside a URL-encoded query --------------------------------------------------------------

@pytest.mark.parametrize("template", ["https://app.example.com/cb?state=token%3D{s}",
                                      "redirect_uri=https%3A%2F%2Fx.example.com%2F%3Fkey%3D{s}",
                                      "next=%2Fdeploy%3Fauth%3D{s}%26env%3Dprod"])
@pytest.mark.parametrize("secret", ["ghp_" + _r(ALNUM, 36), "sk_live_" + _r(ALNUM, 30), "xoxb-1234567890-" + _r(ALNUM, 24),
                                    "AKIA" + _r(string.ascii_uppercase + string.digits, 16)])
def test_a_known_shape_behind_a_percent_encoded_separator_is_redacted(template, secret):
    assert _gone(secret, template.format(s=secret))


@pytest.mark.parametrize("text", ["%3Dsk_live_", "100%25AKIAISH", "progress%20ghp_count", "a%2Fskeleton-key"])
def test_percent_encoded_text_without_a_secret_stays(text):
    assert redact(text) == (text, 0)


# ---- a private key in base64 -----------------------------------------------------------------

def _pem_base64(label: str, wrap: int | None) -> tuple[str, str]:
    import base64
    body = "\n".join(_r(B64, 64) for _ in range(8))
    encoded = base64.b64encode(f"-----BEGIN {label}-----\n{body}\n-----END {label}-----\n".encode()).decode()
    if wrap:
        encoded = "\n".join(encoded[i:i + wrap] for i in range(0, len(encoded), wrap))
    return encoded, body


@pytest.mark.parametrize("wrap", [None, 76])
@pytest.mark.parametrize("label", ["RSA PRIVATE KEY", "PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY"])
def test_a_private_key_in_base64_is_redacted_as_a_private_key(label, wrap):
    # kubectl get secret -o yaml (tls.key), `base64 key.pem`, a key kept base64 in an env var
    encoded, _ = _pem_base64(label, wrap)
    for text in (f"data:\n  tls.crt: LS0tCg==\n  tls.key: {encoded}\nkind: Secret",
                 f"$ base64 deploy.pem\n{encoded}", f"GITHUB_APP_KEY_B64={encoded}"):
        for stored in _encodings(text):
            out, n = redact(stored)
            assert "[REDACTED:private_key]" in out, stored[:80]
            assert not any(part in out for part in encoded.split("\n")[1:-1] or [encoded[20:80]])


@pytest.mark.parametrize("label", ["CERTIFICATE", "PUBLIC KEY", "RSA PUBLIC KEY"])
def test_a_certificate_or_a_public_key_in_base64_stays(label):
    encoded, _ = _pem_base64(label, None)
    text = f"  tls.crt: {encoded}"
    assert redact(text) == (text, 0)


# ---- a token on the line after a key, a shape that runs past a header's value -----------------

def _pieces_gone(secret: str, text: str) -> bool:
    """No 12 characters of the secret survive (its prefix swallowed leaves the rest unseen)."""
    out, _ = redact(text)
    return not any(secret[i:i + 12] in out for i in range(len(secret) - 11))


_AFTER_A_KEY = {
    "github": lambda: "ghp_" + _r(ALNUM, 36),
    "stripe": lambda: "sk_live_" + _r(ALNUM, 30),
    "gitlab": lambda: "glpat-" + _r(ALNUM, 20),
    "tailscale": lambda: "tskey-auth-k" + _r(ALNUM, 12) + "-" + _r(ALNUM, 33),
}


def _key_then(token: str) -> list[str]:
    """A key in the forms it is wrapped over lines, the token on the next line."""
    import base64
    pem = "-----BEGIN EC PRIVATE KEY-----\n" + _r(B64, 64) + "\n-----END EC PRIVATE KEY-----\n"
    return [f"tls.key: {base64.b64encode(pem.encode()).decode()}\n{token}",
            f"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA{_r(ALNUM, 60)}\n{token}",
            f"     1\u2192-----BEGIN RSA PRIVATE KEY-----\n     2\u2192MIIEow{_r(ALNUM, 60)}\n     3\u2192{token}",
            f"Private-Lines: 2\n{_r(B64, 64)}\n{token}"]


@pytest.mark.parametrize("service", sorted(_AFTER_A_KEY))
def test_a_token_on_the_line_after_a_wrapped_or_cut_key_keeps_its_prefix_and_goes(service):
    token = _AFTER_A_KEY[service]()
    for text in _key_then(token):
        for form in _encodings(text):
            assert _pieces_gone(token, form), form


def test_the_lines_of_a_wrapped_key_still_go_together():
    lines = [_r(B64, 64) for _ in range(4)]
    for text in (f"-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n",
                 "Private-Lines: 4\n" + "\n".join(lines) + "\nPrivate-MAC: 00"):
        for form in _encodings(text):
            assert all(_pieces_gone(line, form) for line in lines), form


def test_a_shape_that_runs_on_past_a_headers_value_goes_whole():
    # a header's value stops at a ':' that a Firebase server key holds
    key = "AAAA" + _r(ALNUM, 7) + ":APA91b" + _r(ALNUM + "_-", 134)
    for text in (f"Authorization: {key}", f"Bearer {key}", json.dumps({"headers": {"Authorization": key}})):
        for form in _encodings(text):
            assert _pieces_gone(key, form), form
