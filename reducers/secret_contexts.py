"""Context rules: where a credential is known by what stands around it
(an Authorization header, `user:pw@` in a URL, `curl -u`, a `--password`
flag, a .netrc line, a secret-named key, an UPPERCASE env name ending in
_KEY) rather than by its own shape.
Pure data: reducers/redact.py compiles them and decides each value
(reducers/credentials.py); reducers/secret_keys.py reads key names.

Each rule is (name, trigger words, pattern) and its match starts at a
trigger word ("--|token": the word is `token`, the match starts at the
`--` before it; see reducers/secret_shapes.py for the notation). Every quantifier is bounded, by `m` (MAX_SECRET) for
values: the stream redactor's window depends on it. No value runs into a
"-----" (a PEM header glued on: the private key behind it must be seen)."""
from __future__ import annotations

from reducers.secret_shapes import B, B_WORD, after_none_of, base64_line_ahead

_AFTER_LETTER = after_none_of(r"A-Za-z\]")       # bearer9x is a word; 9 Bearer x is not
# No unquoted value runs into a control character or an undecodable byte (a
# payload's bytes read as text: reducers/redact_payload.py): no password holds
# one. A quoted value ends at its quote.
_CTRL = "\\x00-\\x1f\\x7f\udc80-\udcff"

# A line's number as Claude Code's Read tool shows it ("     2\u2192" or "     2\t"),
# raw or JSON-escaped: a key file read that way is still one key (also when the
# read stopped before its END line: numbered lines of up to 100 base64 characters).
_LINE_NUMBER = r"[ ]{0,8}[0-9]{1,7}(?:\u2192|\t|\\{1,8}t|\\{1,8}u2192)"

# A secret-named key given as the value of a name field, its value in the
# next field or on the next line: {"name": "DB_PASSWORD", "value": "…"},
# Kubernetes' `- name: API_TOKEN` then `value: …`, `key: X_SECRET` then `value: …`.
_NEWLINE = r"(?:\r?\n|(?:\\{1,7}r)?\\{1,7}n)"
_NAME_THEN_VALUE = rf"""[ \t]{{0,8}}(?:,[ \t]{{0,8}}{_NEWLINE}?|{_NEWLINE})[ \t]{{0,16}}(?:-[ \t]{{1,8}})?
    (?:\\{{0,7}}["'])?(?i:value)(?:\\{{0,7}}["'])?[ \t]{{0,8}}[:=](?![:=])"""

PASSWORD_FLAGS = ("password", "passwd", "pass", "passphrase")
TOKEN_FLAGS = ("token", "api-key", "apikey", "secret", "client-secret", "auth-token", "access-token")


