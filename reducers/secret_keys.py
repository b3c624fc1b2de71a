"""What the name of a secret-named key says about its value (reducers/redact.py
finds `<name> = value` slots; this module reads the name). Pure functions
over the text around a match; each looks back at most CONTEXT characters
before the match (the stream redactor keeps that many)."""
from __future__ import annotations

import re

CONTEXT = 32                    # longest look-behind of any rule, with room to spare

_A = re.ASCII

_KEY_SEGMENTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", _A)
# The rest of a secret-named key that says the value is something else.
_NOT_SECRET_SEGMENTS = frozenset("""url uri path file filename dir directory endpoint name names env
    var type field header param hint prompt label len length count limit budget policy ttl format
    usage id ids arn prefix suffix source provider process helper method mode scheme version
    algorithm template pattern regex option size min max location expires expiry expiration
    lifetime last used changed updated at date time hash digest checksum fingerprint""".split())

# A token named by one of these words marks a place in a stream or a list, or
# ties requests together: its value may be a SHA, a UUID or a digest and is
# then a handle. Any other word before "token" (github_, NPM_, auth_, x-access-)
# names a credential, whatever its shape.
_HANDLE_WORDS = frozenset("""sync page next prev previous continuation cursor resume request etag
    change changes delta idempotency csrf xsrf trace tracing pagination marker batch upload start end
    last first cache lock lease watch poll progress offset position checkpoint commit revision rev
    version state nonce stream query search scroll iterator shard seq sequence job task run build
    correlation transaction event message msg notification delivery order""".split())
# A word written before "token" with a space that names what the token is
# for, in prose: "access token: <hex>", "API token: <hex>", "bot token".
_CREDENTIAL_PROSE_WORDS = frozenset("""access auth authentication api bearer bot refresh oauth personal deploy
    service app session""".split())
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")

_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*", _A)
_ENV_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_ENV_SEPARATORS = frozenset(("=", '="', "='", '=\\"'))


def names_something_else(rest: str) -> bool:
    """`password_reset_url`, `secretName`, `access_key_id`, `token_expires_in`..."""
    return any(seg.lower() in _NOT_SECRET_SEGMENTS for seg in _KEY_SEGMENTS.findall(rest))


def names_a_credential_token(text: str, start: int) -> bool:
    """Whether the key whose secret word ("token") starts at `start` has a
    word before it that is not a list or stream position: `github_token`,
    `NPM_TOKEN`, `x-auth-token` (credentials) but not `token`, `sync_token`,
    `request_token` (handles). `data.github_token`: the part after the dot.
    In prose, a word and a space before it that says what the token opens
    (`access token`, `API token`, `bot token`) names a credential too;
    `the token`, `sync token`, `next token` do not."""
    lo = max(start - CONTEXT, 0)
    i = start
    while i > lo and text[i - 1] in _NAME_CHARS:
        if text[i - 1] in "nrt" and i - 2 >= lo and text[i - 2] == "\\":
            break                              # "\\ntoken": the name starts after the escape
        i -= 1
    words = _KEY_SEGMENTS.findall(text, i, start)
    if not words and i == start and i - 1 > lo and text[i - 1] == " ":
        j = i - 1                              # "access token": one spaced prose word
        while j > lo and text[j - 1].isascii() and text[j - 1].isalpha():
            j -= 1
        return text[j:i - 1].lower() in _CREDENTIAL_PROSE_WORDS
    return bool(words) and words[-1].lower() not in _HANDLE_WORDS


def env_name(text: str, start: int, word_end: int, value_start: int) -> str | None:
    """The name of an env assignment `DB_PASSWORD=v`, `export GITHUB_TOKEN="v"`,
    `-e PASSWORD=v` whose secret word spans [start, word_end) and whose
    value starts at `value_start`: a whole UPPERCASE name, then `=` and no
    space (shell and .env syntax). None for `password=v`, `dbPASSWORD=v`,
    `cfg.PASSWORD=v` or `PASSWORD = v` (code)."""
    if text[word_end:value_start] not in _ENV_SEPARATORS:
        return None
    lo = max(start - CONTEXT, 0)
    while start > lo and text[start - 1] in _ENV_NAME_CHARS:
        start -= 1
    if _ENV_NAME.fullmatch(text, start, word_end) is None:
        return None
    if start > lo:
        before = text[start - 1]
        if before in ".]":                     # cfg.PASSWORD; or glued to a redaction (redacting twice changes nothing)
            return None
        # a lowercase letter glued on, unless it ends an escape: "...\nDB_PASSWORD=v"
        if before.isascii() and before.isalpha() and not (start - 2 >= lo and text[start - 2] == "\\"):
            return None
    return text[start:word_end]


def snake_key_name(text: str, start: int) -> bool:
    """Whether the `_key` / `_pat` at `start` ends a lowercase snake_case
    name of a word at least (storage_key, "jira_pat"), not glued to a
    capital or a path (cfg.Storage_key, /tmp/x_key)."""
    lo = max(start - CONTEXT, 0)
    i = start
    while i > lo and (text[i - 1].islower() or text[i - 1] in "0123456789_") and text[i - 1].isascii():
        i -= 1
    if not any("a" <= c <= "z" for c in text[i:start]):
        return False
    return i == lo or text[i - 1] not in "ABCDEFGHIJKLMNOPQRSTUVWXYZ/\\.-]$"


def env_key_name(text: str, start: int) -> bool:
    """Whether the `_KEY` at `start` ends an UPPERCASE env-style name
    (AZURE_STORAGE_KEY, "ENCRYPTION_KEY"): a letter in it, not glued to a
    lowercase word (myAPP_KEY) unless after an escape (\\nAPP_KEY)."""
    lo = max(start - CONTEXT, 0)
    i = start
    while i > lo and text[i - 1] in _ENV_NAME_CHARS:
        i -= 1
    if not any("A" <= c <= "Z" for c in text[i:start]):
        return False
    if i > lo:
        before = text[i - 1]
        if before == "]" or (before.isascii() and before.isalpha() and not (i - 2 >= lo and text[i - 2] == "\\")):
            return False
    return True
