"""Secret redaction before anything is written (on by default; `--no-redact`
turns it off). Pure functions: text in, text out.

Each secret becomes "[REDACTED:<kind>]" and its context stays:

  shapes, wherever they appear: a service's own key format (sk-…, ghp_…,
    xoxb-…, AKIA…, npm_…, dapi…, SG.….…, hooks.slack.com/services/…, and
    60-odd more): reducers/secret_shapes.py, which lists them; plus
    -----BEGIN … PRIVATE KEY----- body        private_key  (BEGIN/END lines kept)
  contexts, only the credential is replaced
    Authorization: [scheme] <cred>   bearer (basic_auth for Basic)
    Bearer <cred>                    bearer
    Basic <base64 of user:pw>        basic_auth
    curl -u user:<pw>                basic_auth
    scheme://user:<pw>@host          url_password
    --password <pw>, --token=<t>     secret_value  (command-line flags)
    machine h login u password <pw>  netrc_password
    NAME_KEY=<value>, "NAME_KEY": "…"     secret_value  (UPPERCASE env names; 20+ chars;
        also _PAT, and snake_case storage_key: / "jira_pat": in config, where a SHA stays)
    <secret-named key> = : := => <value>   secret_value  (JSON "k": "v", YAML k: v,
        env/shell K=v and export K="v", TOML, HTTP headers X-Api-Key: v;
        the key and the quotes are kept; also a secret-named name field
        followed by its value field: {"name": "DB_PASSWORD", "value": "…"},
        `- name: API_TOKEN` then `value: …` on the next line; in prose also
        "API key: v", "access key = v", "secret key v", "private key: v")

Secret-named keys: the name contains secret, password/passwd, pwd, api_key/
apikey/api-key, access_key, private_key, credential(s) or token (ASCII case-
insensitive) -- but not tokens/tokenizer, not page/next/sync/cursor tokens, not
a segment of a colon or slash path (arn:aws:secretsmanager:…, AWS::X::ApiKey),
and not a name whose remainder says it holds something else (…_url, …_path,
…_file, …Name, …_type, …_count, …_env, …Id, …_expires_in, …_prefix …):
reducers/secret_keys.py.

Which values count as credentials, and which are never touched (git SHAs,
UUIDs, digests: what people recall later): reducers/credentials.py.

Speed: every rule starts at a trigger word (or a fixed distance before
one), so the text is lowered once (bytes, ASCII only, same length) and one
Aho-Corasick pass finds the exact positions where a rule can start and
which rules can; text with none returns at once (the same object), and
only those rules are tried at those positions (prefix-less shapes are
found from a literal inside them instead): reducers/secret_triggers.py. Same result as
trying every rule at every position (a test checks that).

Streaming: every quantifier is bounded, so whether a rule matches at position
i depends only on the text in [i - CONTEXT, i + window) (key names are read
back at most CONTEXT characters), so a text too big to hold can be redacted
as it streams: reducers/redact_stream.py."""
from __future__ import annotations

import re
from functools import lru_cache

from reducers.secret_contexts import PASSWORD_FLAGS, context_rules
from reducers.secret_keys import (CONTEXT, env_key_name, env_name, names_a_credential_token, names_something_else,
                                  snake_key_name)
from reducers.secret_shapes import SHAPES, Shape, expand
from reducers.secret_triggers import Triggers


class _Judge:
    """reducers.credentials, imported when a candidate first needs judging:
    its ~20 patterns cost ~10 ms to compile, a cost every cold command that
    redacts a line (a recall logging its query) paid though most text holds
    no candidate."""
    def __getattr__(self, name: str):
        import reducers.credentials
        return getattr(reducers.credentials, name)


_judge = _Judge()

MAX_SECRET = 64 * 1024          # the longest secret recognised (PEM blocks included)
MIN_SECRET = 64                 # the shape rules need room (ghp_ + 36)
_MAX_NESTING = 16               # values searched inside values (JSON in JSON...): stack bound
_LOOK_INSIDE = 128              # a declined match up to this long is searched inside again
_GLUED = 96                     # a rule starting this close to a secret's end may run on past it (a key glued on)

