"""Secret redaction, applied before anything is written.

Credentials with known shapes are replaced by `[REDACTED:<kind>]`, keeping
the context around them (the header name, the URL's user and host, the key
of a key=value pair) so the event still reads naturally. Git SHAs, UUIDs,
ULIDs and content hashes are never touched: they are exactly what people
recall later, and none of the patterns below can match a bare hex or UUID
string.

A cheap trigger scan runs first: text with no trigger at all (the common
case) returns untouched after one regex search."""
from __future__ import annotations

import re
from functools import lru_cache

MAX_SECRET = 64 * 1024          # the longest secret the stream redactor keeps whole (PEM blocks)
_R = "[REDACTED:{}]"

# Lowercase literals that must appear for any pattern to match. Substring
# tests on the lowercased text run at memory speed; a regex alternation of
# the same words runs at a few MB/s in Python's engine.
_KEY_WORDS = ("secret", "passw", "pwd", "api_key", "api-key", "apikey", "access_key", "access-key",
              "private_key", "private-key", "token", "credential")
_SHAPE_WORDS = ("sk-", "sk_", "rk_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "akia",
                "asia", "eyj", "-----begin")
_CONTEXT_WORDS = ("authorization", "bearer", "://")
_ALL_WORDS = (*_SHAPE_WORDS, *_CONTEXT_WORDS, *_KEY_WORDS)

# Known token shapes: (kind, pattern). Word boundaries keep them off longer identifiers.
_SHAPES: list[tuple[tuple[str, ...], str, re.Pattern]] = [
    (("-----begin",), "private_key", re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]{0,65536}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    (("sk-",), "anthropic_key", re.compile(r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}")),
    (("sk-",), "openai_key", re.compile(r"(?<![A-Za-z0-9_-])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    (("sk_", "rk_"), "stripe_key", re.compile(r"(?<![A-Za-z0-9_])[sr]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), "github_token", re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})")),
    (("xox",), "slack_token", re.compile(r"(?<![A-Za-z0-9_])xox[abprse]-[A-Za-z0-9-]{10,}")),
    (("akia", "asia"), "aws_access_key", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])")),
    (("eyj",), "jwt", re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
]

_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")

# Context-bearing patterns: keep group 1 (the context), replace group 2 (the credential).
# [ \t] rather than \s: a match never spans lines, so the stream redactor may cut at any newline.
_HEADER = re.compile(r"(?i)(\bauthorization[ \t]*[:=][ \t]*[\"']?(?:bearer|basic|token|digest)?[ \t]*)([^\s\"',;]{8,})")
_BEARER = re.compile(r"(?i)(\bbearer[ \t]+)([A-Za-z0-9._~+/=-]{12,})")
_URL_PASSWORD = re.compile(r"([a-z][a-z0-9+.-]*://[^/\s:@\"']+:)([^/\s@\"']{1,256})(@)", re.IGNORECASE)

# key = value, key: value, "key": "value", KEY="value", X-Api-Key: value.
# Found in two steps (a literal scan for the secret word, then a local look
# at the whole name and what follows it): one big regex with a free-form
# name prefix backtracks quadratically on long identifiers.
_SECRET_WORD = re.compile(r"secret|passw(?:or)?d|pwd|api[_-]?key|access[_-]?key|private[_-]?key|"
                          r"token|credential")         # matched against lowercased text
_SECRET_WORD_ANYCASE = re.compile(_SECRET_WORD.pattern, re.IGNORECASE)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_SEP_VALUE = re.compile(r"""(?P<sep>["']?[ \t]*(?::|=>|=)[ \t]*)(?:(?P<q>["'])(?P<qv>[^"'\n\\]{1,512})(?P=q)|(?P<v>[^\s"',;}\])\\]+))""")
# Names that contain a secret word but hold no secret.
_NOT_SECRET_NAME = re.compile(
    r"(?i)(tokens|token_?count|tokeniz|max_?tokens|num_?tokens|token_?budget|token_?limit|token_?usage|"
    r"token_?type|token_?url|token_?endpoint|password_?reset|reset_?password|forgot_?password|"
    r"password_?policy|passwordless|secret_?name|secret_?id|secret_?arn|secretsmanager|"
    r"credential_?helper|credentials_?file|oldpwd|_pwd_|pwd_dir|keywords?)")
