"""Secret redaction before anything is written (on by default; `--no-redact`
turns it off). Pure functions: text in, text out.

Each secret becomes "[REDACTED:<kind>]" and its context stays:

  shapes, wherever they appear
    sk-ant-…                   anthropic_key     sk-…                 openai_key
    ghp_/gho_/ghu_/ghs_/ghr_…, github_pat_…      github_token
    xox[abposre]-…, xapp-…     slack_token       AKIA + 16            aws_access_key
    glpat- + 20+               gitlab_token      AIza + 35            google_api_key
    sk_live_/rk_live_/sk_test_/rk_test_ + 24+ letters and digits      stripe_key
    eyJ….eyJ….…                jwt
    -----BEGIN … PRIVATE KEY----- body          private_key  (BEGIN/END lines kept)
    (sk-, glpat- and the Stripe shapes need an uppercase letter or a digit in
    the key: sk-notification, glpat-abcdefghijklmnopqrst read as names.)
  contexts, only the credential is replaced
    Authorization: [scheme] <cred>   bearer (basic_auth for Basic)
    Bearer <cred>                    bearer
    Basic <base64 of user:pw>        basic_auth
    curl -u user:<pw>                basic_auth
    scheme://user:<pw>@host          url_password
    <secret-named key> = : := => <value>   secret_value  (JSON "k": "v", YAML k: v,
        env/shell K=v and export K="v", TOML, HTTP headers X-Api-Key: v;
        the key and the quotes are kept)

Secret-named keys: the name contains secret, password/passwd, pwd, api_key/
apikey/api-key, access_key, private_key, credential(s) or token (ASCII case-
insensitive) -- but not tokens/tokenizer, not page/next/sync/cursor tokens, not
a segment of a colon or slash path (arn:aws:secretsmanager:…, AWS::X::ApiKey),
and not a name whose remainder says it holds something else (…_url, …_path,
…_file, …Name, …_type, …_count, …_env, …Id, …_expires_in, …_prefix …).

Which values count as credentials, and which are never touched (git SHAs,
UUIDs, digests: what people recall later): reducers/credentials.py.

Speed: every rule starts with a trigger word, so the text is lowered once
(bytes, ASCII only, same length) and one Aho-Corasick pass finds the exact
positions where a rule can start; text with none returns at once (the same
object), and the full rule set is tried only at those positions. Same result
as trying every position (a test checks that), ~25x faster in CPython.

Streaming: every quantifier is bounded, so whether a rule matches at position
i depends only on the text in [i - CONTEXT, i + window) (the env-name check
walks back at most CONTEXT characters). StreamRedactor emits
everything whose fate is already decided and holds back the last `window`
characters; its output equals redact() of the whole text for any chunking."""
from __future__ import annotations

import re
from functools import lru_cache

from ahocorasick_rs import BytesAhoCorasick

from reducers.credentials import (basic_payload, credential_like, filler, labelled_credential, password_like, pem_body,
                                 recall_handle)

MAX_SECRET = 64 * 1024          # the longest secret recognised (PEM blocks included)
MIN_SECRET = 64                 # the shape rules need room (ghp_ + 36)
CONTEXT = 32                    # longest look-behind of any rule, with room to spare
_BATCH_WINDOWS = 4              # StreamRedactor scans when this many windows are waiting
_MAX_NESTING = 16               # values searched inside values (JSON in JSON...): stack bound

KINDS = ("openai_key", "anthropic_key", "github_token", "slack_token", "aws_access_key",
         "gitlab_token", "google_api_key", "stripe_key",
         "jwt", "private_key", "bearer", "basic_auth", "url_password", "secret_value")

_A = re.ASCII                   # ASCII-only case folding: the trigger search lowers ASCII only

_LEADING_WS = re.compile(r"(?:\s|\\[nrt])*", _A)

_KEY_SEGMENTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", _A)
# The rest of a secret-named key that says the value is something else.
_NOT_SECRET_SEGMENTS = frozenset("""url uri path file filename dir directory endpoint name names env
    var type field header param hint prompt label len length count limit budget policy ttl format
    usage id ids arn prefix suffix source provider process helper method mode scheme version
    algorithm template pattern regex option size min max location expires expiry expiration
    lifetime last used changed updated at date time""".split())


def _names_something_else(rest: str) -> bool:
    """`password_reset_url`, `secretName`, `access_key_id`, `token_expires_in`..."""
    return any(seg.lower() in _NOT_SECRET_SEGMENTS for seg in _KEY_SEGMENTS.findall(rest))


