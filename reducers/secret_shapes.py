"""Credential shapes: secrets a service issues in a form of its own (a fixed
prefix, a fixed length, a fixed alphabet), recognised wherever they appear.
Pure data plus small checks; reducers/redact.py compiles and applies them.

Each shape names the trigger words its match starts at: "shared|accesskey"
is the word `accesskey` with the match starting at the `shared` before it,
"sk>-" the word `sk` followed by a dash, a word in capitals (SK, AKIA) is
matched in that case only -- so "task" and "Asia" try nothing -- and `back`
moves the start before every word when what precedes it is not fixed (a
Mailchimp key's `-us` suffix). Then its regex (bounded quantifiers only: the
stream redactor's window depends on it), what `[REDACTED:<kind>]` says,
and optionally:
  - a group `(?P<S>…)`: only that part goes (a webhook's host, a bot's id,
    `AccountKey=` stay readable);
  - `skip`: the fixed prefix length; a rest of only placeholder filler
    (npm_XXXX…, hf_****…) is a placeholder, kept;
  - `check`: a test of the secret after its prefix that the regex cannot
    make (mixed case, the id inside a Discord token).

A few shapes have no word to start at (a Discord bot token: base64 of the
bot's numeric id, a dot, 6 characters, a dot, 27+; an X bearer token's run
of A's; an Asana token's `1/<digits>`): `FREE_SCANS` finds where they can
start from a literal inside them instead.

Recall handles are never a shape: git SHAs, UUIDs, ULIDs and digests have
no service prefix, and every shape that is hex after its prefix needs that
prefix (dapi…, key-…, SK…), so a bare hash is never taken."""
from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Callable

def after_none_of(chars: str) -> str:
    """Not glued to any of `chars` (a word; a redaction's "]", so that
    redacting twice changes nothing) -- a JSON escape before it (\\n, \\t,
    \\u2192: the arrow of a numbered line) is a separator, not a letter,
    and a percent-encoded byte (token%3Dghp_…, %2F) is a separator in a
    URL-encoded query."""
    return rf"(?:(?<![{chars}])|(?<=\\[nrt])|(?<=\\u[0-9A-Fa-f]{{4}})|(?<=%[0-9A-Fa-f]{{2}}))"


# Pieces of patterns. A dash never starts "-----": a key glued to a PEM
# header must stop before it (the private key behind it would go unseen).
# %M% is the longest secret recognised (reducers/redact.py MAX_SECRET).
B = after_none_of(r"A-Za-z0-9_\]-")            # not glued to a word
B_WORD = after_none_of(r"A-Za-z0-9_\]")         # a dash before is fine (x-ghp_…, key names)
B_ALNUM = after_none_of(r"A-Za-z0-9\]")
B_ALNUM_DASH = after_none_of(r"A-Za-z0-9\]-")
B_PATH = after_none_of(r"A-Za-z0-9_/\]-")
B_AZURE = after_none_of(r"A-Za-z0-9_~.\]-")
B_HOST = after_none_of(r"A-Za-z0-9_-")          # a host name (a URL's "." and "/" before are fine)
E = r"(?![A-Za-z0-9])"                         # no more letters or digits: a _suffix or -suffix may follow (file names)
U = r"(?:[A-Za-z0-9_]|-(?!----))"              # URL-safe base64
KEY = U
DASHED = r"(?:[A-Za-z0-9]|-(?!----))"
# A wrapped key's next line is taken only when it is base64 to its end: a line
# that goes on as a word (ghp_…, tskey-…, sk_live_…) is the next thing in the
# text, and swallowing its first letters would leave the rest of it unseen.
# (More line breaks and an indent may come first, raw or JSON-escaped.)
def base64_line_ahead(longest: str) -> str:
    return (rf"(?=(?:[ \t\r\n]|\\{{1,3}}[nr]){{0,8}}[A-Za-z0-9+/]{{1,{longest}}}={{0,2}}"
            r"(?![A-Za-z0-9+/=]|[-_.:@~%?&#!*]))")


VALUE_SEP = r"(?:\\{0,7}[\"'])?[ \t]{0,8}[:=][ \t]{0,8}(?:\\{0,7}[\"'])?"   # "k": "v", k=v, \"k\": \"v\", \\\"k\\\"…