# Under these names even a hex value is a credential; under weaker ones
# (…token) a SHA, UUID or digest is an identifier and stays.
_STRONG_NAME = re.compile(r"(?i)secret|passw|pwd|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credential")
# Git SHAs, sha256 digests, UUIDs and ULIDs are what people recall later: never a secret value.
_IDENTIFIER_HASH = re.compile(
    r"^(?:(?:sha1|sha256|sha512|md5)[:-])?(?:[0-9a-fA-F]{7,12}|[0-9a-fA-F]{40}|[0-9a-fA-F]{64}|[0-9a-fA-F]{128}|"
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9A-HJKMNP-TV-Z]{26})$")
_CODE_REFERENCE = re.compile(r"^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?:\(\))?;?$")
_PLACEHOLDER = re.compile(
    r"(?i)^(?:\$\{?[A-Z0-9_]+\}?|<[^>]*>|\{\{.*\}\}|x{3,}|\*{3,}|\.{3,}|…|null|none|true|false|"
    r"undefined|redacted|changeme|example|placeholder|your[_-].*|\[redacted.*|%s|%\(.*\)s)$")
_COMMON_WORDS = frozenset("""the a an and or not is are was be to of in on for with from this that it as at by
    required optional string str int bool boolean number value values here there none null empty set unset
    invalid missing valid yes no ok env file files field fields see above below default true false""".split())


def _looks_like_credential(value: str, quoted: bool) -> bool:
    """A value under a secret-looking name is redacted only when it could be
    a credential: long enough, and not a number, flag, placeholder, plain
    word, path/URL, or (unquoted) a code reference like `data.token`."""
    v = value.strip()
    if len(v) < 8 or v.startswith("[REDACTED"):
        return False
    if _PLACEHOLDER.match(v) or v.lower() in _COMMON_WORDS:
        return False
    if re.fullmatch(r"[-+]?\d+(\.\d+)?", v) or re.fullmatch(r"[a-z]+", v):
        return False
    if v.startswith(("http://", "https://", "/", "./", "~/")) and "@" not in v:
        return False
    if not quoted and (any(c in v for c in "()<>{}[]")
                       or (_CODE_REFERENCE.match(v) and ("." in v or v.endswith(";")) and not any(c.isdigit() for c in v))):
        return False                                         # data.token, state.auth.token: code, not a secret
    return True


def _is_secret_name(name: str) -> bool:
    if _NOT_SECRET_NAME.search(name):
        return False
    low = name.lower()
    i = low.find("token")
    # "token" counts as a whole word part (access_token, X-Auth-Token), not inside another word
    return i < 0 or i == 0 or not low[i - 1].isalpha() or _SECRET_WORD.search(low.replace("token", ""))


def redact(text: str) -> tuple[str, int]:
    """(text with secrets replaced, number replaced)."""
    if not text:
        return text, 0
    if 256 <= len(text) <= _MEMO_MAX_CHARS:
        return _redact_memo(text)     # agent transcripts repeat long texts (re-read files)
    return _redact(text)


_MEMO_MAX_CHARS = 65536


@lru_cache(maxsize=8192)
def _redact_memo(text: str) -> tuple[str, int]:
    return _redact(text)