def context_rules(m: int) -> list[tuple[str, tuple[str, ...], str]]:
    """The rules for values up to m characters long."""
    flags = "|".join(sorted(PASSWORD_FLAGS + TOKEN_FLAGS, key=len, reverse=True))
    return [
        ("pem", ("-----begin",), rf"""
     -----BEGIN[ ](?P<pem_label>(?:[A-Z0-9]{{1,16}}[ ]){{0,3}}PRIVATE[ ]KEY(?:[ ]BLOCK)?)-----
     (?:(?P<pem_body>(?:[^-]|-(?!----BEGIN[ ])){{0,{m}}}?)-----END[ ](?P=pem_label)-----
       |(?P<pem_open>(?:(?:\r?\n|(?:\\{{1,3}}r)?\\{{1,3}}n){_LINE_NUMBER}{base64_line_ahead('100')}[A-Za-z0-9+/=]{{1,100}}){{1,{max(m // 128, 1)}}}
                   |(?:[A-Za-z0-9+/=]|(?:[\r\n]|\\{{1,3}}[nr]){base64_line_ahead(str(m))})
                    {{1,{m}}}))"""),
        ("authz", ("authoriz",), rf"""
     {B_WORD}(?i:authorization)(?:\\{{0,7}}["'])?[ \t]{{0,8}}[:=][ \t]{{0,8}}(?:\\{{0,7}}["'])?
     (?:(?P<authz_scheme>(?i:bearer|token|basic|digest|apikey|key|bot|sso-key|ssws|[a-z0-9]{{1,8}}-hmac-[a-z0-9]{{1,8}}))
        [ \t]{{1,8}})?
     (?P<authz_val>(?:[A-Za-z0-9._~+/=\[\]]|-(?!----)){{1,{m}}})"""),
        ("bearer", ("bearer",),
         rf"{_AFTER_LETTER}(?i:bearer)[ \t]{{1,8}}(?P<bearer_val>(?:[A-Za-z0-9._~+/=\[\]]|-(?!----)){{1,{m}}})"),
        ("basic", ("basic> ", "basic>\t"), rf"""
     {_AFTER_LETTER}(?i:basic)[ \t]{{1,8}}(?P<basic_val>[A-Za-z0-9+/]{{4,{m}}}={{0,2}})(?![A-Za-z0-9+/=])"""),
        ("url", ("://",), rf"""
     ://(?P<url_user>[^\s:/?\#@'"<>\\\[\]{_CTRL}]{{0,{m}}}):(?P<url_pw>[^\s/?\#@'"<>\\{_CTRL}]{{1,{m}}})@(?=[A-Za-z0-9\[_-])"""),
        ("curl", ("-u> ", "-u>\t", "-u>=", "--user"), rf"""
     {B}(?:-u|--user)(?:[ \t]{{1,8}}|=)["']?
     (?P<curl_user>[^\s:'"`\[\]\\{_CTRL}-][^\s:'"`\[\]\\{_CTRL}]{{0,{m}}}):(?P<curl_pw>(?:[^\s'"`\\{_CTRL}-]|-(?!----)){{1,{m}}})"""),
        # a login's password as -p after its user (docker login -u u -p pw, sqlcmd -U sa -P pw)
        ("userpass", ("-u> ", "-u>\t", "--user"), rf"""
     {B}(?:-[uU]|--user(?:name)?)(?:[ \t]{{1,8}}|=)["']?[^\s'"`\\{_CTRL}-][^\s'"`\\{_CTRL}]{{0,100}}["']?
     [ \t]{{1,8}}-[pP](?:[ \t]{{1,8}})?
     (?:'(?P<userpass_sq>[^'\n]{{1,{m}}})'|\\{{0,7}}"(?P<userpass_dq>[^"\\\n]{{1,{m}}})\\{{0,7}}"
       |(?P<userpass_bare>[^\s'"`;&|<>\\{_CTRL}-][^\s'"`;&|<>\\{_CTRL}]{{0,{m}}}))"""),
        ("flag", ("-|-pass", "--|token", "--auth-|token", "--access-|token", "--|secret", "--client-|secret",
                  "--|api>-key", "--|api>key"), rf"""
     {B}--(?P<flag_name>(?i:{flags}))(?:[ \t]{{1,8}}|=)
     (?:"(?P<flag_dq>[^"\\\n]{{1,{m}}})"|'(?P<flag_sq>[^'\n]{{1,{m}}})'|(?P<flag_bare>(?:[^\s"'`;&|<>(){{}}\\{_CTRL}-]|-(?!----)){{1,{m}}}))"""),
        ("netrc", ("machine",), rf"""
     {B}machine[ \t]{{1,8}}[^\s\\]{{1,100}}(?:\s|\\n){{1,8}}login[ \t]{{1,8}}[^\s\\]{{1,100}}
     (?:\s|\\n){{1,8}}password[ \t]{{1,8}}(?P<netrc_pw>(?:[^\s"'\\<>{_CTRL}-]|-(?!----)){{1,{m}}})"""),
        ("dockerauth", ('"auth',),      # "auth": "<base64>", also inside JSON-in-JSON (\"auth\")
         rf'"auth\\{{0,7}}"[ \t]{{0,8}}:[ \t]{{0,8}}\\{{0,7}}"(?P<dockerauth_val>[A-Za-z0-9+/]{{8,{m}}}={{0,2}})\\{{0,7}}"'),
        ("passarg", ("-pass",), rf"""
     {B}-pass(?:in|out)?[ \t]{{1,8}}pass:(?P<passarg_val>[^\s'"`;&|{_CTRL}]{{1,{m}}})"""),
        ("mysqlp", ("mysql",), rf"""
     {B}(?:mysql|mysqldump|mysqladmin)[ \t][^\n|;&'"{_CTRL}]{{0,120}}?[ \t]-p
     (?:'(?P<mysqlp_sq>[^'\n]{{1,{m}}})'|(?P<mysqlp_bare>[^\s'"`;&|{_CTRL}-][^\s'"`;&|{_CTRL}]{{0,{m}}}))"""),
        ("sshpass", ("sshpass",), rf"""
     {B}sshpass[ \t]{{1,8}}-p[ \t]{{0,8}}
     (?:'(?P<sshpass_sq>[^'\n]{{1,{m}}})'|"(?P<sshpass_dq>[^"\n]{{1,{m}}})"|(?P<sshpass_bare>[^\s'"`;&|{_CTRL}]{{1,{m}}}))"""),
        ("cookie", ("cookie",), rf"""
     {B_WORD}(?i:cookie)[ \t]{{0,8}}:[ \t]{{0,8}}(?P<cookie_val>[^\r\n"'\\{_CTRL}]{{1,{m}}})"""),
        # an UPPERCASE env name ending in _PASS (SMTP_PASS, RABBITMQ_DEFAULT_PASS) holds a password
        ("envpass", ("_PASS",), rf"""
     _PASS(?:PHRASE)?(?:\\{{0,7}}["'])?(?:=|[ \t]{{0,8}}:[ \t]{{0,8}})
     (?:\\{{0,7}}"(?P<envpass_dq>[^"\\\n]{{1,{m}}})\\{{0,7}}"|'(?P<envpass_sq>[^'\n]{{1,{m}}})'
       |(?P<envpass_bare>[^\s"'`;&|<>\\{_CTRL}]{{1,{m}}}))"""),
        # an env name ending in _KEY or _PAT holds a key, and so does a snake_case config
        # key (azure_storage_key: <key>, "jira_pat": "<pat>"; not _path, _pattern, _patch)
        ("envkey", ("_key", "_|PAT", "_|pat>!h,t,c,i,r,e,o,s"), rf"""
     _(?:KEY|PAT|key|pat)(?:\\{{0,7}}["'])?(?:=|[ \t]{{0,8}}:[ \t]{{0,8}})(?:\\{{0,7}}["'])?
     (?P<envkey_val>(?:[A-Za-z0-9+/=_.~]|-(?!----)){{20,{m}}})"""),
        ("kv", ("token>!s,iz,is", "api>_key", "api>-key", "api>key", "api> key", "access>_key", "access>-key", "access>key",
                "access> key", "private", "secret", "credential", "passw", "pwd", "encryption"), rf"""
     (?i:(?<!page)(?<!page_)(?<!page-)(?<!next)(?<!next_)(?<!sync)(?<!sync_)(?<!cursor_)
            (?<!resume)(?<!resume_)(?<!continuation_)(?<![:/]))
     (?P<kv_word>(?i:secret(?:[ ]key)?|passw(?:or)?d|pwd|api[_ -]?key|access[_ -]?key|private[_ -]?key
                    |credentials?|token(?!s|i[sz])|encryption[_-]?key))
     (?P<kv_rest>[A-Za-z0-9_.-]{{0,64}})
     (?:\\{{0,7}}["'])?
     (?:[ \t]{{0,8}}(?::=|=>|[:=])(?![:=])
       |(?P<kv_pair>{_NAME_THEN_VALUE})
       |(?P<kv_space>(?:[ ]|\t{{1,2}}|\\{{1,7}}t)(?=[A-Za-z0-9+/_-]{{32}})))[ \t]{{0,8}}
     (?:"(?P<kv_dq>(?:[^"\\\n]|\\[^\n]){{1,{m}}})"
       |\\"(?P<kv_eq>(?:[^"\\\n]|\\\\\\["\\]|\\\\[^"\\\n]|\\[^"\\\n]){{1,{m}}})\\"
       |\\{{2,7}}"(?P<kv_deep>[^"\\\n]{{1,{m}}})\\{{2,7}}"
       |'(?P<kv_sq>[^'\n]{{1,{m}}})'
       |(?P<kv_bare>(?:[^\s"'`,;&<>(){{}}\\{_CTRL}-]|-(?!----)){{1,{m}}})(?:(?=\()(?P<kv_call>))?)"""),
    ]