@dataclass(frozen=True)
class Shape:
    name: str                       # the regex group
    kind: str                       # [REDACTED:<kind>]
    triggers: tuple[str, ...]       # lowercase words the match starts at (or `back` chars before)
    pattern: str
    back: int = 0
    skip: int = 0
    check: Callable[[str], bool] | None = None


def _mixed(secret: str) -> bool:
    """Letters of both cases or a letter and a digit: a key, not a name
    (hf_abcdefghijklmnopqrstuvwxyzabcdefgh is an identifier)."""
    upper = any("A" <= c <= "Z" for c in secret)
    lower = any("a" <= c <= "z" for c in secret)
    digit = any("0" <= c <= "9" for c in secret)
    return (upper and lower) or ((upper or lower) and digit)


def _hex_key(secret: str) -> bool:
    """Hex with a letter and a digit in it (a key; not 00000… nor a word)."""
    return any(c.isdigit() for c in secret) and any(c.isalpha() for c in secret)


def _not_a_word(secret: str) -> bool:
    """A digit or a symbol in it: a generated key, not words joined by dashes."""
    return any(not ("a" <= c <= "z" or "A" <= c <= "Z" or c in "-_") for c in secret)


def _base64_private_key(secret: str) -> bool:
    """Base64 whose text opens with a PEM header naming a private key."""
    head = re.sub(r"\\*[rn]|\s", "", secret[:160])[:64]
    try:
        return b"PRIVATE KEY-----" in base64.b64decode(head[: len(head) // 4 * 4])
    except (binascii.Error, ValueError):
        return False


def _discord_id(secret: str) -> bool:
    """A Discord bot token opens with the bot's numeric id in base64."""
    head = secret.split(".", 1)[0]
    try:
        raw = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return False
    return 17 <= len(raw) <= 20 and raw.isdigit()


def _url_userinfo(secret: str) -> bool:
    """A token used as a URL's user (https://<token>@host): long, with
    digits and letters (not first.last, not a word)."""
    return _mixed(secret) and any(c.isdigit() for c in secret)


SHAPES: tuple[Shape, ...] = (
    # -- AI providers ----------------------------------------------------------------------
    Shape("ant", "anthropic_key", ("sk>-",), rf"{B}sk-ant-(?=[a-z_-]{{0,%M%}}[A-Z0-9]){KEY}{{20,%M%}}", skip=7),
    Shape("oai", "openai_key", ("sk>-",), rf"{B}sk-(?=[a-z_-]{{0,%M%}}[A-Z0-9]){KEY}{{20,%M%}}", skip=3),
    Shape("groq", "groq_key", ("gsk_",), rf"{B}gsk_[A-Za-z0-9]{{48,56}}{E}", skip=4, check=_mixed),
    Shape("pplx", "perplexity_key", ("pplx-",), rf"{B}pplx-[A-Za-z0-9]{{40,56}}{E}", skip=5, check=_mixed),
    Shape("xai", "xai_key", ("xai-",), rf"{B}xai-[A-Za-z0-9]{{70,90}}{E}", skip=4, check=_mixed),
    Shape("hf", "huggingface_token", ("hf_", "api>_org_"), rf"{B}(?:hf_|api_org_)[A-Za-z0-9]{{30,40}}{E}",
          skip=3, check=_mixed),
    Shape("r8", "replicate_token", ("r8_",), rf"{B}r8_[A-Za-z0-9]{{37}}{E}", skip=3, check=_mixed),
    Shape("fireworks", "fireworks_key", ("fw_",), rf"{B}fw_[A-Za-z0-9]{{20,48}}{E}", skip=3, check=_url_userinfo),
    Shape("pinecone", "pinecone_key", ("pcsk_",), rf"{B}pcsk_[A-Za-z0-9]{{4,10}}_[A-Za-z0-9]{{40,90}}{E}", skip=5,
          check=_mixed),
    Shape("langsmith", "langsmith_key", ("lsv2_",), rf"{B}lsv2_(?:pt|sk)_[0-9a-f]{{32}}_[0-9a-f]{{10}}{E}", skip=8),
    # -- code hosts and registries ---------------------------------------------------------
    Shape("gh", "github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_|pat>_"),
          rf"{B_WORD}(?:gh[pousr]_[A-Za-z0-9]{{36,%M%}}|github_pat_[A-Za-z0-9_]{{22,%M%}})", skip=4),
    Shape("gitlab", "gitlab_token", ("gl>pat-", "gl>rt-", "gl>dt-", "gl>ptt-", "gl>oas-", "GR1348941"),
          rf"{B}(?:gl(?:pat|rt|dt|ptt|oas)-|GR1348941)"
          rf"(?=[a-z_-]{{0,%M%}}[A-Z0-9]){KEY}{{20,%M%}}", skip=6),
    Shape("bitbucket", "bitbucket_token", ("ATBB",), rf"{B}ATBB[A-Za-z0-9]{{32,40}}{E}", skip=4, check=_mixed),
    Shape("atlassian", "atlassian_token", ("ata|TT3", "atc|TT3"), rf"{B}AT[AC]TT3(?:[A-Za-z0-9_=]|-(?!----)){{100,300}}",
          skip=6),
    Shape("npm", "npm_token", ("npm_",), rf"{B}npm_[A-Za-z0-9]{{36}}{E}", skip=4, check=_mixed),
    Shape("pypi", "pypi_token", ("pypi-AgE",),
          rf"{B}pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw){U}{{50,%M%}}", skip=19),
    Shape("rubygems", "rubygems_key", ("rubygems_",), rf"{B}rubygems_[0-9a-f]{{48}}{E}", skip=9),
    Shape("clojars", "clojars_token", ("CLOJARS_",), rf"{B}CLOJARS_[a-z0-9]{{60}}{E}", skip=8, check=_mixed),
    Shape("docker", "docker_token", ("dckr_",), rf"{B}dckr_(?:pat|oat)_{U}{{27,64}}", skip=9),
    Shape("figma", "figma_token", ("figd_",), rf"{B}figd_{U}{{38,42}}{E}", skip=5),
    Shape("postman", "postman_key", ("PMAK-",), rf"{B}PMAK-[0-9a-f]{{24}}-[0-9a-f]{{34}}{E}", skip=5),
    Shape("linear", "linear_key", ("lin_",), rf"{B}lin_(?:api|oauth)_[A-Za-z0-9]{{40}}{E}",
          skip=8, check=_mixed),
    Shape("notion", "notion_token", ("ntn_", "secret"),
          rf"{B}(?:ntn_[0-9]{{11}}[A-Za-z0-9]{{35}}|secret_[A-Za-z0-9]{{43}}){E}", skip=4, check=_mixed),
    Shape("contentful", "contentful_token", ("CF|PAT>-",), rf"{B}CFPAT-{U}{{43}}{E}", skip=6),
    # -- clouds and hosting ----------------------------------------------------------------
    Shape("aws", "aws_access_key", ("AKIA", "ASIA"),
          rf"{B_ALNUM}(?:AKIA|ASIA)[A-Z0-9]{{16}}(?![A-Za-z0-9])", skip=4),
    Shape("google", "google_api_key", ("AIza",), rf"{B}AIza{KEY}{{35}}{E}", skip=4),
    Shape("gocspx", "google_oauth_secret", ("GOCSPX-",), rf"{B}GOCSPX-{U}{{28}}{E}", skip=7),
    Shape("ya29", "google_oauth_token", ("ya29.", "1//0"),
          rf"(?:{B}ya29\.{U}{{30,%M%}}|{B_PATH}1//0{U}{{30,%M%}})", skip=5),
    Shape("gcp_key_id", "gcp_private_key_id", ("private",),
          rf"{B_WORD}private_key_id{VALUE_SEP}(?P<S>[0-9a-fA-F]{{40}})(?![0-9A-Za-z])"),
    Shape("azure_key", "azure_storage_key", ("account", "shared|access>key", "shared_|access>_key",
                                             "shared-|access>-key"),
          rf"(?i:account[_-]?key|shared[_-]?access[_-]?key){VALUE_SEP}"   # storageAccountKey, AZURE_ACCOUNT_KEY
          r"(?P<S>[A-Za-z0-9+/]{30,120}={0,2})(?![A-Za-z0-9+/=])", check=_mixed),
    Shape("azure_sas", "azure_sas_signature", ("sig=",), r"(?<=[?&;])sig=(?P<S>[A-Za-z0-9%+/]{30,120}(?:=|%3[Dd]){0,2})"
          r"(?![A-Za-z0-9%+/=])", check=_mixed),
    Shape("azure_ad", "azure_client_secret", ("q~",),
          rf"{B_AZURE}[A-Za-z0-9_~.]{{3}}[0-9]Q~(?:[A-Za-z0-9_~.]|-(?!----)){{31,34}}"
          r"(?![A-Za-z0-9_~.-])", back=4),
    Shape("alibaba", "alibaba_key", ("LTAI",), rf"{B}LTAI[A-Za-z0-9]{{20}}{E}", skip=4, check=_mixed),
    Shape("digitalocean", "digitalocean_token", ("dop|_v1_", "doo|_v1_", "dor|_v1_"),
          rf"{B}do[por]_v1_[0-9a-f]{{64}}{E}", skip=7),
    Shape("heroku", "heroku_key", ("HRKU-",), rf"{B}HRKU-{U}{{40,70}}", skip=5),
    Shape("fly", "flyio_token", ("fo1_", "fm>1", "fm>2_"),
          rf"{B}(?:fo1_{U}{{43}}|fm[12][ar]?_[A-Za-z0-9+/=_]{{60,%M%}})", skip=4),
    Shape("planetscale", "planetscale_token", ("pscale_",), rf"{B}pscale_(?:tkn|pw|oauth)_{U}{{32,64}}", skip=11,
          check=_mixed),
    Shape("cf_origin", "cloudflare_origin_ca_key", ("v1.0-",), rf"{B}v1\.0-[0-9a-f]{{24}}-[0-9a-f]{{120,160}}{E}", skip=5),
    Shape("supabase", "supabase_token", ("sbp_",), rf"{B}sbp_[0-9a-f]{{40}}{E}", skip=4, check=_hex_key),
    Shape("doppler", "doppler_token", ("dp.",),
          rf"{B}dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{{40,44}}{E}", skip=6, check=_mixed),
    Shape("vault", "vault_token", ("hv>s.", "hv>b.", "hv>r."), rf"{B}hv[sbr]\.{U}{{24,%M%}}", skip=4, check=_mixed),
    Shape("terraform", "terraform_token", (".atlasv1.",),
          rf"{B}[A-Za-z0-9]{{14}}\.atlasv1\.(?:[A-Za-z0-9_=]|-(?!----)){{60,90}}", back=14),
    Shape("pulumi", "pulumi_token", ("pul-",), rf"{B}pul-[0-9a-f]{{40}}{E}", skip=4),
    Shape("databricks", "databricks_token", ("dapi",), rf"{B}dapi[0-9a-f]{{32}}(?:-[0-9]{{1,2}})?(?![0-9A-Za-z])",
          skip=4, check=_hex_key),
    Shape("grafana", "grafana_token", ("gl>c_", "gl>sa_"),
          rf"{B}(?:glc_[A-Za-z0-9+/]{{32,%M%}}={{0,2}}|glsa_[A-Za-z0-9]{{32}}_[0-9a-f]{{8}}{E})", skip=4),
    Shape("newrelic", "newrelic_key", ("NRAK-",), rf"{B}NRAK-[A-Z0-9]{{27}}{E}", skip=5),
    Shape("dynatrace", "dynatrace_token", ("dt0c01.",), rf"{B}dt0c01\.[A-Z0-9]{{24}}\.[A-Z0-9]{{64}}{E}", skip=7),
    Shape("sentry_token", "sentry_token", ("sntry",),
          rf"{B}(?:sntrys_[A-Za-z0-9+/=_]{{40,%M%}}|sntryu_[0-9a-f]{{64}}{E})", skip=7),
    Shape("tailscale", "tailscale_key", ("ts|key-",),
          rf"{B}tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9]{{8,24}}-[A-Za-z0-9]{{24,64}}{E}", skip=6,
          check=_mixed),
    Shape("onepassword", "onepassword_token", ("ops_|eyj",), rf"{B}ops_eyJ[A-Za-z0-9+/=_-]{{40,%M%}}", skip=4),
    Shape("jfrog", "jfrog_token", ("AKCp",), rf"{B}AKCp[0-9][A-Za-z0-9]{{60,80}}{E}", skip=4, check=_mixed),
    Shape("buildkite", "buildkite_token", ("bkua_",), rf"{B}bkua_[0-9a-f]{{40}}{E}", skip=5, check=_hex_key),
    Shape("sourcegraph", "sourcegraph_token", ("sgp_",),
          rf"{B}sgp_(?:[0-9a-f]{{16}}_|local_)?[0-9a-f]{{40}}{E}", skip=4, check=_hex_key),
    Shape("airtable", "airtable_token", ("pat",), rf"{B}pat[A-Za-z0-9]{{14}}\.[0-9a-f]{{64}}{E}", skip=3,
          check=_mixed),
    Shape("resend", "resend_key", ("re_",), rf"{B}re_[A-Za-z0-9]{{8}}_[A-Za-z0-9]{{24}}{E}", skip=3,
          check=_url_userinfo),
    # a Firebase Cloud Messaging server key: an instance id, then ":APA91b"
    Shape("fcm", "firebase_fcm_key", (":a>pa91b",), rf"{B}AAAA[A-Za-z0-9_-]{{7}}:APA91b{U}{{120,160}}", back=11),
    # -- messaging, payments, mail ---------------------------------------------------------
    Shape("slack", "slack_token", ("xox", "xapp-"),
          rf"{B_ALNUM_DASH}(?:xox(?:[abposre]|e\.xox[bp])-[0-9]{DASHED}{{8,%M%}}|xapp-[0-9]-{DASHED}{{8,%M%}})",
          skip=5),
    Shape("slack_hook", "slack_webhook", ("hooks.slack.com/",),
          rf"{B_HOST}hooks\.slack\.com/(?:services|workflows|triggers)/"
          r"(?P<S>(?:[A-Za-z0-9_/+]|-(?!----)){20,200})"),
    Shape("discord_hook", "discord_webhook", ("discord",),
          rf"{B_HOST}discord(?:app)?\.com/api/webhooks/[0-9]{{5,30}}/(?P<S>{U}{{40,100}})"),
    # an Okta API token is sent as `SSWS <token>`, often without its header name
    Shape("okta", "okta_token", ("ssws",), rf"{B}(?i:ssws)[ \t]{{1,8}}(?P<S>{KEY}{{20,100}}){E}", check=_mixed),
    # an X (Twitter) app-only bearer token: a run of A's, then URL-encoded base64 (%2B, %3D)
    Shape("twitter", "twitter_bearer", (),
          rf"{B}(?P<S>A{{20,24}}[A-Za-z0-9]{{1,60}}%[0-9A-F]{{2}}(?:[A-Za-z0-9]|%[0-9A-F]{{2}}){{20,100}}){E}"),
    # an Asana personal access token: 1/<user id>:<hex> or 2/<user id>/<app id>:<hex>
    Shape("asana", "asana_token", (),
          rf"{B_ALNUM}[12]/[0-9]{{10,20}}(?:/[0-9]{{10,20}})?:[0-9a-f]{{32}}(?![0-9A-Za-z])"),
    Shape("discord", "discord_token", (),
          rf"{B}[MNO]{U}{{22,26}}\.{U}{{6,7}}\.{U}{{27,40}}{E}", check=_discord_id),
    Shape("telegram", "telegram_bot_token", (":a",), rf"(?<=[0-9]{{6}}):(?P<S>A{U}{{30,40}}){E}"),
    Shape("twilio", "twilio_key", ("SK",), rf"{B}SK[0-9a-fA-F]{{32}}(?![0-9A-Za-z])", skip=2, check=_hex_key),
    Shape("sendgrid", "sendgrid_key", ("SG.",), rf"{B}SG\.{U}{{22}}\.{U}{{43}}{E}", skip=3),
    Shape("mailgun", "mailgun_key", ("key-",), rf"{B}key-[0-9a-f]{{32}}(?![0-9A-Za-z])", skip=4, check=_hex_key),
    Shape("mailchimp", "mailchimp_key", ("-us",), rf"{B}[0-9a-f]{{32}}-us[0-9]{{1,2}}(?![0-9A-Za-z])", back=32,
          check=_hex_key),
    Shape("stripe", "stripe_key", ("sk>_", "rk>_", "whsec_"),
          rf"{B}(?:[rs]k_(?:live|test)_(?=[a-z]{{0,%M%}}[A-Z0-9])[A-Za-z0-9]{{24,%M%}}"
          r"|whsec_(?=[a-z]{0,%M%}[A-Z0-9])[A-Za-z0-9+/=]{32,%M%})", skip=8),
    Shape("square", "square_token", ("EAAA", "sq0"),
          rf"{B}(?:EAAA[A-Za-z0-9_-]{{60}}|sq0(?:atp|csp)-{U}{{22,43}}){E}", skip=7, check=_mixed),
    Shape("shopify", "shopify_token", ("shp",),
          rf"{B}shp(?:at|ca|pa|ss)_[a-fA-F0-9]{{32}}{E}", skip=6),
    Shape("shippo", "shippo_token", ("shippo_",), rf"{B}shippo_(?:live|test)_[0-9a-f]{{40}}{E}", skip=12),
    Shape("mapbox", "mapbox_token", ("sk>.",), rf"{B}sk\.eyJ{U}{{20,%M%}}\.{U}{{20,60}}", skip=3),
    # a PEM private key in base64 (a Kubernetes secret's tls.key, `base64 key.pem`, wrapped
    # at 76 or not): "LS0tLS1CRUdJTi" is "-----BEGIN"; a certificate or a public key stays
    Shape("pem_base64", "private_key", ("LS0tLS1CRUdJTi",),
          rf"{after_none_of('A-Za-z0-9+/')}LS0tLS1CRUdJTi(?:[A-Za-z0-9+/]|(?:\r?\n|(?:\\{{1,3}}r)?\\{{1,3}}n)"
          rf"{base64_line_ahead('%T%')}){{20,%T%}}={{0,2}}",
          check=_base64_private_key),
    # a Django project's generated SECRET_KEY (startproject): its symbols and an `=` read
    # as code or a glob to the key-name rules, so it is known by its prefix
    Shape("django", "django_secret_key", ("django-insecure-",),
          r"(?<![A-Za-z0-9_])django-insecure-(?P<S>[A-Za-z0-9!@#$%^&*(=+)_-]{50})", check=_not_a_word),
    # -- tokens anyone signs, and credentials inside URLs -------------------------------------
    Shape("jwt", "jwt", ("eyj",), rf"{B}eyJ{KEY}{{8,%T%}}\.eyJ{KEY}{{8,%T%}}\.{KEY}{{0,%T%}}", skip=3),
    Shape("age", "age_secret_key", ("AGE-|SECRET",), rf"{B}AGE-SECRET-KEY-1[0-9A-Z]{{58}}{E}", skip=16),
    # a PuTTY .ppk file: the lines after Private-Lines (raw or JSON-escaped line breaks)
    Shape("putty", "putty_private_key", ("private>-lines",),
          r"(?i:private-lines):[ ]?[0-9]{1,3}(?:\r?\n|(?:\\{1,3}r)?\\{1,3}n)[ \t]{0,8}"       # (lines may be indented)
          r"(?P<S>[A-Za-z0-9+/=](?:[A-Za-z0-9+/=]|(?:[\r\n \t]|\\{1,3}[rn])(?![ \t]{0,8}Private-)"
          rf"{base64_line_ahead('%M%')}){{0,%M%}})"),
    Shape("sentry_dsn", "sentry_dsn", ("://",),
          r"://(?P<S>[0-9a-f]{32}(?::[0-9a-f]{32})?)@(?=[A-Za-z0-9.-]{0,100}sentry|o[0-9]{1,12}\.ingest\.)"),
    Shape("url_token", "url_token", ("://",),
          r"://(?P<S>[A-Za-z0-9_.~-]{20,200})@(?=[A-Za-z0-9\[_-])", check=_url_userinfo),
)

# Where a prefix-less shape can start: (regex over the text, the shape, the
# characters a token may hold, its shortest and longest run before the hit).
# Shapes with no word to find them by (a word per shape would outgrow the
# trigger search's fast path: reducers/secret_triggers.py) are found here.
# Each regex opens with a literal, so that its search skips ahead in C (a
# lookbehind or a class first makes it try every position: ~20x slower).
FREE_SCANS = ((re.compile(r"\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27}", re.ASCII), "discord",
               frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"), 23, 27),
              (re.compile("A" * 20), "twitter", frozenset(), 0, 0),
              (re.compile(r"/[0-9]{10}", re.ASCII), "asana", frozenset("12"), 1, 1))
FREE_SCAN_MIN = 44                  # the shortest text a free scan can find anything in


def expand(pattern: str, max_secret: int) -> str:
    """The pattern with the length bounds of one MAX_SECRET filled in."""
    return pattern.replace("%M%", str(max_secret)).replace("%T%", str(max(max_secret // 3, 8)))
