"""`trace context` as a function: the push pack for a session — what the
runtime sends the model next, within budget, with the current turn in it.

1. With `window`, compact first when the session's working set has passed
   WINDOW_CEILING of the model's window (bounded-working-set: the ceiling
   that must never be crossed), so a runtime that calls only `context`
   never overflows.
2. Read a view of the session (stores/context/view.py): what the pack can
   hold and a little more, never the whole session.
3. A `<recalled-context>` block for what the user is asking now: the
   latest request, with the one or two before it when it is too short to
   stand alone ("ok", "thanks", "go on" carry no question and are
   skipped), searched in this session only unless `cross_session`, hits
   below `recall_min_score` (recall's calibrated score) left out, hits already in view
   left out — the block is for what the model cannot see.
4. Render within budget (reducers/render.py). With `overflow`, the last
   call failed on context length: render to 85%, 72%, 60% of the budget on
   successive tries (stores/context/overflow.py).

The result says exactly what the pack holds (`included`: event seqs,
marker ids, elided ranges), for the context anatomy record."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from reducers.branches import RewoundLines, off_branch
from reducers.markers import topic_hints
from reducers.recall_block import build_block, strip_recalled
from reducers.render import (NOTES_CAP, PROTECTED_TOOLS, TOOL_MAX_TOKENS, BudgetTooSmall, Pack, RenderPolicy,
                             assemble)
from reducers.retention import Retention
from reducers.terms import TRIVIAL_WORDS, query_words
from stores.api.result import Result
from stores.context.sessions import require_session
from stores.context.kept_counts import kept_counts
from stores.errors import StoreLocked, TraceError, UsageError

HARD_CAP = 4000
RECALL_SHARE = 0.10
RECALL_MIN_SCORE = 0.5          # recall's calibrated score: an answer more likely than not among the first ten hits
RECALL_HITS = 10
QUERY_MESSAGES = 3
SELF_CONTAINED = 4
SETTLE_TRIES = 4                # reads of a longer tail while the smallest pack grows with what is read

@dataclass
class PushResult(Result):
    session_id: str
    pack: Pack
    cycle: int = 0
    query: str | None = None
    overflow: dict | None = None                 # {try, limit, tokens, fits_limit, tries}
    compacted: dict | None = None                # the automatic compaction, when --window triggered one
    working_set_tokens: int | None = None        # with --window
    read_events: int = 0                         # conversation events the render read
    notes: list[str] = field(default_factory=list)

    @property
    def included(self) -> dict:
        """What the model is shown: event seqs, logged marker ids, elided ranges."""
        return self.pack.included()

    @property
    def markers(self) -> list[dict]:
        return self._markers + ([self.pack.elision.as_json()] if self.pack.elision else [])

    def formatted(self, fmt: str):
        """The pack in a client's shape (openai, anthropic, text, json);
        made once per shape (the result is not changed after the render)."""
        if fmt not in self._formatted:
            from reducers.pack_formats import pack_in_format
            self._formatted[fmt] = pack_in_format(self.pack, fmt, self.session_id, self.markers, {
                "cycle": self.cycle, "query": self.query, "overflow": self.overflow, "compacted": self.compacted,
                "working_set_tokens": self.working_set_tokens, "read_events": self.read_events})
        return self._formatted[fmt]

    def to_dict(self) -> dict:
        """The pack as `trace context --format json` prints it."""
        return self.formatted("json")

    _markers: list[dict] = field(default_factory=list, repr=False)
    _formatted: dict = field(default_factory=dict, repr=False)


def recall_query(items: list[dict], explicit: str | None = None) -> str:
    """The latest request when it says enough by itself (SELF_CONTAINED
    content words), else it with the one or two before it ("and the
    staging one?" means little alone)."""
    if explicit:
        return explicit
    asks = []
    for e in reversed(items):
        if e["kind"] != "user":
            continue
        words = set(query_words(strip_recalled(e.get("text") or "")))
        if words and not words <= TRIVIAL_WORDS:
            asks.append(strip_recalled(e["text"])[:2000])
            if len(asks) == 1 and len(words - TRIVIAL_WORDS) >= SELF_CONTAINED:
                break
        if len(asks) >= QUERY_MESSAGES:
            break
    return "\n".join(reversed(asks))


def tool_max_tokens_setting(value: int | None) -> int:
    """--tool-max-tokens, else TRACE_TOOL_MAX_TOKENS, else the default."""
    if value is None:
        raw = os.environ.get("TRACE_TOOL_MAX_TOKENS")
        if not raw:
            return TOOL_MAX_TOKENS
        if not raw.strip().isdigit() or int(raw) < 1:
            raise UsageError(f"TRACE_TOOL_MAX_TOKENS={raw!r} is not a whole number of tokens (e.g. 5000)")
        value = int(raw)
    if value < 1:
        raise UsageError("--tool-max-tokens must be at least 1")
    return value


def push_pack(store, session_id: str, *, budget: int = 8000, query: str | None = None,
              overflow: bool = False, recall: bool = True, retention: Retention = Retention(),
              tool_max_tokens: int | None = None, recall_min_score: float | None = RECALL_MIN_SCORE,
              cross_session: bool = False, window: int | None = None,
              protected: tuple[str, ...] = PROTECTED_TOOLS, hard_cap: int = HARD_CAP,
              notes_cap: int = NOTES_CAP, hot_tail: int = 3) -> PushResult:
    from stores.recall import Recaller
    if budget < 1:
        raise UsageError("--budget must be at least 1")
    if window is not None and window < budget:
        raise UsageError(f"--window ({window}) is smaller than --budget ({budget}): the pack must fit the "
                         f"model's window; give the window the model really has")
    tool_max = tool_max_tokens_setting(tool_max_tokens)
    store.require()
    session_id = require_session(store, session_id)
    recaller = Recaller(store)
    recaller.prepare("fulltext")                 # catches the index up with the log when it can
    result = PushResult(session_id, Pack([], budget))
    if window is not None:
        _auto_compact(store, session_id, budget, window, hot_tail, protected, result)
        recaller.fulltext.close()
        recaller = Recaller(store)
    options = dict(budget=budget, query=query, overflow=overflow, recall=recall, retention=retention,
                   tool_max=tool_max, recall_min_score=recall_min_score, cross_session=cross_session,
                   protected=protected, hard_cap=hard_cap, notes_cap=notes_cap)
    notes = list(result.notes)
    with kept_counts(store, session_id):
        try:
            return _render(store, recaller, session_id, result, **options)
        except BaseException as exc:
            # pyo3's PanicException: the engine read damaged bytes that kept
            # the file's size and time (bit rot), so no check saw them before.
            # The index is derived: rebuilt from the log, the pack is rendered again.
            if type(exc).__name__ != "PanicException":
                raise
        result.notes[:] = [*notes, "the full-text index failed reading its files (damaged?): rebuilt from the log"]
        recaller.prepare("fulltext", rebuild=True)
        return _render(store, recaller, session_id, result, **options)


def _render(store, recaller, session_id: str, result: PushResult, *, budget: int, query: str | None,
            overflow: bool, recall: bool, retention: Retention, tool_max: int, recall_min_score: float | None,
            cross_session: bool, protected: tuple[str, ...], hard_cap: int, notes_cap: int) -> PushResult:
    from stores.context.view import read_view
    ft = recaller.fulltext
    view = read_view(store, ft, session_id, budget=budget, tool_max_tokens=tool_max, notes_cap=notes_cap,
                     protected=protected)
    result.read_events = len(view.conversation)
    result.cycle = max((int(((m.get("meta") or {}).get("marker") or {}).get("cycle") or 0) for m in view.markers),
                       default=0)
    result._markers = [{"id": m["id"], "seq": m["seq"], "text": m["text"], **((m.get("meta") or {}).get("marker") or {})}
                       for m in view.markers if m.get("text")]
    q = recall_query(view.conversation, query)
    result.query = q or None
    block = ""
    if recall and q:
        block = _recalled_block(recaller, view, q, session=None if cross_session else session_id,
                                min_score=recall_min_score, cap=min(hard_cap, int(budget * RECALL_SHARE)))
    n_docs = max(ft.num_docs(), 1)
    policy = RenderPolicy(retention=retention, tool_max_tokens=tool_max, notes_cap=notes_cap, protected=protected,
                          query=q, topics=lambda texts: topic_hints(texts, ft.word_doc_freq, n_docs))
    limit = budget
    if overflow:
        from stores.context.overflow import next_try
        newest = max([e["seq"] for e in view.conversation] + [view.unread_max or 0], default=0)
        n, limit, before = next_try(store, session_id, newest, budget)
        result.overflow = {"try": n, "limit": limit, "tries": before, "session_seq": newest}
    try:
        result.pack = assemble(view, limit, block, policy)
    except BudgetTooSmall as exc:
        if limit == budget or exc.needed > budget:
            need = _smallest_needed(store, ft, session_id, exc, block, policy, tool_max, notes_cap, protected)
            raise TraceError(str(BudgetTooSmall(need.needed, budget, need.parts))) from None
        result.pack = assemble(view, exc.needed, block, policy)       # the smallest pack, over the limit
        result.notes.append(f"the smallest pack needs {exc.needed} tokens, more than this try's limit {limit}")
    result.pack.budget = budget
    if overflow:
        from stores.context.overflow import record_try
        o = result.overflow
        o.update(tokens=result.pack.tokens, fits_limit=result.pack.tokens <= limit)
        record_try(store, session_id, {"try": o["try"], "limit": limit, "tokens": o["tokens"], "budget": budget,
                                       "session_seq": o["session_seq"]})
    return result


def _smallest_needed(store, ft, session_id: str, exc: BudgetTooSmall, block: str, policy: RenderPolicy,
                     tool_max: int, notes_cap: int, protected) -> BudgetTooSmall:
    """What the smallest pack needs, settled: a small budget reads a short
    tail, which may stop short of the current turn's newest pair; read
    again at the size named until the pack renders there, so the minimum
    the error names is one that renders."""
    from stores.context.view import read_view
    for _ in range(SETTLE_TRIES):
        view = read_view(store, ft, session_id, budget=exc.needed, tool_max_tokens=tool_max, notes_cap=notes_cap,
                         protected=protected)
        try:
            assemble(view, exc.needed, block, policy)
            return exc
        except BudgetTooSmall as larger:
            exc = larger
    return exc


def _recalled_block(recaller, view, q: str, *, session: str | None, min_score: float | None, cap: int) -> str:
    """Hits for the request that the view does not already hold, as one
    block. In one session BM25 suffices (the vector index is store-wide:
    loading it would cost what the store holds); across sessions, hybrid."""
    from stores.recall import RecallQuery
    in_view = {e["seq"] for e in [*view.conversation, *view.system, *view.markers]}
    mode = "hybrid" if session is None and recaller.vectors.count else "fulltext"
    # The query is the user's last lines, which are in view with their
    # neighbours and match themselves best: recall is asked past them.
    hits = recaller.recall(RecallQuery(query=q, k=RECALL_HITS, mode=mode, min_score=min_score, session=session,
                                       exclude=frozenset(in_view)))
    # a rewound branch (this conversation's, evicted or unread, or another's) is not brought back as context
    rewound = RewoundLines([*view.conversation, *view.system])
    hits = [h for h in hits if not h.abandoned
            and (h.session_id != view.session_id or not off_branch(h.event, rewound))]
    return build_block([h.as_json() for h in hits], cap)


def _auto_compact(store, session_id: str, budget: int, window: int, hot_tail: int, protected, result) -> None:
    from stores.context.cache_file import WINDOW_CEILING, working_set_tokens
    from stores.context.compaction import HEADROOM, compact
    result.working_set_tokens = working_set_tokens(store, session_id)
    if result.working_set_tokens <= WINDOW_CEILING * window:
        return
    try:
        # context has no --headroom: a budget at or under the default one keeps a tenth of itself free
        headroom = HEADROOM if budget > HEADROOM else budget // 10
        done = compact(store, session_id, budget=budget, headroom=headroom, hot_tail=hot_tail, reflect=False,
                       protected=frozenset(protected))
    except StoreLocked:
        result.notes.append("another writer holds the store: rendered without compacting first")
        return
    result.compacted = done.as_json()