__all__ = ["CONTEXT", "KINDS", "MAX_SECRET", "redact"]

_A = re.ASCII                   # ASCII-only case folding: the trigger search lowers ASCII only

_LEADING_WS = re.compile(r"(?:\s|\\[nrt])*", _A)
_REDACTED = re.compile(r"\[REDACTED:\w+\]", _A)

# The order rules are tried in at one position: PEM blocks, then the shapes,
# then the contexts (a shape inside a context's value keeps its own kind).
_FIRST, _LAST = ("pem",), ("authz", "bearer", "basic", "url", "curl", "userpass", "flag", "netrc", "dockerauth",
                           "passarg", "mysqlp", "sshpass", "cookie", "kv", "envkey", "envpass")
_CONTEXT_KINDS = ("private_key", "bearer", "basic_auth", "url_password", "netrc_password", "secret_value")
KINDS = tuple(dict.fromkeys([*(s.kind for s in SHAPES), *_CONTEXT_KINDS]))


class _Rules:
    """The compiled rule set for one MAX_SECRET (tests use small ones to
    exercise stream cuts on small texts)."""

    def __init__(self, max_secret: int):
        if max_secret < MIN_SECRET:
            raise ValueError(f"max_secret must be at least {MIN_SECRET}")
        self.max_secret = max_secret
        context = {name: (words, pattern) for name, words, pattern in context_rules(max_secret)}
        self.shapes: dict[str, Shape] = {s.name: s for s in SHAPES}
        rules: list[tuple[str, tuple[str, ...], int, str]] = []     # name, triggers, back, pattern
        for name in (*_FIRST, *self.shapes, *_LAST):
            if name in context:
                words, pattern = context[name]
                rules.append((name, words, 0, pattern))
            else:
                s = self.shapes[name]
                pattern = expand(s.pattern, max_secret).replace("(?P<S>", f"(?P<{name}_s>")
                rules.append((name, s.triggers, s.back, pattern))
        self._alternatives = [f"(?P<{name}>{pattern})" for name, _, _, pattern in rules]
        # How far past its start a match attempt can look: the widest rule is a
        # value of JSON-in-JSON escapes (up to 4 chars each) after a key of ~100.
        self.window = 4 * max_secret + 256
        self._bits = bit = {name: 1 << i for i, (name, *_) in enumerate(rules)}
        self.triggers = Triggers([(name, words, back) for name, words, back, _ in rules], bit)
        self._matchers: dict[int, object] = {}

    @property
    def pattern(self) -> str:
        """Every rule at once (its widest match bounds the stream window);
        compiled per set of rules a position can start, never whole."""
        return "|".join(self._alternatives)

    # -- scanning --

    def candidates(self, text: str, start: int = 0) -> list[tuple[int, int]]:
        """Sorted (position >= start, rules that can begin there)."""
        return self.triggers.candidates(text, start)

    def _matcher(self, mask: int):
        """`match` of the rules in `mask`, in their global order."""
        match = self._matchers.get(mask)
        if match is None:
            chosen = [alt for i, alt in enumerate(self._alternatives) if mask >> i & 1]
            match = self._matchers[mask] = re.compile("|".join(chosen), _A | re.X).match
        return match

    def scan(self, text: str, start: int, stop: int, depth: int = 0) -> tuple[list[str], int, int]:
        """Redact secrets whose match begins in [start, stop): at each
        position, the first rule (in order) that matches and finds a secret.
        Returns (pieces, cut, count): pieces are text[start:cut] redacted.
        cut >= stop unless stop is past the end, or a secret that starts
        before stop has a rule start inside it at or past stop: then cut is
        that secret's start (the caller scans it again with more text)."""
        pieces, count, last = [], 0, start
        chain = (0, 0, start)           # pieces, count and position before the latest secret not glued on (0: none)
        for pos, mask in self.candidates(text, start):
            if pos < last:
                # inside a value (judged whole), or in a long match declined whole: passed over
                if depth or last - pos > _GLUED or not chain[0]:
                    continue
                if pos >= stop:         # undecided until more text is seen: give the whole secret back
                    del pieces[chain[0]:]
                    count, last = chain[1], chain[2]
                    return pieces, last, count
                # A rule that starts near the end of the secret just redacted
                # and whose own secret lies past it: a key name glued to a
                # token (sk-…AZURE_STORAGE_KEY=<key>, ghp_…secret=<pw>). Only
                # near the end, so that `token=token=…` stays linear.
                glued = self._glued(text, pos, mask, last, depth)
                if glued is not None:
                    out, n, last = glued
                    pieces.append(out)
                    count += n
                continue
            if pos >= stop:
                break
            # A short match a rule declines (`Authorization: "client_secret: …"`
            # holds no credential after Authorization) hides nothing: the other
            # rules here are tried, then the positions inside it. A long one is
            # passed over whole (its value was searched already), so that
            # `token=token=…` stays linear.
            while mask:
                m = self._matcher(mask)(text, pos)
                if m is None:
                    break
                out, n = self.replace(m, depth)
                if n or m.end() - pos > _LOOK_INSIDE:
                    pieces.append(text[last:pos])
                    chain = (len(pieces), count, pos) if n else (0, 0, start)
                    pieces.append(out)
                    count += n
                    last = m.end()
                    break
                mask &= ~self._bits[m.lastgroup]
        cut = max(last, min(stop, len(text)))
        pieces.append(text[last:cut])
        return pieces, cut, count

    def _glued(self, text: str, pos: int, mask: int, last: int, depth: int) -> tuple[str, int, int] | None:
        """The first rule at `pos` (inside a secret that ends at `last`)
        whose secret starts at or past `last`, or a shape that runs on past
        `last` (a context's value stops at a character the shape holds:
        `Authorization: AAAA…:APA91b…`), and is one: (text[last:end]
        redacted, count, end); None when there is none."""
        while mask:
            m = self._matcher(mask)(text, pos)
            if m is None:
                return None
            if m.end() > last and (_secret_start(m) >= last or m.lastgroup in self.shapes):
                out, n = self.replace(m, depth, since=last)
                if n:
                    return out, n, m.end()
            mask &= ~self._bits[m.lastgroup]
        return None

    def redact(self, text: str, depth: int = 0) -> tuple[str, int]:
        """`depth`: how many values this text is nested in (a value is searched
        for nested secrets; past _MAX_NESTING it is judged whole, so that
        `token=token=token=…` cannot exhaust the stack)."""
        if not text or depth > _MAX_NESTING:
            return text, 0
        pieces, _, count = self.scan(text, 0, len(text), depth)
        return ("".join(pieces) if count else text), count

    # -- replacing one match --

    def replace(self, m: re.Match, depth: int = 0, since: int | None = None) -> tuple[str, int]:
        """text[m.start():m.end()] redacted, or text[since:m.end()] when the
        match began inside a secret already replaced (`since` <= the start of
        this match's secret)."""
        rule = m.lastgroup
        shape = self.shapes.get(rule)
        if shape is not None:
            return _shape(m, shape, since)
        if rule == "pem":
            return self._pem(m, depth, since)
        if rule == "kv":
            return self._key_value(m, depth, since)
        if rule == "authz":
            scheme = (m.group("authz_scheme") or "").lower()
            kind = "basic_auth" if scheme == "basic" else "bearer"
            return self._value(m, "authz_val", kind, _judge.labelled_credential, depth, since=since)
        if rule == "bearer":
            return self._value(m, "bearer_val", "bearer", _judge.labelled_credential, depth, since=since)
        if rule == "basic":
            return self._value(m, "basic_val", "basic_auth", _judge.basic_payload, depth, since=since)
        if rule == "url":
            return self._value(m, "url_pw", "url_password", _judge.password_like, depth, since=since)
        if rule == "curl":
            # not `docker -u 1000:1000` (uid:gid), `sort -u -t: -k1` nor `-u sha256:<hex>`
            digest = _judge.recall_handle(f"{m.group('curl_user')}:{m.group('curl_pw')}")
            return self._value(m, "curl_pw", "basic_auth",
                               lambda v: _judge.password_like(v) and not v.isdigit() and v[0] != "-",
                               depth, decline=digest, since=since)
        if rule == "flag":
            return self._flag(m, depth, since)
        if rule == "netrc":
            return self._value(m, "netrc_pw", "netrc_password", _judge.password_like, depth, since=since)
        if rule == "dockerauth":             # a registry login: base64 of user:password
            return self._value(m, "dockerauth_val", "basic_auth", _judge.basic_payload, depth, since=since)
        if rule in ("passarg", "mysqlp", "sshpass"):     # openssl -pass pass:<pw>, mysql -p<pw>, sshpass -p <pw>
            group = next(g for g in _SECRET_GROUPS[rule] if m.group(g) is not None)
            return self._value(m, group, "secret_value", _judge.password_like, depth, since=since)
        if rule == "cookie":
            return self._cookie(m, depth, since)
        if rule in ("userpass", "envpass"):
            # a password literal of two classes at least: not a port (-p 5432), a
            # database name (mysql -u root -p app), a variable, nor a setting (SKIP_PASS=true)
            group = next(g for g in _SECRET_GROUPS[rule] if m.group(g) is not None)
            return self._value(m, group, "secret_value",
                               lambda v: _judge.credential_like(v, password=True, keep_ids=False, one_case=False),
                               depth, decline=rule == "envpass" and since is None
                               and not env_key_name(m.string, m.start()), since=since)
        if rule == "envkey":
            # AZURE_STORAGE_KEY=<key>, "ENCRYPTION_KEY": "<key>"; not SORT_KEY=created_at.
            # A name glued to a secret (sk-…_STORAGE_KEY=) is no code identifier.
            # A snake_case name (storage_key: <key>, "jira_pat": "<pat>") in config, not
            # code (sort_key=value); it may hold a digest (cache_key): SHAs stay.
            env = since is not None or env_key_name(m.string, m.start())
            snake = not env and snake_key_name(m.string, m.start()) and any(
                c in m.string[m.start() + 4:m.start("envkey_val")] for c in ":\"'")
            return self._value(m, "envkey_val", "secret_value",
                               lambda v: (_judge.credential_like(v, quoted=False, keep_ids=not env)
                                          and (env or not _judge.dotted_name(v))), depth,
                               decline=not env and not snake, since=since)
        raise AssertionError(rule)

    def _value(self, m: re.Match, group: str, kind: str, is_secret, depth: int, decline: bool = False,
               since: int | None = None):
        """Replace the value `group` of a context match, keeping the rest of
        the match. A value that holds a known shape (or a nested context) is
        redacted as that; otherwise `is_secret` decides."""
        text = m.string
        start = m.start() if since is None else since
        a, b = m.span(group)
        value = text[a:b]
        inner, n = self.redact(value, depth + 1)
        if n:
            if not decline:
                inner, n = self._beside_shapes(inner, n, kind, is_secret)
        elif decline or not is_secret(value):
            return text[start:m.end()], 0
        else:
            inner, n = f"[REDACTED:{kind}]", 1
        # the rest of the match is passed over once this returns: a shape in
        # it (-u <key>:<pw>) goes too, or redacting twice would find more
        head, h = self.redact(text[start:a], depth + 1)
        tail, t = self.redact(text[b:m.end()], depth + 1)
        return head + inner + tail, n + h + t

    @staticmethod
    def _beside_shapes(inner: str, n: int, kind: str, is_secret) -> tuple[str, int]:
        """A value with shapes found in it: what is left beside them may be
        a secret of its own -- all of it (a key split by a token) or one
        piece between them (KEY=<base64>sk_live_…: secrets glued together)."""
        rest = _REDACTED.sub("", inner)
        if not rest:
            return inner, n
        if is_secret(rest):
            return f"[REDACTED:{kind}]", n + 1
        pieces = _REDACTED.split(inner)
        marks = _REDACTED.findall(inner)
        out = []
        for i, piece in enumerate(pieces):
            if piece and is_secret(piece):
                piece, n = f"[REDACTED:{kind}]", n + 1
            out.append(piece)
            if i < len(marks):
                out.append(marks[i])
        return "".join(out), n

    def _key_value(self, m: re.Match, depth: int, since: int | None = None):
        group = next(g for g in ("kv_dq", "kv_eq", "kv_deep", "kv_sq", "kv_bare") if m.group(g) is not None)
        word = m.group("kv_word").lower()
        # a key that names something else, or `token = make_token(...)`: a call
        excluded = names_something_else(m.group("kv_rest")) or m.group("kv_call") is not None
        quoted, token = group != "kv_bare", word.startswith("token")
        password = word.startswith("passw") or word == "pwd"
        # a name that ends in the word (db_password, GITHUB_TOKEN) holds the thing
        # itself; password_store, PASSWORD_HASHER hold something about it
        ends_in_word = not m.group("kv_rest")
        # sync_token, request_token hold handles (a SHA there stays); github_token does not
        keep_ids = token and not (ends_in_word and names_a_credential_token(m.string, m.start()))
        if (password or token) and ends_in_word:
            name = env_name(m.string, m.start(), m.end("kv_rest"), m.start(group))
            # DB_PASSWORD=v: shell and .env values are literals, never a variable
            # (but PWD and OLDPWD hold the working directory);
            # GITHUB_TOKEN=<40 hex>: a credential, not a sync handle
            if name is not None and name not in ("PWD", "OLDPWD"):
                quoted, keep_ids = quoted or password, False
        if m.group("kv_space") is not None:      # `token <value>` in prose: a long random value only
            labelled = not (token or m.group("kv_rest"))     # "API key <hex>", not "token <sha>"
            return self._value(m, group, "secret_value", lambda v: _judge.random_credential(v, labelled), depth,
                               decline=excluded or group != "kv_bare", since=since)
        return self._value(m, group, "secret_value",
                           lambda v: _judge.credential_like(v, quoted, password=password, keep_ids=keep_ids,
                                                     one_case=ends_in_word),
                           depth, decline=excluded, since=since)

    def _flag(self, m: re.Match, depth: int, since: int | None = None):
        """`--password <pw>`, `--token=<t>`: a password flag holds a literal
        (like a quoted password), a token flag a credential unless it reads
        as code; neither a variable ($X), a template nor the next flag."""
        group = next(g for g in ("flag_dq", "flag_sq", "flag_bare") if m.group(g) is not None)
        password = m.group("flag_name").lower() in PASSWORD_FLAGS
        quoted = group != "flag_bare"

        def is_secret(v: str) -> bool:
            if v[0] == "-":
                return False
            if password:
                return _judge.credential_like(v, quoted=True, password=True, keep_ids=False)
            return _judge.credential_like(v, quoted, keep_ids=False)
        return self._value(m, group, "secret_value", is_secret, depth, since=since)

    def _cookie(self, m: re.Match, depth: int, since: int | None = None):
        """A Cookie / Set-Cookie header: each value that reads as a
        credential goes (a session id is one), the names and the
        attributes (Path=/, Expires=…) stay."""
        text = m.string
        start = m.start() if since is None else since
        a, b = m.span("cookie_val")
        pieces, n = [], 0
        for pair in re.split(r"(;[ \t]*)", text[a:b]):
            name, eq, value = pair.partition("=")
            if eq and value and name.strip().lower() not in _COOKIE_ATTRIBUTES:
                inner, k = self.redact(value, depth + 1)
                if not k and _judge.credential_like(value, quoted=True, keep_ids=False):
                    inner, k = "[REDACTED:secret_value]", 1
                pair, n = f"{name}={inner}", n + k
            pieces.append(pair)
        if not n:
            return text[start:m.end()], 0
        head, h = self.redact(text[start:a], depth + 1)
        return head + "".join(pieces) + text[b:m.end()], n + h

    def _pem(self, m: re.Match, depth: int, since: int | None = None):
        group = "pem_body" if m.group("pem_body") is not None else "pem_open"
        text, start = m.string, (m.start() if since is None else since)
        a, b = m.span(group)
        body = text[a:b]
        if not _judge.pem_body(body):
            # Not a key (code that prints PEM markers, say): look inside anyway.
            inner, n = self.redact(body, depth + 1)
            return text[start:a] + inner + text[b:m.end()], n
        lead = _LEADING_WS.match(body).group()
        trail = body[_blank_tail(body):]
        return f"{text[start:a]}{lead}[REDACTED:private_key]{trail}{text[b:m.end()]}", 1


