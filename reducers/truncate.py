"""Middle truncation for tool output (rfc-005 Decision 3): keep the head
(setup, the command) and the tail (results, the error), cut the middle.

50/50 split of the budget, a 20% serialization buffer (JSON escaping grows
text once it is sent), cuts moved to line boundaries when one is near, and
two honest markers: `Total output lines: X` up front and `…N tokens
truncated…` where the cut is. The full output is never lost: the caller
passes `hint` (e.g. "trace show 812 --full") and it is printed in the stub."""
from __future__ import annotations

import re

from reducers.tokens import count_tokens, decode, encode

SERIALIZATION_BUFFER = 1.2
CUT_MARKER = "\n…{} tokens truncated…\n"        # where a stub's middle was cut (with_match finds it again)
_CUT = re.compile(re.escape(CUT_MARKER).replace(r"\{\}", r"(\d+)"))
_ALIGN_SLACK = 0.25          # move a cut to a newline if one is within 25% of the kept part


def truncate_middle(text: str, max_tokens: int, *, hint: str | None = None,
                    buffer: float = SERIALIZATION_BUFFER) -> str:
    """`text` unchanged when it fits in max_tokens (after the buffer), else a
    head…tail stub that fits."""
    total = count_tokens(text)
    if total * buffer <= max_tokens:
        return text
    return middle_stub(text, text, total_tokens=total, total_lines=count_lines(text),
                       max_tokens=max_tokens, hint=hint, buffer=buffer)


def count_lines(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def middle_stub(head_source: str, tail_source: str, *, total_tokens: int, total_lines: int,
                max_tokens: int, hint: str | None = None,
                buffer: float = SERIALIZATION_BUFFER) -> str:
    """Build the stub from the start of the output (`head_source`) and its
    end (`tail_source`). They may be the same string, or, for outputs too big
    to hold (streamed artifacts), just the first and last few hundred KB."""
    header = f"Total output lines: {total_lines}\n\n"
    footer = f"\n[full output: {hint}]" if hint else ""
    # Reserve room for the fixed parts and the marker, then split the rest.
    fixed = count_tokens(header) + count_tokens(footer) + 12
    budget = max(int(max_tokens / buffer) - fixed, 2)
    half = budget // 2
    head = _take_head(head_source, half)
    tail = _take_tail(tail_source, budget - half)
    cut = max(total_tokens - count_tokens(head) - count_tokens(tail), 0)
    marker = CUT_MARKER.format(cut)
    return f"{header}{head}{marker}{tail}{footer}"


def _take_head(source: str, tokens: int) -> str:
    window = source[: max(tokens * 8, 64)]     # a token is rarely more than 8 chars
    ids = encode(window)
    if len(ids) <= tokens and len(window) == len(source):
        return source
    head = decode(ids[:tokens])
    nl = head.rfind("\n")
    if nl >= len(head) * (1 - _ALIGN_SLACK):
        head = head[:nl]
    return head


def _take_tail(source: str, tokens: int) -> str:
    window = source[-max(tokens * 8, 64):]
    ids = encode(window)
    tail = decode(ids[-tokens:]) if tokens else ""
    nl = tail.find("\n")
    if 0 <= nl <= len(tail) * _ALIGN_SLACK:
        tail = tail[nl + 1:]
    return tail


def with_match(stub: str, excerpt: str) -> str:
    """A stub that shows the part of the cut middle that matched a query:
    `excerpt` (a snippet of the full output) goes where the cut is, between
    two markers, unless the stub already shows it. A stub without the
    marker (another tool's own truncation) gets it at the end."""
    body = excerpt.strip("…").strip()
    if not body or body in " ".join(stub.split()):
        return stub
    m = _CUT.search(stub)
    if m is None:
        return f"{stub}\n[the part that matched: {excerpt}]"
    return (f"{stub[:m.start()]}\n…{m.group(1)} tokens truncated; the part that matched:\n{excerpt}\n…\n"
            f"{stub[m.end():]}")
