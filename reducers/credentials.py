"""What a credential is: the tests redaction applies to a value it found
in a credential slot (reducers/redact.py finds the slots). Pure functions.

When a value counts as a credential (`credential_like`), all of:
  - 8+ characters, no whitespace (a sentence under "token" is prose);
  - not a number, bool, null/none/undefined, a date, nor a common config word
    (required, optional, string, hidden, default, ...);
  - not already "[REDACTED:…]";
  - not a placeholder or template: <…>, ${…}, {…}, $NAME, %NAME, #…, anything
    with *, ..., "your…", example, placeholder, changeme, dummy, xxxx, ----,
    or just the word pass/password/secret/token/key;
  - not a URL, an ARN, a file path, an e-mail address or a path expression
    (Jobs[-1].JobId, DistributionList.NextMarker);
  - unquoted only: not code (data.token, getToken, SECRET_NAME, token[1:],
    dict[str, base64.b64decode, a call `make_token(…)`, an assignment a=b);
  - at least two character classes among lower, upper, digit, symbol, and a
    digit or a symbol -- or letters that do not read as words (_ - . / : [ ]
    are neutral): "hunter2x", "MyS3cret", base64 and hex-with-letters keys
    pass; "same-origin", "SECRET_KEY", "NextToken" do not;
  - or, one class only: a run of 24+ letters of one case with no token/
    secret/passw/cred/key inside (abcdefghijklmnopqrstuvwxyzabcdef: longer
    than words are written), quoted or not.
  A quoted value under a password-named key (password, passwd, pwd) is a
  password literal: up to four words ("correct horse battery"), a single
  word of two classes, or -- when the key ends in the password word
  (password, db_password, adminPassword; not password_store: "keychain") --
  a single word of one case ("correcthorse"; not "not_supported", a name,
  nor config words such as required/confirmed/nullable/writeonly). An env
  assignment -- a whole UPPERCASE name ending in PASSWORD/PASSWD/PWD, `=`,
  no space: PASSWORD=v, export DB_PASSWORD="v", -e PGPASSWORD=v, also after
  a \n escape -- holds a literal (the shell has no bare variables), so its
  bare value is read as quoted: PASSWORD=correcthorse goes; PASSWORD=$X,
  PASSWORD=${X}, PASSWORD=getpass(), PWD=…/OLDPWD=… stay. Lowercase or
  spaced names stay code: password=correcthorse, PASSWORD = correcthorse,
  cfg.PASSWORD=x.
  Known misses, to keep precision: one-case passwords outside those two
  slots (password=correcthorse, --password=x, YAML password: correcthorse,
  password_confirmation: "correcthorse"),
  one-case runs under 24 letters under a non-password key (token: "abcdefghijk"),
  letters-only keys that read as words (api_key: "SuperSecretValue"), and a
  password containing "passw" ("password123"). Accepted false positives: a
  one-word translation under a "password" key ("contrasena"), a dev default
  (POSTGRES_PASSWORD=postgres: it is the password).

Git SHAs (40 hex), short SHAs (7-12 hex), sha256 digests (64 hex, also
sha256:<hex>), UUIDs and ULIDs are what people recall later: in free text and
as the value of a token-named key (sync_token, request_token, etag_token) they
are never touched. Only an explicit credential label overrides that:
password/secret/api key/credential/private or access key values,
Authorization/Bearer credentials (and in prose "API key: <hex>", "secret key
<hex>", "access token: <hex>"), URL passwords and curl -u passwords are
replaced whatever their shape, and so is the value of an env assignment
whose UPPERCASE name ends in TOKEN (GITHUB_TOKEN=<40 hex>, export
GH_TOKEN="<uuid>"): a CI or shell variable, not a sync handle (SYNC_TOKEN,
NEXT_PAGE_TOKEN, … are never matched at all). Known miss: a legacy 40-hex
token under a lowercase, spaced or `:` name (github_token=<hex>,
GITHUB_TOKEN: <hex>) is kept."""
from __future__ import annotations

import base64
import binascii
import re

_A = re.ASCII                   # ASCII-only case folding, as the rules

_EXEMPT = re.compile(r"""(?:sha256:)?[0-9a-fA-F]{64}|[0-9a-fA-F]{40}|[0-9a-fA-F]{7,12}
    |[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}
    |[0-7][0-9A-HJKMNP-TV-Z]{25}""", _A | re.X)
_LITERAL = re.compile(r"""[-+]?[0-9][0-9_,.]*|true|false|null|none|nil|undefined|yes|no
    |required|optional|string|hidden|masked|default|unknown|disabled|enabled|boolean|integer
    |number|object|sensitive|invalid|missing|password|secret|token|value
    |confirmed|nullable|sometimes|writeonly|readonly|encrypted|plaintext|protected|filtered
    |generated|anonymous|internal|external|override|variable|parameter|automatic|prompted""",
                      _A | re.I | re.X)