def _shape(m: re.Match, shape: Shape, since: int | None = None) -> tuple[str, int]:
    """Replace a shape's secret (its S group, else the whole match); a
    placeholder (the rest after the prefix only filler) or a match its
    check declines stays."""
    text, start = m.string, (m.start() if since is None else since)
    group = f"{shape.name}_s"
    part = m.span(group) if group in m.re.groupindex else (-1, -1)
    a, b = part if part[0] >= 0 else m.span()
    body = text[a:b] if part[0] >= 0 else text[a + shape.skip:b]     # the secret after its fixed prefix
    if _judge.filler(body) or (shape.check is not None and not shape.check(body)):
        return text[start:m.end()], 0
    return f"{text[start:a]}[REDACTED:{shape.kind}]{text[b:m.end()]}", 1


# The group holding each context rule's secret (shapes: their S group, else the whole match).
_SECRET_GROUPS = {"pem": ("pem_body", "pem_open"), "authz": ("authz_val",), "bearer": ("bearer_val",),
                  "basic": ("basic_val",), "url": ("url_pw",), "curl": ("curl_pw",),
                  "flag": ("flag_dq", "flag_sq", "flag_bare"), "netrc": ("netrc_pw",), "envkey": ("envkey_val",),
                  "dockerauth": ("dockerauth_val",), "passarg": ("passarg_val",),
                  "mysqlp": ("mysqlp_sq", "mysqlp_bare"), "sshpass": ("sshpass_sq", "sshpass_dq", "sshpass_bare"),
                  "cookie": ("cookie_val",), "userpass": ("userpass_sq", "userpass_dq", "userpass_bare"),
                  "envpass": ("envpass_dq", "envpass_sq", "envpass_bare"), "kv": ("kv_dq", "kv_eq", "kv_deep", "kv_sq", "kv_bare")}