def _redact(text: str) -> tuple[str, int]:
    low = text.lower()
    hits = {w for w in _ALL_WORDS if w in low}     # ~30 memchr-speed scans beat one regex alternation
    if not hits:
        return text, 0
    count = 0

    def replace_with(kind):
        def repl(m):
            nonlocal count
            count += 1
            return _R.format(kind)
        return repl

    for triggers, kind, pattern in _SHAPES:
        if not hits.isdisjoint(triggers):
            text = pattern.sub(replace_with(kind), text)

    def keep_context(kind):
        def repl(m):
            nonlocal count
            if m.group(2).startswith("[REDACTED"):
                return m.group(0)
            count += 1
            return m.group(1) + _R.format(kind) + (m.group(3) if m.re is _URL_PASSWORD else "")
        return repl

    if "authorization" in hits:
        text = _HEADER.sub(keep_context("bearer"), text)
    if "bearer" in hits:
        text = _BEARER.sub(keep_context("bearer"), text)
    if "://" in hits and "@" in text:
        text = _URL_PASSWORD.sub(keep_context("url_password"), text)
    if not hits.isdisjoint(_KEY_WORDS):
        text, n = _redact_key_values(text)
        count += n
    return text, count


def _redact_key_values(text: str) -> tuple[str, int]:
    out: list[str] = []
    pos = count = 0
    low = text.lower()
    # lower() keeps offsets except for a few characters (e.g. U+0130); fall back then.
    words = _SECRET_WORD.finditer(low) if len(low) == len(text) else _SECRET_WORD_ANYCASE.finditer(text)
    for m in words:
        if m.start() < pos:
            continue
        s, e = m.start(), m.end()
        while s > 0 and text[s - 1] in _NAME_CHARS:
            s -= 1
        while e < len(text) and text[e] in _NAME_CHARS:
            e += 1
        if s > 0 and text[s - 1] == "$":                      # $TOKEN: a variable reference
            continue
        kv = _SEP_VALUE.match(text, e)
        if kv is None or not _is_secret_name(text[s:e]):
            continue
        quote = kv["q"] or ""
        value = kv["qv"] if quote else kv["v"]
        if not _looks_like_credential(value, bool(quote)):
            continue
        if _IDENTIFIER_HASH.match(value.strip()) and not _STRONG_NAME.search(text[s:e]):
            continue                       # sync_token: <sha>, request_token: <uuid>: ids people recall
        out.append(text[pos:kv.start("qv" if quote else "v")])
        out.append(_R.format("secret_value"))
        pos = kv.end("qv" if quote else "v")
        count += 1
    if not count:
        return text, 0
    out.append(text[pos:])
    return "".join(out), count


class StreamRedactor:
    """Redacts text fed in chunks with bounded memory: output is emitted up
    to the last newline that is not inside an unfinished PEM block, so a
    secret is only ever split if it is longer than MAX_SECRET. Concatenated
    output equals redact(whole text) under that bound."""

    def __init__(self):
        self._pending = ""
        self.count = 0

    def feed(self, chunk: str) -> str:
        self._pending += chunk
        cut = self._safe_cut()
        if cut <= 0:
            if len(self._pending) <= 2 * MAX_SECRET:
                return ""
            cut = len(self._pending) - MAX_SECRET        # no newline for a long stretch: bound memory
        ready, self._pending = self._pending[:cut], self._pending[cut:]
        out, n = redact(ready)
        self.count += n
        return out

    def close(self) -> str:
        out, n = redact(self._pending)
        self._pending = ""
        self.count += n
        return out

    def _safe_cut(self) -> int:
        """End of the text that can be redacted now: the last newline, moved
        back before a PEM block whose END line has not arrived yet."""
        text = self._pending
        nl = text.rfind("\n")
        if nl < 0:
            return 0
        cut = nl + 1
        while cut > 0:                       # moving the cut may expose an earlier open block
            begin = text.rfind("-----BEGIN", 0, cut)
            if begin < 0 or _PEM_END.search(text, begin, cut) or len(text) - begin > MAX_SECRET:
                break
            cut = text.rfind("\n", 0, begin) + 1
        return cut