# ---- the rules ----------------------------------------------------------------------------

# Lowercase words every rule starts with (its match starts exactly there), found on the
# ASCII-lowered text in one Aho-Corasick pass (2.5 us per text of real transcripts against
# 6.1 us for the best set of CPython regex scans; 200 against 80 MB/s on long outputs).
_TRIGGERS = ("token", "sk-", "akia", "api_key", "api-key", "apikey", "access_key", "access-key",
             "accesskey", "private_key", "private-key", "privatekey", "secret", "credential",
             "bearer", "basic ", "basic\t", "passw", "pwd", "authoriz", "://",
             "-----begin", "-u ", "-u\t", "-u=", "--user",
             "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "xapp-", "eyj",
             "glpat-", "aiza", "sk_live_", "sk_test_", "rk_live_", "rk_test_")


# A key's characters, where a dash never starts "-----": a key glued to a
# PEM header must not swallow it (the private key behind it would go unseen).
_KEY_CHAR = r"(?:[A-Za-z0-9_]|-(?!----))"
_DASHED_CHAR = r"(?:[A-Za-z0-9]|-(?!----))"


def _rules_pattern(m: int) -> str:
    third = max(m // 3, 8)
    key, dashed = _KEY_CHAR, _DASHED_CHAR
    return rf"""
  (?P<pem>-----BEGIN[ ](?P<pem_label>(?:[A-Z0-9]{{1,16}}[ ]){{0,3}}PRIVATE[ ]KEY(?:[ ]BLOCK)?)-----
     (?:(?P<pem_body>(?:[^-]|-(?!----BEGIN[ ])){{0,{m}}}?)-----END[ ](?P=pem_label)-----
       |(?P<pem_open>(?:[A-Za-z0-9+/=\r\n]|\\[nr]){{1,{m}}})))
 |(?P<ant>(?<![A-Za-z0-9_\]-])sk-ant-(?=[a-z_-]{{0,{m}}}[A-Z0-9]){key}{{20,{m}}})
 |(?P<oai>(?<![A-Za-z0-9_\]-])sk-(?=[a-z_-]{{0,{m}}}[A-Z0-9]){key}{{20,{m}}})
 |(?P<gh>(?<![A-Za-z0-9_\]])(?:gh[pousr]_[A-Za-z0-9]{{36,{m}}}|github_pat_[A-Za-z0-9_]{{22,{m}}}))
 |(?P<slack>(?<![A-Za-z0-9\]-])(?:xox[abposre]-[0-9]{dashed}{{8,{m}}}
                              |xapp-[0-9]-{dashed}{{8,{m}}}))
 |(?P<aws>(?<![A-Za-z0-9\]])AKIA[A-Z0-9]{{16}}(?![A-Za-z0-9]))
 |(?P<gitlab>(?<![A-Za-z0-9_\]-])glpat-(?=[a-z_-]{{0,{m}}}[A-Z0-9]){key}{{20,{m}}})
 |(?P<google>(?<![A-Za-z0-9_\]-])AIza{key}{{35}}(?![A-Za-z0-9_]|-(?!----)))
 |(?P<stripe>(?<![A-Za-z0-9_\]-])[rs]k_(?:live|test)_(?=[a-z]{{0,{m}}}[A-Z0-9])[A-Za-z0-9]{{24,{m}}})
 |(?P<jwt>(?<![A-Za-z0-9_\]-])eyJ{key}{{8,{third}}}\.eyJ{key}{{8,{third}}}
          \.{key}{{0,{third}}})
 |(?P<authz>(?<![A-Za-z0-9_\]])(?i:authorization)(?:\\?["'])?[ \t]{{0,8}}[:=][ \t]{{0,8}}(?:\\?["'])?
     (?:(?P<authz_scheme>(?i:bearer|token|basic|digest|apikey|key|[a-z0-9]{{1,8}}-hmac-[a-z0-9]{{1,8}}))
        [ \t]{{1,8}})?
     (?P<authz_val>(?:[A-Za-z0-9._~+/=\[\]]|-(?!----)){{1,{m}}}))
 |(?P<bearer>(?<![A-Za-z\]])(?i:bearer)[ \t]{{1,8}}(?P<bearer_val>(?:[A-Za-z0-9._~+/=\[\]]|-(?!----)){{1,{m}}}))
 |(?P<basic>(?<![A-Za-z\]])(?i:basic)[ \t]{{1,8}}(?P<basic_val>[A-Za-z0-9+/]{{4,{m}}}={{0,2}})
     (?![A-Za-z0-9+/=]))
 |(?P<url>://(?P<url_user>[^\s:/?\#@'"<>\\\[\]]{{0,{m}}}):(?P<url_pw>[^\s/?\#@'"<>\\]{{1,{m}}})
     @(?=[A-Za-z0-9\[_-]))
 |(?P<curl>(?<![A-Za-z0-9_\]-])(?:-u|--user)(?:[ \t]{{1,8}}|=)["']?
     (?P<curl_user>[^\s:'"`\[\]\\-][^\s:'"`\[\]\\]{{0,{m}}}):(?P<curl_pw>[^\s'"`\\]{{1,{m}}}))
 |(?P<kv>(?i:(?<!page)(?<!page_)(?<!page-)(?<!next)(?<!next_)(?<!sync)(?<!sync_)(?<!cursor_)
            (?<!resume)(?<!resume_)(?<!continuation_)(?<![:/]))
     (?P<kv_word>(?i:secret|passw(?:or)?d|pwd|api[_-]?key|access[_-]?key|private[_-]?key
                    |credentials?|token(?!s|i[sz])))
     (?P<kv_rest>[A-Za-z0-9_.-]{{0,64}})
     (?:\\?["'])?[ \t]{{0,8}}(?::=|=>|[:=])(?![:=])[ \t]{{0,8}}
     (?:"(?P<kv_dq>(?:[^"\\\n]|\\[^\n]){{1,{m}}})"
       |\\"(?P<kv_eq>(?:[^"\\\n]|\\\\\\["\\]|\\\\[^"\\\n]|\\[^"\\\n]){{1,{m}}})\\"
       |'(?P<kv_sq>[^'\n]{{1,{m}}})'
       |(?P<kv_bare>[^\s"'`,;&<>(){{}}\\]{{1,{m}}})(?:(?=\()(?P<kv_call>))?))
"""


class _Rules:
    """The compiled rule set for one MAX_SECRET (tests use small ones to
    exercise stream cuts on small texts)."""

    def __init__(self, max_secret: int):
        if max_secret < MIN_SECRET:
            raise ValueError(f"max_secret must be at least {MIN_SECRET}")
        self.max_secret = max_secret
        self.pattern = re.compile(_rules_pattern(max_secret), _A | re.X)
        # How far past its start a match attempt can look: the widest rule is a
        # value of JSON-in-JSON escapes (up to 4 chars each) after a key of ~100.
        self.window = 4 * max_secret + 256
        self.triggers = BytesAhoCorasick([w.encode() for w in _TRIGGERS])

    # -- scanning --

    def candidates(self, text: str, start: int = 0) -> list[int]:
        """Sorted positions >= start where a rule can begin."""
        low = text[start:].encode("ascii", "replace").lower()   # one byte per char
        hits = self.triggers.find_matches_as_indexes(low, overlapping=True)   # words may overlap
        if not hits:
            return []
        return sorted({at + start for _, at, _ in hits})

    def scan(self, text: str, start: int, stop: int, depth: int = 0) -> tuple[list[str], int, int]:
        """Redact matches that begin in [start, stop). Returns (pieces, cut,
        count): pieces are text[start:cut] redacted, and cut >= stop unless
        stop is past the end."""
        pieces, count, last = [], 0, start
        for pos in self.candidates(text, start):
            if pos >= stop:
                break
            if pos < last:
                continue
            m = self.pattern.match(text, pos)
            if m is None:
                continue
            out, n = self.replace(m, depth)
            pieces.append(text[last:pos])
            pieces.append(out)
            count += n
            last = m.end()
        cut = max(last, min(stop, len(text)))
        pieces.append(text[last:cut])
        return pieces, cut, count

    def redact(self, text: str, depth: int = 0) -> tuple[str, int]:
        """`depth`: how many values this text is nested in (a value is searched
        for nested secrets; past _MAX_NESTING it is judged whole, so that
        `token=token=token=…` cannot exhaust the stack)."""
        if not text or depth > _MAX_NESTING:
            return text, 0
        pieces, _, count = self.scan(text, 0, len(text), depth)
        return ("".join(pieces) if count else text), count

    # -- replacing one match --

    def replace(self, m: re.Match, depth: int = 0) -> tuple[str, int]:
        rule = m.lastgroup
        if rule in _SHAPES:
            return _shape(m, rule)
        if rule == "pem":
            return self._pem(m, depth)
        if rule == "kv":
            return self._key_value(m, depth)
        if rule == "authz":
            scheme = (m.group("authz_scheme") or "").lower()
            kind = "basic_auth" if scheme == "basic" else "bearer"
            return self._value(m, "authz_val", kind, labelled_credential, depth)
        if rule == "bearer":
            return self._value(m, "bearer_val", "bearer", labelled_credential, depth)
        if rule == "basic":
            return self._value(m, "basic_val", "basic_auth", basic_payload, depth)
        if rule == "url":
            return self._value(m, "url_pw", "url_password", password_like, depth)
        if rule == "curl":
            # not `docker -u 1000:1000` (uid:gid), `sort -u -t: -k1` nor `-u sha256:<hex>`
            digest = recall_handle(f"{m.group('curl_user')}:{m.group('curl_pw')}")
            return self._value(m, "curl_pw", "basic_auth",
                               lambda v: password_like(v) and not v.isdigit() and v[0] != "-",
                               depth, decline=digest)
        raise AssertionError(rule)

    def _value(self, m: re.Match, group: str, kind: str, is_secret, depth: int, decline: bool = False):
        """Replace the value `group` of a context match, keeping the rest of
        the match. A value that holds a known shape (or a nested context) is
        redacted as that; otherwise `is_secret` decides."""
        text, start = m.string, m.start()
        a, b = m.span(group)
        value = text[a:b]
        inner, n = self.redact(value, depth + 1)
        if n:
            return text[start:a] + inner + text[b:m.end()], n
        if decline or not is_secret(value):
            return m.group(), 0
        return f"{text[start:a]}[REDACTED:{kind}]{text[b:m.end()]}", 1

    def _key_value(self, m: re.Match, depth: int):
        group = next(g for g in ("kv_dq", "kv_eq", "kv_sq", "kv_bare") if m.group(g) is not None)
        word = m.group("kv_word").lower()
        # a key that names something else, or `token = make_token(...)`: a call
        excluded = _names_something_else(m.group("kv_rest")) or m.group("kv_call") is not None
        quoted, token = group != "kv_bare", word.startswith("token")
        password = word.startswith("passw") or word == "pwd"
        # a name that ends in the word (db_password, GITHUB_TOKEN) holds the thing
        # itself; password_store, PASSWORD_HASHER hold something about it
        ends_in_word = not m.group("kv_rest")
        keep_ids = token
        if (password or token) and ends_in_word:
            name = _env_name(m, group)
            # DB_PASSWORD=v: shell and .env values are literals, never a variable
            # (but PWD and OLDPWD hold the working directory);
            # GITHUB_TOKEN=<40 hex>: a credential, not a sync handle
            if name is not None and name not in ("PWD", "OLDPWD"):
                quoted, keep_ids = quoted or password, False
        return self._value(m, group, "secret_value",
                           lambda v: credential_like(v, quoted, password=password, keep_ids=keep_ids,
                                                     one_case=ends_in_word),
                           depth, decline=excluded)

    def _pem(self, m: re.Match, depth: int):
        group = "pem_body" if m.group("pem_body") is not None else "pem_open"
        text, start = m.string, m.start()
        a, b = m.span(group)
        body = text[a:b]
        if not pem_body(body):
            # Not a key (code that prints PEM markers, say): look inside anyway.
            inner, n = self.redact(body, depth + 1)
            return text[start:a] + inner + text[b:m.end()], n
        lead = _LEADING_WS.match(body).group()
        trail = body[_blank_tail(body):]
        return f"{text[start:a]}{lead}[REDACTED:private_key]{trail}{text[b:m.end()]}", 1


_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*", _A)
_ENV_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_ENV_SEPARATORS = frozenset(("=", '="', "='", '=\\"'))


def _env_name(m: re.Match, group: str) -> str | None:
    """The name of an env assignment `DB_PASSWORD=v`, `export GITHUB_TOKEN="v"`,
    `-e PASSWORD=v`: a whole UPPERCASE name, then `=` and no space (shell and
    .env syntax). None for `password=v`, `dbPASSWORD=v`, `cfg.PASSWORD=v` or
    `PASSWORD = v` (code). Reads at most CONTEXT characters before the match
    (the stream keeps them)."""
    text = m.string
    if text[m.end("kv_rest"):m.start(group)] not in _ENV_SEPARATORS:
        return None
    start = m.start()
    lo = max(start - CONTEXT, 0)
    while start > lo and text[start - 1] in _ENV_NAME_CHARS:
        start -= 1
    if _ENV_NAME.fullmatch(text, start, m.end("kv_rest")) is None:
        return None
    if start > lo:
        before = text[start - 1]
        if before == ".":
            return None
        # a lowercase letter glued on, unless it ends an escape: "...\nDB_PASSWORD=v"
        if before.isascii() and before.isalpha() and not (start - 2 >= lo and text[start - 2] == "\\"):
            return None
    return text[start:m.end("kv_rest")]


def _blank_tail(body: str) -> int:
    """Where the trailing run of whitespace and \\n / \\r escapes starts (an
    escaped backslash before an n is not an escape: JSON text must stay valid)."""
    end = len(body)
    while end:
        if body[end - 1].isspace():
            end -= 1
        elif end >= 2 and body[end - 1] in "nrt" and body[end - 2] == "\\":
            first = end - 2
            while first > 0 and body[first - 1] == "\\":
                first -= 1
            if (end - 1 - first) % 2 == 0:      # "\\\\n": a backslash, then a plain n
                break
            end -= 2
        else:
            break
    return end


_SHAPES = {"ant": "anthropic_key", "oai": "openai_key", "gh": "github_token",
           "slack": "slack_token", "aws": "aws_access_key", "gitlab": "gitlab_token",
           "google": "google_api_key", "stripe": "stripe_key", "jwt": "jwt"}
_SHAPE_PREFIX = {"ant": 7, "oai": 3, "gh": 4, "slack": 5, "aws": 4, "gitlab": 6, "google": 4,
                 "stripe": 8, "jwt": 3}


def _shape(m: re.Match, rule: str) -> tuple[str, int]:
    body = m.group()[_SHAPE_PREFIX[rule]:]
    if filler(body):                            # sk-XXXXXXXXXXXXXXXXXXXXXXXX: a placeholder
        return m.group(), 0
    return f"[REDACTED:{_SHAPES[rule]}]", 1


@lru_cache(maxsize=8)
def _rules(max_secret: int) -> _Rules:
    return _Rules(max_secret)


def redact(text: str, *, max_secret: int = MAX_SECRET) -> tuple[str, int]:
    """(text with every secret replaced by "[REDACTED:<kind>]", how many).
    `max_secret`: the longest secret recognised; leave it (tests shrink it)."""
    if max_secret == MAX_SECRET and _MEMO_MIN <= len(text) <= _MEMO_MAX:
        return _redact_memo(text)
    return _rules(max_secret).redact(text)


# Agent transcripts repeat mid-size texts (files read again, the same tool output
# in an event and its artifact): remember recent answers. At most 1024 x 32K chars.
_MEMO_MIN, _MEMO_MAX = 256, 32 * 1024


@lru_cache(maxsize=1024)
def _redact_memo(text: str) -> tuple[str, int]:
    return _rules(MAX_SECRET).redact(text)


class StreamRedactor:
    """redact() for payloads too big to hold: feed chunks, emit what is
    decided. Holds at most 4 windows (~1M chars at MAX_SECRET) plus one
    chunk. Concatenated outputs equal redact(whole text)[0] for any chunking."""

    def __init__(self, max_secret: int = MAX_SECRET):
        self._rules = _rules(max_secret)
        self._chunks: list[str] = []
        self._pending = 0            # characters in _chunks
        self._buf = ""               # CONTEXT chars already emitted + undecided text
        self._emitted = 0            # how many leading chars of _buf are context only
        self.count = 0

    @property
    def held(self) -> int:
        """Characters held in memory (context + undecided + unscanned)."""
        return len(self._buf) + self._pending

    def feed(self, chunk: str) -> str:
        self._chunks.append(chunk)
        self._pending += len(chunk)
        window = self._rules.window
        # Batch: scan once 4 windows wait; the last window is scanned again next
        # time, so each char is scanned ~4/3 times.
        if len(self._buf) - self._emitted + self._pending < _BATCH_WINDOWS * window:
            return ""
        return self._advance(stop_margin=window)

    def close(self) -> str:
        out = self._advance(stop_margin=None)
        self._buf, self._emitted = "", 0
        return out

    def _advance(self, stop_margin: int | None) -> str:
        buf = self._buf + "".join(self._chunks)
        self._chunks, self._pending = [], 0
        # A match attempt that starts before `stop` sees only text inside buf, so
        # its outcome is final; later starts wait for more text.
        stop = len(buf) + 1 if stop_margin is None else len(buf) - stop_margin
        pieces, cut, n = self._rules.scan(buf, self._emitted, stop)
        self.count += n
        keep = max(cut - CONTEXT, 0)        # look-behinds need a little left context
        self._buf, self._emitted = buf[keep:], cut - keep
        return "".join(pieces)
