"""Fake, correctly shaped credentials for every rule, and look-alikes that
must never be taken for one. Built here from a seeded generator (never
pasted from anywhere); shared by the redaction unit tests and the
store-wide "no secret on disk" test."""
from __future__ import annotations

import base64
import random
import string
import uuid

_RNG = random.Random(20261124)
ALNUM = string.ascii_letters + string.digits
LOWER_HEX = "0123456789abcdef"
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"


def rand(alphabet: str, n: int, rng: random.Random = _RNG) -> str:
    """n characters from `alphabet`, holding each of its classes (lower,
    upper, digit) at least once: a key, not a word."""
    classes = [c for c in (string.ascii_lowercase, string.ascii_uppercase, string.digits) if set(c) & set(alphabet)]
    while True:
        s = "".join(rng.choice(alphabet) for _ in range(n))
        if all(set(c) & set(s) for c in classes):
            return s


def _discord(rng: random.Random = _RNG) -> str:
    bot_id = str(rng.randrange(10 ** 17, 10 ** 19))
    head = base64.urlsafe_b64encode(bot_id.encode()).decode().rstrip("=")
    return f"{head}.{rand(URLSAFE, 6, rng)}.{rand(URLSAFE, 38, rng)}"


def shape_samples(rng: random.Random = _RNG) -> list[tuple[str, str, str]]:
    """(kind, text holding the secret, the part that must not survive)."""
    r = lambda alphabet, n: rand(alphabet, n, rng)      # noqa: E731
    hexs = lambda n: rand(LOWER_HEX, n, rng)             # noqa: E731
    samples = []

    def add(kind: str, secret: str, text: str | None = None, part: str | None = None):
        samples.append((kind, text if text is not None else secret, part if part is not None else secret))

    # AI providers
    add("openai_key", "sk-proj-" + r(URLSAFE, 100))
    add("openai_key", "sk-" + r(ALNUM, 48))
    add("anthropic_key", "sk-ant-api03-" + r(URLSAFE, 93) + "AA")
    add("anthropic_key", "sk-ant-admin01-" + r(URLSAFE, 80))
    add("groq_key", "gsk_" + r(ALNUM, 52))
    add("perplexity_key", "pplx-" + r(ALNUM, 48))
    add("xai_key", "xai-" + r(ALNUM, 80))
    add("huggingface_token", "hf_" + r(string.ascii_letters, 34))
    add("huggingface_token", "api_org_" + r(string.ascii_letters, 34))
    add("replicate_token", "r8_" + r(ALNUM, 37))
    # code hosts and registries
    for prefix in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"):
        add("github_token", prefix + r(ALNUM, 36))
    add("github_token", "github_pat_" + r(ALNUM, 22) + "_" + r(ALNUM, 59))
    add("gitlab_token", "glpat-" + r(URLSAFE, 20))
    add("gitlab_token", "glrt-" + r(URLSAFE, 20))
    add("gitlab_token", "gldt-" + r(URLSAFE, 20))
    add("gitlab_token", "GR1348941" + r(URLSAFE, 20))
    add("bitbucket_token", "ATBB" + r(ALNUM, 32))
    add("atlassian_token", "ATATT3" + r(URLSAFE + "=", 180))
    add("npm_token", "npm_" + r(ALNUM, 36))
    add("pypi_token", "pypi-AgEIcHlwaS5vcmc" + r(URLSAFE, 120))
    add("rubygems_key", "rubygems_" + hexs(48))
    add("clojars_token", "CLOJARS_" + r(string.ascii_lowercase + string.digits, 60))
    add("docker_token", "dckr_pat_" + r(URLSAFE, 27))
    add("figma_token", "figd_" + r(URLSAFE, 40))
    add("postman_key", "PMAK-" + hexs(24) + "-" + hexs(34))
    add("linear_key", "lin_api_" + r(ALNUM, 40))
    add("notion_token", "ntn_" + r(string.digits, 11) + r(ALNUM, 35))
    add("notion_token", "secret_" + r(ALNUM, 43))
    add("contentful_token", "CFPAT-" + r(URLSAFE, 43))
    # clouds and hosting
    add("aws_access_key", "AKIA" + r(string.ascii_uppercase + string.digits, 16))
    add("aws_access_key", "ASIA" + r(string.ascii_uppercase + string.digits, 16))
    add("google_api_key", "AIza" + r(URLSAFE, 35))
    add("google_oauth_secret", "GOCSPX-" + r(URLSAFE, 28))
    add("google_oauth_token", "ya29." + r(URLSAFE, 150))
    add("google_oauth_token", "1//0" + r(URLSAFE, 100))
    key_id = hexs(40)
    add("gcp_private_key_id", key_id, '{"type": "service_account", "private_key_id": "' + key_id + '"}')
    account_key = r(B64, 86) + "=="
    add("azure_storage_key", account_key, "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey="
        + account_key + ";EndpointSuffix=core.windows.net")
    shared = r(B64, 43) + "="
    add("azure_storage_key", shared, "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=root;"
        "SharedAccessKey=" + shared)
    sig = r(ALNUM, 40) + "%2B" + r(ALNUM, 3) + "%3D"
    add("azure_sas_signature", sig, "https://acme.blob.core.windows.net/c/f?sv=2022-11-02&ss=b&srt=o&sp=r"
        "&se=2026-01-01T00:00:00Z&sig=" + sig)
    add("azure_client_secret", r(ALNUM, 3) + "8Q~" + r(ALNUM + "_~.-", 34))
    add("alibaba_key", "LTAI" + r(ALNUM, 20))
    add("digitalocean_token", "dop_v1_" + hexs(64))
    add("digitalocean_token", "doo_v1_" + hexs(64))
    add("heroku_key", "HRKU-AA" + r(URLSAFE, 58))
    add("flyio_token", "fo1_" + r(URLSAFE, 43))
    add("supabase_token", "sbp_" + hexs(40))
    add("doppler_token", "dp.pt." + r(ALNUM, 43))
    add("vault_token", "hvs." + r(URLSAFE, 90))
    add("terraform_token", r(ALNUM, 14) + ".atlasv1." + r(URLSAFE, 67))
    add("pulumi_token", "pul-" + hexs(40))
    add("databricks_token", "dapi" + hexs(32))
    add("grafana_token", "glc_" + r(B64, 60) + "==")
    add("grafana_token", "glsa_" + r(ALNUM, 32) + "_" + hexs(8))
    add("newrelic_key", "NRAK-" + r(string.ascii_uppercase + string.digits, 27))
    add("dynatrace_token", "dt0c01." + r(string.ascii_uppercase + string.digits, 24) + "."
        + r(string.ascii_uppercase + string.digits, 64))
    add("sentry_token", "sntrys_" + r(B64, 100) + "==")
    add("sentry_token", "sntryu_" + hexs(64))
    # messaging, payments, mail
    add("slack_token", "xoxb-" + r(string.digits, 12) + "-" + r(string.digits, 13) + "-" + r(ALNUM, 24))
    add("slack_token", "xoxp-" + r(string.digits, 12) + "-" + r(string.digits, 12) + "-" + r(string.digits, 13)
        + "-" + hexs(32))
    add("slack_token", "xapp-1-A" + r(string.ascii_uppercase + string.digits, 10) + "-" + r(string.digits, 13)
        + "-" + hexs(64))
    add("slack_token", "xoxe.xoxp-1-" + r(ALNUM, 140))
    hook = "T" + r(string.ascii_uppercase + string.digits, 8) + "/B" + r(string.ascii_uppercase + string.digits, 10) \
        + "/" + r(ALNUM, 24)
    add("slack_webhook", hook, "https://hooks.slack.com/services/" + hook)
    dhook = r(URLSAFE, 68)
    add("discord_webhook", dhook, f"https://discord.com/api/webhooks/{r(string.digits, 18)}/{dhook}")
    add("discord_token", _discord(rng))
    tg = "AA" + r(URLSAFE, 33)
    add("telegram_bot_token", tg, f"{rng.randrange(10 ** 8, 10 ** 10)}:{tg}")
    add("twilio_key", "SK" + hexs(32))
    add("sendgrid_key", "SG." + r(URLSAFE, 22) + "." + r(URLSAFE, 43))
    add("mailgun_key", "key-" + hexs(32))
    add("mailchimp_key", hexs(32) + "-us" + str(rng.randrange(1, 21)))
    add("stripe_key", "sk_live_" + r(ALNUM, 99))
    add("stripe_key", "rk_test_" + r(ALNUM, 24))
    add("stripe_key", "whsec_" + r(ALNUM, 32))
    add("square_token", "EAAA" + r(URLSAFE, 60))
    add("square_token", "sq0csp-" + r(URLSAFE, 43))
    add("shopify_token", "shpat_" + hexs(32))
    add("shippo_token", "shippo_live_" + hexs(40))
    add("mapbox_token", "sk.eyJ1Ijoi" + r(URLSAFE, 60) + "." + r(URLSAFE, 22))
    # signed tokens, keys, credentials in URLs and contexts
    add("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJ" + r(URLSAFE, 40) + "." + r(URLSAFE, 43))
    add("age_secret_key", "AGE-SECRET-KEY-1" + r(string.ascii_uppercase + string.digits, 58))
    for label in ("RSA", "OPENSSH"):
        body = "\n".join(r(B64, 64) for _ in range(4))
        add("private_key", body, f"-----BEGIN {label} PRIVATE KEY-----\n{body}\n-----END {label} PRIVATE KEY-----")
    dsn = hexs(32)
    add("sentry_dsn", dsn, f"https://{dsn}@o{rng.randrange(10 ** 5, 10 ** 7)}.ingest.sentry.io/{rng.randrange(10 ** 6)}")
    dsn = hexs(32) + ":" + hexs(32)
    add("sentry_dsn", dsn, f"SENTRY_DSN=https://{dsn}@sentry.example.com/{rng.randrange(10 ** 3)}")
    azure = r(B64, 86) + "=="
    add("secret_value", azure, f"AZURE_STORAGE_KEY={azure}")
    tok = r(ALNUM, 40)
    add("url_token", tok, f"git clone https://{tok}@git.example.com/org/repo.git")
    pw = r(ALNUM + "!^~", 14)
    add("url_password", pw, f"postgres://admin:{pw}@db.internal:5432/app")
    bearer = r(URLSAFE + ".", 40)
    add("bearer", bearer, f"Authorization: Bearer {bearer}")
    basic = base64.b64encode(f"alice:{r(ALNUM, 12)}".encode()).decode()
    add("basic_auth", basic, f"Authorization: Basic {basic}")
    cpw = r(ALNUM, 12)
    add("basic_auth", cpw, f"curl -u alice:{cpw} https://api.example.com")
    npw = r(ALNUM, 12)
    add("netrc_password", npw, f"machine api.example.com login alice password {npw}")
    fpw = r(string.ascii_lowercase, 12)
    add("secret_value", fpw, f"mysql --password {fpw} -h db")
    ftok = r(ALNUM, 30)
    add("secret_value", ftok, f"deploy --token={ftok}")
    kv = r(ALNUM, 20)
    add("secret_value", kv, f'client_secret: "{kv}"')
    env = r(ALNUM, 16)
    add("secret_value", env, f"export DB_PASSWORD={env}")
    npm_uuid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    add("secret_value", npm_uuid, '{"env": {"NPM_TOKEN": "' + npm_uuid + '"}}')
    legacy = hexs(40)
    add("secret_value", legacy, f"github_token={legacy}")
    # shapes and places a held-out probe found uncovered
    add("fireworks_key", "fw_" + r(ALNUM, 24))
    add("pinecone_key", "pcsk_" + r(ALNUM, 6) + "_" + r(ALNUM, 60))
    add("langsmith_key", "lsv2_pt_" + hexs(32) + "_" + hexs(10))
    add("planetscale_token", "pscale_tkn_" + r(URLSAFE, 43))
    add("cloudflare_origin_ca_key", "v1.0-" + hexs(24) + "-" + hexs(146))
    ppk = r(B64, 64)
    add("putty_private_key", ppk, f"PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\n{ppk}\n"
                                  f"Private-MAC: {hexs(64)}")
    okta = "00" + r(URLSAFE, 40)
    add("bearer", okta, f"Authorization: SSWS {okta}")
    registry = base64.b64encode(f"robot:{r(ALNUM, 16)}".encode()).decode()
    add("basic_auth", registry, '{"auths": {"registry.example.com": {"auth": "' + registry + '"}}}')
    opw = r(ALNUM, 14)
    add("secret_value", opw, f"openssl enc -aes-256-cbc -pass pass:{opw} -in a")
    mpw = r(ALNUM, 14)
    add("secret_value", mpw, f"mysql -u root -p{mpw} app")
    spw = r(ALNUM, 14)
    add("secret_value", spw, f"sshpass -p '{spw}' ssh deploy@host")
    sid = r(URLSAFE, 40)
    add("secret_value", sid, f"Cookie: theme=dark; sessionid={sid}; lang=en")
    ek = r(B64, 44)
    add("secret_value", ek, '{"encryptionKey": "' + ek + '"}')
    # forms a held-out probe found uncovered: a Django key, -p after a user, an env name in _PASS
    django = "".join(rng.choice(string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)") for _ in range(49)) + "7"
    add("django_secret_key", django, f"SECRET_KEY = 'django-insecure-{django}'")
    lpw = r(ALNUM, 16)
    add("secret_value", lpw, f"docker login -u deploy -p {lpw} registry.example.com")
    epw = r(ALNUM, 18)
    add("secret_value", epw, f"SMTP_PASS={epw}")
    pem64 = base64.b64encode(("-----BEGIN EC PRIVATE KEY-----\n" + r(B64, 32)
                              + "\n-----END EC PRIVATE KEY-----\n").encode()).decode()
    add("private_key", pem64, f"  tls.key: {pem64}")
    # shapes a second held-out probe found with no rule (r24)
    add("tailscale_key", "tskey-auth-k" + r(ALNUM, 12) + "-" + r(ALNUM, 33))
    add("onepassword_token", "ops_eyJ" + r(URLSAFE, 300))
    add("jfrog_token", "AKCp8" + r(ALNUM, 68))
    add("buildkite_token", "bkua_" + hexs(40))
    add("sourcegraph_token", "sgp_" + hexs(40))
    add("airtable_token", "pat" + r(ALNUM, 14) + "." + hexs(64))
    add("resend_key", "re_" + r(ALNUM, 8) + "_" + r(ALNUM, 24))
    add("firebase_fcm_key", "AAAA" + r(ALNUM, 7) + ":APA91b" + r(URLSAFE, 134))
    pat = rand("abcdefghijklmnopqrstuvwxyz234567", 52, rng)
    add("secret_value", pat, f"AZURE_DEVOPS_PAT={pat}")
    # shapes with no word of their own, and a scheme with no header name (h3)
    okta = "00" + r(URLSAFE, 40)
    add("okta_token", okta, f"SSWS {okta}")
    add("twitter_bearer", "A" * 21 + r(ALNUM, 30) + "%3D" + r(ALNUM, 50))
    add("twitter_bearer", "A" * 22 + r(ALNUM, 24) + "%2B" + r(ALNUM, 20) + "%2F" + r(ALNUM, 30))
    add("asana_token", f"1/{rng.randrange(10 ** 15, 10 ** 16)}:{hexs(32)}")
    add("asana_token", f"2/{rng.randrange(10 ** 15, 10 ** 16)}/{rng.randrange(10 ** 15, 10 ** 16)}:{hexs(32)}")
    return samples


SHAPE_SAMPLES = shape_samples()


# ---- look-alikes: never a secret -------------------------------------------------------------

def lookalikes(n: int = 5000, seed: int = 7) -> list[str]:
    """Hashes, ids and digests in the places they turn up: bare, in prose,
    after a rule's prefix letters, under keys and in URLs. None of them
    is a secret; every rule's prefix is mimicked."""
    rng = random.Random(seed)
    hexs = lambda k: "".join(rng.choice(LOWER_HEX) for _ in range(k))      # noqa: E731
    uid = lambda: str(uuid.UUID(int=rng.getrandbits(128), version=4))      # noqa: E731
    ulid = lambda: rng.choice("01234567") + "".join(rng.choice("0123456789ABCDEFGHJKMNPQRSTVWXYZ") for _ in range(25))  # noqa: E731,E501
    b64 = lambda k: base64.b64encode(rng.randbytes(k)).decode()            # noqa: E731
    makers = [
        lambda: hexs(40), lambda: hexs(64), lambda: hexs(rng.randint(7, 12)), lambda: hexs(32), lambda: hexs(24),
        lambda: hexs(128), uid, ulid, lambda: f"sha256:{hexs(64)}", lambda: f"sha512-{b64(64)}",
        lambda: f"sha256-{b64(32)}", lambda: f"commit {hexs(40)}", lambda: f"Merge {hexs(7)} into {hexs(7)}",
        lambda: f"v1.{rng.randint(0, 9)}.{rng.randint(0, 99)}-{rng.randint(1, 200)}-g{hexs(7)}",
        lambda: f"image@sha256:{hexs(64)}", lambda: f'"integrity": "sha512-{b64(64)}"',
        lambda: f'"etag": "{hexs(32)}"', lambda: f'"request_id": "{uid()}"', lambda: f"sync_token: {hexs(40)}",
        lambda: f'"nextPageToken": "{b64(24)}"', lambda: f"trace_id={hexs(32)} span_id={hexs(16)}",
        lambda: f"msg_01{''.join(rng.choice(ALNUM) for _ in range(22))}",
        lambda: f"toolu_01{''.join(rng.choice(ALNUM) for _ in range(22))}",
        lambda: f"req_011C{''.join(rng.choice(ALNUM) for _ in range(20))}",
        lambda: f"call_{''.join(rng.choice(ALNUM) for _ in range(24))}",
        lambda: f"chatcmpl-{''.join(rng.choice(ALNUM) for _ in range(29))}",
        lambda: f"https://github.com/org/repo/commit/{hexs(40)}", lambda: f"git+https://github.com/o/r.git#{hexs(40)}",
        lambda: f"/tmp/pytest-of-root/{hexs(8)}/{uid()}.json", lambda: f"{rng.randrange(10 ** 17, 10 ** 19)}",
        lambda: f"{rng.randrange(10 ** 8, 10 ** 10)}:{hexs(12)}", lambda: f"task-{hexs(32)}",
        lambda: f"disk {hexs(32)}", lambda: f"ask_{hexs(32)}", lambda: f"cache-key-{hexs(32)}",
        lambda: f"monkey-{hexs(32)}", lambda: f"en-us{rng.randint(1, 9)} {hexs(32)}-usage",
        lambda: f"dapi_version {hexs(32)}", lambda: f"npm_config_cache_{hexs(8)}",
        lambda: f"hf_hub_download_{hexs(8)}", lambda: f"msg.{hexs(22)}.{hexs(43)}",
        lambda: f"Microsoft.Extensions.{hexs(6)}.{''.join(rng.choice(string.ascii_letters) for _ in range(30))}",
        lambda: f"sk{hexs(32)}", lambda: f"mask{hexs(32)}", lambda: f"{hexs(12)}.atlasv2.{hexs(60)}",
        lambda: f"{hexs(4)}Q{hexs(36)}", lambda: f"https://example.com/a?sig=short&x={hexs(40)}",
        lambda: f"AccountName={hexs(12)};EndpointSuffix=core.windows.net", lambda: f"ssh://git@{hexs(8)}.com:22/r",
        lambda: f"https://{hexs(40)}.example.com/x", lambda: f"pkg:npm/left-pad@1.3.0?checksum={hexs(64)}",
        lambda: f"glsa_{hexs(8)}", lambda: f"SK-{hexs(32)}", lambda: f"key_{hexs(32)}", lambda: f"keys-{hexs(32)}",
        lambda: f'"private_key_id_hash": "{hexs(40)}"', lambda: f'"token_hash": "{hexs(64)}"',
        lambda: f"ntn_{hexs(6)}", lambda: f"secret_{hexs(8)}_name", lambda: f"pul-{hexs(12)}",
        lambda: f"dop_v2_{hexs(64)}", lambda: f"NRAK {hexs(27)}", lambda: f"ATBB{hexs(8)}",
        lambda: f"LTAI {hexs(20)}", lambda: f"tg {rng.randrange(10 ** 8, 10 ** 10)}:{hexs(35)}",
        lambda: f"snowflake {rng.randrange(10 ** 17, 10 ** 19)}.{hexs(6)}.{hexs(30)}",
    ]
    return [makers[i % len(makers)]() for i in range(n)]
