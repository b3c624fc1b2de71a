"""A credential said in a sentence ("my password is hunter2", "the db
password: Tr0ub4dor&3"): the redactor keeps short or word-like values
said this way (they read as prose), so the log holds them; a page meant to
be pasted elsewhere (the digest) shows the sentence with the value masked.
A state said of a secret ("the token is expired", "the API key is in the
vault") is no value and stays."""
from __future__ import annotations

import re

MASK = "[redacted]"
_SAID = re.compile(
    r"\b(?:password|passphrase|passcode|passwd|pwd|secret|api[\s_-]?key|access[\s_-]?key|private[\s_-]?key|"
    r"credentials?|token|pin(?:\s+code)?)(?:\s+(?:for|to|of|on)\s+(?:the\s+|my\s+|our\s+)?[\w.-]+)?"
    r"(?:\s+(?:is|was|=)\s+(?:now\s+|still\s+)?|\s*[:=]\s*)"
    r"(?P<val>\"[^\"]{1,200}\"|'[^']{1,200}'|`[^`]{1,200}`|[^\s,;]+)", re.I)
# What follows "the token is" without being the token.
_STATES = frozenset("""expired expiring invalid valid wrong correct right missing required optional set unset empty
blank stored saved kept hidden rotated revoked leaked compromised broken fine ok okay working weak strong long short
too very not no none null the a an in on at from under inside somewhere there here same different new old
out being encrypted hashed masked redacted correctly""".split())


def mask_said_secrets(text: str) -> str:
    """`text` with the value of each credential said in prose masked."""
    def mask(m: re.Match) -> str:
        val = m.group("val")
        bare = val.strip("\"'`.!?)").lower()
        if not bare or bare in _STATES or val.startswith("[REDACTED") or val.startswith(MASK):
            return m.group(0)
        cut = m.start("val") - m.start()
        tail = val[len(val.rstrip(".!?)")):]             # the sentence's own end stays
        return m.group(0)[:cut] + MASK + tail
    return _SAID.sub(mask, text)