_HEX_KEY = re.compile(r"[0-9a-fA-F]{32,}", _A)
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", _A)
_PLACEHOLDER = re.compile(r"""[<>]|\$\{|\{[^{}]*\}|\$\(|%\(|\A[$%#][A-Za-z_]|\*|\.\.\.|\u2026|\Aarn:
    |your|example|placeholder|changeme|change[_-]me|replace[_-]?me|dummy|redacted""",
                          _A | re.I | re.X)
_NAMED_PLACEHOLDER = re.compile(r"pass|password|passwd|pwd|pw|secret|token|key|api_?key", _A | re.I)
_FILLER = re.compile(r"[xX*#._\-\u2022]+")
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+", _A)
_PATH = re.compile(r"(?:/|~/|\./|\.\./|[A-Za-z]:[\\/])", _A)
_BASE64_KEY = re.compile(r"[A-Za-z0-9+/]{20,}={0,2}", _A)
_PATH_EXPR = re.compile(r"[A-Za-z_]+(?:\[-?[0-9]*\])?(?:\.[A-Za-z_]+(?:\[-?[0-9]*\])?)+", _A)  # Jobs[-1].Id
_CODE = re.compile(r"""[A-Za-z_$][A-Za-z_$.\[\]]*     # names, attributes, subscripts: no digits
    |[A-Za-z_$][\w$.]*\[.*                           # a subscript, a slice or a generic
    |[A-Za-z_$][\w$]*(?:\.[a-z_]+)+                   # module.function (base64.b64decode)
    |[^=\n]*=.*[^=]""", _A | re.X)                   # an assignment (base64 pads only at the end;
                                                     # up to the first = only: linear, not .*=.*)
_WHITESPACE = re.compile(r"\s")
_ONE_CASE_WORD = re.compile(r"[a-z]+|[A-Z]+", _A)               # correcthorse, HUNTERTWO
_LETTER_RUN = re.compile(r"[a-z]{24,}|[A-Z]{24,}", _A)          # longer than words are written
_DIGEST_LABEL = re.compile(r"(?:sha|md)[0-9]{1,3}[-:]", _A | re.I)   # sha512-<base64>: an integrity digest
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+", _A)
_NAME_WORDS = re.compile(r"token|secret|passw|cred|key", _A | re.I)  # ...but these make it a name
_WORDS = re.compile(r"(?:[A-Z]?[a-z]+|[A-Z]{2,}(?![a-z])|[._/:\[\]-])+", _A)


def _classes(value: str) -> tuple[int, bool]:
    """(how many of lower, upper, digit, symbol occur; whether a digit or a
    symbol does). _ - . / : [ ] are neutral: they join names and paths."""
    lower = upper = digit = symbol = 0
    for ch in value:
        if "a" <= ch <= "z":
            lower = 1
        elif "A" <= ch <= "Z":
            upper = 1
        elif "0" <= ch <= "9":
            digit = 1
        elif ch not in "_-./:[]":
            symbol = 1
    return lower + upper + digit + symbol, bool(digit or symbol)


def _file_path(value: str) -> bool:
    """/etc/ssl/key.pem, ~/.aws, C:\\keys: a path, not a secret. Base64 can
    open with a slash too (1 key in 64): the base64 alphabet only, 20+
    characters besides the slashes, padded with "=", with a "+" in 30+, a
    third of its letters capitals, or changing between lower, upper and
    digit at one character in three or more (random, not CamelCase words:
    /run/secrets/ProdSigningKey2024), is a key."""
    if _PATH.match(value) is None:
        return False
    if _BASE64_KEY.fullmatch(value) is None:
        return True
    run = value.replace("/", "")
    if len(run) < 20:
        return True
    return not (value.endswith("=") or ("+" in run and len(run) >= 30) or _switches(run) >= 0.3 * (len(run) - 1)
                or sum("A" <= c <= "Z" for c in run) >= 0.35 * sum(c.isalpha() for c in run))


def _switches(part: str) -> int:
    """How often the character class (lower, upper, digit, other) changes
    along `part`, a capital opening a word (Key) not counted: about every
    other character in random base64, one in four or five in CamelCase."""
    def cls(c: str) -> int:
        return 0 if "a" <= c <= "z" else 1 if "A" <= c <= "Z" else 2 if "0" <= c <= "9" else 3
    return sum(cls(a) != cls(b) and not (cls(a) == 1 and cls(b) == 0) for a, b in zip(part, part[1:]))


def _random_letters(value: str) -> bool:
    """24+ letters of one case and no secret word inside: a key, not a word
    or a name (abcdefghijklmnopqrstuvwxyzabcdef; not internationalization,
    20, nor accesstokenrequiredforthisapi, which names a token)."""
    return _LETTER_RUN.fullmatch(value) is not None and _NAME_WORDS.search(value) is None


