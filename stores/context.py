"""`trace context` as a function: the push pack for a session — the cache,
a recalled-context block for what the user is asking now, rendered within
budget (reducers/render.py) in the shape a client sends.

The recall query comes from the last 2–3 user messages; trivial ones ("ok",
"thanks", "go on") carry no question and are skipped, and so is the block
when nothing but them is there. Hits already in the context are left out:
the block is for what the model cannot see."""
from __future__ import annotations

from reducers.recall_block import build_block
from reducers.render import BudgetTooSmall, assemble
from reducers.retention import Retention
from reducers.terms import TRIVIAL_WORDS, query_words
from stores.context_cache import load_cache, require_session
from stores.errors import TraceError
from stores.fulltext import FulltextIndex

HARD_CAP = 4000
RECALL_SHARE = 0.10
QUERY_MESSAGES = 3
OVERFLOW_RETRIES = 3
OVERFLOW_SHRINK = 0.85


def recall_query(items: list[dict], explicit: str | None = None) -> str:
    if explicit:
        return explicit
    asks = []
    for e in reversed(items):
        if e["kind"] != "user":
            continue
        words = set(query_words(e.get("text") or ""))
        if words and not words <= TRIVIAL_WORDS:
            asks.append(e["text"][:2000])
        if len(asks) >= QUERY_MESSAGES:
            break
    return "\n".join(reversed(asks))


def push_pack(store, session_id: str, *, budget: int = 8000, query: str | None = None,
              overflow: bool = False, hard_cap: int = HARD_CAP, recall: bool = True,
              retention: Retention = Retention()):
    """(pack, cache, info) for a session."""
    from stores.recall import Recaller, RecallQuery
    store.require()
    require_session(store, session_id)
    recaller = Recaller(store)
    recaller.prepare("fulltext")                 # catches the index up with the log when it can
    ft: FulltextIndex = recaller.fulltext
    cache = load_cache(store, session_id, ft)
    block, q = "", recall_query(cache.items, query) if recall else ""
    if q:
        in_context = {e["seq"] for e in cache.items}
        cap = min(hard_cap, int(budget * RECALL_SHARE))
        hits = [h for h in recaller.recall(RecallQuery(query=q, k=10, mode="hybrid" if recaller.vectors.count else "fulltext"))
                if h.seq not in in_context]
        block = build_block([h.as_json() for h in hits], cap)
    attempts, effective = 0, budget
    while True:
        try:
            pack = assemble(cache.items, effective, block, retention=retention)
        except BudgetTooSmall as exc:
            raise TraceError(str(exc)) from None
        if not overflow or attempts >= OVERFLOW_RETRIES:
            break
        # --overflow: the last call failed on context length, so the count
        # under-estimated it; shrink and retry, dropping the oldest turns first.
        attempts += 1
        effective = int(effective * OVERFLOW_SHRINK)
        if pack.tokens <= effective:
            break
    info = {"cycle": cache.cycle, "query": q or None, "overflow_retries": attempts,
            "markers": [{"id": e["id"], "text": e["text"], **((e.get("meta") or {}).get("marker") or {})}
                        for e in cache.items if e["kind"] == "marker"]}
    return pack, cache, info