_COOKIE_ATTRIBUTES = frozenset({"path", "domain", "expires", "max-age", "samesite", "priority", "partitioned",
                                "secure", "httponly"})


def _secret_start(m: re.Match) -> int:
    """Where the secret part of a match starts."""
    groups = _SECRET_GROUPS.get(m.lastgroup, (f"{m.lastgroup}_s",))
    for group in groups:
        if group in m.re.groupindex and m.start(group) >= 0:
            return m.start(group)
    return m.start()


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


@lru_cache(maxsize=8)
def rule_set(max_secret: int) -> _Rules:
    """The compiled rules for one MAX_SECRET (built once)."""
    return _Rules(max_secret)


def redact(text: str, *, max_secret: int = MAX_SECRET, memo: bool = True) -> tuple[str, int]:
    """(text with every secret replaced by "[REDACTED:<kind>]", how many).
    `max_secret`: the longest secret recognised; leave it (tests shrink it).
    `memo`: answer a mid-size text seen lately from memory (off: benchmarks)."""
    if memo and max_secret == MAX_SECRET and _MEMO_MIN <= len(text) <= _MEMO_MAX:
        return _redact_memo(text)
    return rule_set(max_secret).redact(text)


def may_hold_secret_at(text: str) -> list[int]:
    """Where in `text` a rule can start (a trigger scan, no rule tried):
    nowhere means redact() would return it unchanged."""
    return [pos for pos, _ in rule_set(MAX_SECRET).candidates(text)]


def forget() -> None:
    """Drop the remembered answers (a benchmark's repeated runs start cold)."""
    _redact_memo.cache_clear()


# Agent transcripts repeat mid-size texts (files read again, the same tool output
# in an event and its artifact): remember recent answers. At most 1024 x 32K chars.
_MEMO_MIN, _MEMO_MAX = 256, 32 * 1024


@lru_cache(maxsize=1024)
def _redact_memo(text: str) -> tuple[str, int]:
    return rule_set(MAX_SECRET).redact(text)