def _kept(value: str, keep_ids: bool = True) -> bool:
    """Never a secret in this slot: already redacted, a placeholder, a glob
    or a template, an ARN, or (when `keep_ids`) a recall handle: git SHA,
    UUID, ULID, digest."""
    return ("[REDACTED:" in value or _PLACEHOLDER.search(value) is not None
            or _FILLER.fullmatch(value) is not None or _NAMED_PLACEHOLDER.fullmatch(value) is not None
            or (keep_ids and _EXEMPT.fullmatch(value) is not None))


def credential_like(value: str, quoted: bool = True, *, password: bool = False,
                    keep_ids: bool = True, one_case: bool = True) -> bool:
    """The rule for values of secret-named keys and Authorization/Bearer
    credentials (module docstring). `quoted`: the value was a string literal
    (an unquoted one may be code: `token = data.token`). `password`: the key
    names a password, so a quoted value is a password literal. `keep_ids`:
    SHAs, UUIDs and digests stay (false under an explicit credential label).
    `one_case`: a password literal may be one word of one case (the key ends
    in the password word: db_password, not password_store: "keychain")."""
    if len(value) < 8 or _kept(value, keep_ids):
        return False
    if _LITERAL.fullmatch(value) or _DATE.match(value) or _PATH_EXPR.fullmatch(value):
        return False
    if "://" in value or _file_path(value) or _EMAIL.fullmatch(value):
        return False
    if not quoted and _CODE.fullmatch(value) and not _random_letters(value):
        return False
    classes, digit_or_symbol = _classes(value)
    if quoted and password:                 # a password literal, not a name or a sentence
        if "passw" in value.lower():        # FORCE_CHANGE_PASSWORD, "The password for..."
            return False
        if _WHITESPACE.search(value):       # a passphrase: "correct horse battery"
            return len(value.split()) <= 4
        # two classes, or one word of one case (correcthorse); not_supported is a name
        return classes >= 2 or (one_case and _ONE_CASE_WORD.fullmatch(value) is not None)
    if _WHITESPACE.search(value):
        return False
    if classes < 2:                         # abcdefghijklmnopqrstuvwxyzabcdef
        return _random_letters(value)
    # Letters only: a credential unless it reads as words (NextToken, nextPageToken).
    return digit_or_symbol or _WORDS.fullmatch(value) is None


def random_credential(value: str, labelled: bool = False) -> bool:
    """A value after a secret word and a space, in prose ("token <value> is
    invalid"): only a long random-looking one counts -- 32+ characters
    holding upper and lower case letters and digits, not a handle, path,
    URL or qualified name. After an explicit credential label ("API key
    <value>", "secret <value>"; `labelled`) a hex key counts too, whatever
    its length (32, 40 or 64 hex digits, letters and digits both): the
    label says what it is, as it does for `api_key=<hex>`."""
    if (len(value) < 32 or _kept(value, keep_ids=not labelled) or "://" in value or _file_path(value)
            or dotted_name(value) or _DIGEST_LABEL.match(value)):
        return False
    if labelled and _HEX_KEY.fullmatch(value) and any(c.isalpha() for c in value) and any(c.isdigit() for c in value):
        return True
    return (any("A" <= c <= "Z" for c in value) and any("a" <= c <= "z" for c in value)
            and any("0" <= c <= "9" for c in value))


def dotted_name(value: str) -> bool:
    """`ed25519.Ed25519PublicKey`, `settings.SIGNING_KEY`: a qualified name
    (a type annotation or an attribute in code), not a key."""
    return _DOTTED.fullmatch(value) is not None


def password_like(value: str) -> bool:
    """Looser, for slots that can only hold a password (user:<pw>@host, -u user:<pw>)."""
    return not _kept(value, keep_ids=False)


def labelled_credential(value: str) -> bool:
    """After Authorization: or Bearer the label says what it is; the shape
    rules still keep code (`Bearer ${TOKEN}`, `Bearer myToken`) and prose out."""
    return credential_like(value, quoted=False, keep_ids=False)


def basic_payload(value: str) -> bool:
    """`Basic xyz` outside a header counts only when xyz decodes to user:password."""
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return ":" in text and text.isprintable()


# A key file read through Claude Code's Read tool has each line behind its number
# and an arrow ("     2\u2192MIIE..."): the arrow, raw or \u-escaped, is part of the body.
_PEM_BODY = re.compile(r"(?:[A-Za-z0-9+/=]|\s|\\{1,8}[nrt]|\u2192|\\{1,8}u2192"
                       r"|(?:Proc-Type|DEK-Info|Comment):[^\n\\]{0,200})*", _A)
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{16}", _A)


def pem_body(body: str) -> bool:
    return _PEM_BODY.fullmatch(body) is not None and _BASE64_RUN.search(body) is not None


def recall_handle(value: str) -> bool:
    """A git SHA, UUID, ULID or digest: kept wherever it appears."""
    return _EXEMPT.fullmatch(value) is not None


def filler(value: str) -> bool:
    """Nothing but placeholder filler: XXXX, ****, ----."""
    return _FILLER.fullmatch(value) is not None
