"""The `<recalled-context>` block: recall hits packed for injection.

Knowledge (notes, task state, persona: compact facts) gets 30% of the cap,
detail (raw events, code and formatting kept) 70% plus whatever knowledge
leaves unused. Within each, the best-scoring entries are kept first, and
one too big for the room left is passed over (a smaller one after it may
still fit); the block never exceeds the cap (counted with the one
tokenizer), and when not even one entry fits nothing is injected.

A block that comes back in ingested text (a runtime logged the message it
injected into) is stripped before indexing and before rendering
(`strip_recalled`): the log keeps its bytes, but what was recalled once is
never recalled, or shown, again as if it were new."""
from __future__ import annotations

import re

from reducers.tokens import count_tokens

KNOWLEDGE_KINDS = frozenset({"note", "task_state", "persona"})
KNOWLEDGE_SHARE = 0.3
_OPEN = '<recalled-context source="trace">'
_CLOSE = "</recalled-context>"
# Any source attribute (OpenClaw writes source="memory-context"); an
# unclosed block runs to the end of the text.
_BLOCK = re.compile(r"<recalled-context(?:\s[^>]*)?>.*?(?:</recalled-context>|\Z)", re.DOTALL)


def strip_recalled(text: str) -> str:
    """`text` without its `<recalled-context>` blocks (unchanged, and the
    same object, when it has none: the common case costs one search)."""
    if "<recalled-context" not in text:
        return text
    return _BLOCK.sub("", text).strip()


def build_block(hits: list[dict], cap_tokens: int) -> str:
    return packed_block(hits, cap_tokens)[0]


def packed_block(hits: list[dict], cap_tokens: int) -> tuple[str, list[dict]]:
    """(the block, the hits it holds, in their given order); ("", []) when
    not even one entry fits."""
    hits = [h for h in hits if strip_recalled(h["text"]).strip()]     # nothing but an old block: nothing new
    if cap_tokens <= 0 or not hits:
        return "", []
    knowledge = [h for h in hits if h["kind"] in KNOWLEDGE_KINDS]
    detail = [h for h in hits if h["kind"] not in KNOWLEDGE_KINDS]
    room = cap_tokens - count_tokens(_assemble(["-"], ["-"]))
    if room <= 0:
        return "", []
    k_keep = _fit([_knowledge_line(h) for h in knowledge], [h["score"] for h in knowledge],
                  int(room * KNOWLEDGE_SHARE))
    used = sum(count_tokens(_knowledge_line(knowledge[i])) + 1 for i in k_keep)
    d_keep = _fit([_detail_entry(h) for h in detail], [h["score"] for h in detail], room - used)
    # Joining can tokenize a little differently from the sum of the parts:
    # drop the lowest-scoring entry until the whole block fits.
    while k_keep or d_keep:
        block = _assemble([_knowledge_line(knowledge[i]) for i in k_keep],
                          [_detail_entry(detail[i]) for i in d_keep])
        if count_tokens(block) <= cap_tokens:
            held = {id(knowledge[i]) for i in k_keep} | {id(detail[i]) for i in d_keep}
            return block, [h for h in hits if id(h) in held]
        if d_keep:
            d_keep.remove(min(d_keep, key=lambda i: (detail[i]["score"], -i)))
        else:
            k_keep.remove(min(k_keep, key=lambda i: (knowledge[i]["score"], -i)))
    return "", []


def _assemble(k_lines: list[str], d_entries: list[str]) -> str:
    parts = [_OPEN, ""]
    if k_lines:
        parts += ["<knowledge>", *k_lines, "</knowledge>", ""]
    if d_entries:
        parts += ["<detail>", "\n\n".join(d_entries), "</detail>", ""]
    parts.append(_CLOSE)
    return "\n".join(parts)


_DETAIL_HEAD = re.compile(r"^\[(?:\d{4}-\d\d-\d\d \d\d:\d\d)? ?[a-z_]+ #(\d+)\] ", re.M)


def detail_seqs(block: str) -> list[int]:
    """The seqs of the events a block's <detail> part quotes, in its order
    (what a context anatomy record lists as recalled)."""
    inner = block.split("<detail>", 1)[1].rsplit("</detail>", 1)[0] if "<detail>" in block else ""
    return list(dict.fromkeys(int(m.group(1)) for m in _DETAIL_HEAD.finditer(inner)))


# The block's own tags inside a recalled text (a fetched page, a file that
# quotes them) would close it, and what follows would read as the user's own
# words: they are quoted with &lt; so that the block's framing is the block's.
_TAG = re.compile(r"<(?=\s*/?\s*(?:recalled-context|detail|knowledge)\b)", re.I)


def _quoted(text: str) -> str:
    text = strip_recalled(text)
    return _TAG.sub("&lt;", text) if "<" in text else text


def _knowledge_line(h: dict) -> str:
    return f"- [{h['kind']}] {' '.join(_quoted(h['text']).split())}"


def _detail_entry(h: dict) -> str:
    ts = (h.get("ts") or "")[:16].replace("T", " ")
    # a line inside the text shaped like an entry's head is not one (detail_seqs)
    body = _DETAIL_HEAD.sub(lambda m: " " + m.group(0), _quoted(h["text"]).strip())
    return f"[{ts} {h['kind']} #{h['seq']}] {body}"


def _fit(entries: list[str], scores: list[float], budget: int) -> list[int]:
    """Indexes of the entries kept (rank order): the best-scoring first
    (of equal scores, the best ranked), each while it fits what is left of
    the budget. One too big for what is left is passed over, not the end
    of the block: a long tool output at rank 1 must not keep the short
    answer at rank 2 out."""
    keep, left = [], budget
    for i in sorted(range(len(entries)), key=lambda i: (-scores[i], i)):
        cost = count_tokens(entries[i]) + 2
        if cost <= left:
            keep.append(i)
            left -= cost
    return sorted(keep)
