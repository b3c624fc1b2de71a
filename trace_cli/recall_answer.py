"""What `trace recall` does once its arguments are read: one query's hits
(JSON Lines, a table on a terminal, or a <recalled-context> block), or a
--queries file's. Free of Typer, so the command (trace_cli/commands/
recall.py) and its quick path (trace_cli/quick_recall.py) run the same code."""
from __future__ import annotations

import sys

import orjson

from stores.errors import NoResult, UsageError

# The options' defaults, for the command's signature and the quick path alike.
DEFAULTS = dict(query=None, k=10, session=None, kind=None, since=None, until=None, mode="hybrid", hops=1,
                min_score=None, mmr=1.0, rerank=False, queries=None, block=False, budget=4000, window=200_000)


def answer(out, store, query: str | None, *, k: int, session: str | None, kind: list[str] | None,
           since: str | None, until: str | None, mode: str, hops: int, min_score: float | None, mmr: float,
           rerank: bool, queries: str | None, block: bool, budget: int, window: int) -> int:
    """Recall for the command line: `out` is its Output, `store` its Store;
    the options as DEFAULTS names them."""
    if query is not None and queries is not None:
        raise UsageError("give a QUERY or --queries FILE, not both")
    if query is None and not queries:
        raise UsageError("--queries needs a file: JSONL, one {\"query\": …} per line, or - for stdin" if queries == ""
                         else "say what to recall: trace recall \"docker ssl error\", or --queries FILE for many "
                              "(see `trace recall --help`)")
    if queries is not None and block:
        raise UsageError("--block packs the hits of one QUERY; --queries prints each line's hits as JSON Lines: "
                         "drop --block, or run `trace recall QUERY --block` per query")
    from stores.recall.query import require_rerank, require_session
    require_session(session)      # once, not once per --queries line
    base = dict(k=k, session=session, kinds=kind or None, since=since, until=until, mode=mode, hops=hops,
                min_score=min_score, mmr=mmr, rerank=rerank)
    require_rerank(rerank)     # a missing extra is one usage error, not one per --queries line
    if queries:
        return _batch(store, queries, base, out)
    result = store.recall(query, **base)
    for w in result.warnings:
        out.warn(w)
    hits = result.hits
    if not hits:
        raise NoResult(_nothing(result.asked, store))
    if block:
        cap = max(min(budget, window // 10), 0)
        text, held = result.packed_block(cap)
        if not text:
            raise NoResult(f"none of the {len(hits)} hits fits a <recalled-context> block of {cap} tokens "
                           f"(--budget {budget}, --window {window} allows 10% of it); raise --budget")
        if out.json_asked:                     # --json: machine-readable even with --block (a pipe alone keeps the text)
            from reducers.tokens import count_tokens
            out.emit({"query": query, "block": text, "tokens": count_tokens(text), "budget": cap, "hits": held})
        else:
            out.raw(text + "\n")
    elif out.json:
        out.emit_many(result.hit_dicts())
    else:
        _table(out, hits, query)
    return 0


def _nothing(q, store=None) -> str:
    """Why a recall returned nothing, naming what to try (only what was
    not tried already)."""
    if store is not None and _empty(store):
        return f"the store at {store.dir} holds no events yet; add transcripts with `trace ingest PATH`"
    other = ["other words"] + (["--mode hybrid"] if q.mode != "hybrid" else [])
    if q.min_score is not None:
        tries = [*other, *(["--hops 2"] if q.hops == 1 else []), "a lower --min-score"]
        return f"no hit scored {q.min_score} or more; try {', '.join(tries[:-1])} or {tries[-1]}"
    narrowed = [name for name, v in (("--session", q.session), ("--kind", q.kinds), ("--since", q.since),
                                     ("--until", q.until)) if v]
    hint = f"widen {', '.join(narrowed)}" if narrowed else f"try {' or '.join(other)}"
    return f"no hits for {q.query[:60]!r}; {hint}"


def _empty(store) -> bool:
    """Whether the store's log holds no event (read only when nothing was found)."""
    from stores.log.segments import tail_seq
    return tail_seq(store.segments_dir) == 0


def _batch(store, source: str, base: dict, out) -> int:
    """One query per JSONL line. Every line is answered that can be; then
    exit 1 when a line was malformed (each reported as `FILE: line N:
    reason`), else 3 when no query got a hit, else 0."""
    from stores.errors import TraceError
    from stores.recall import RecallQuery
    try:
        stream = sys.stdin.buffer if source == "-" else open(source, "rb")
    except OSError as exc:
        raise TraceError(f"--queries {source}: {exc.strerror or exc}; give a JSONL file, one {{\"query\": …}} "
                         f"per line, or - for stdin") from None
    name = "stdin" if source == "-" else source
    any_hit, malformed, asked = False, 0, 0
    with stream:
        for n, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                try:
                    spec = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise ValueError(f"not JSON ({exc})") from None
                if not isinstance(spec, dict) or not isinstance(spec.get("query"), str):
                    raise ValueError("need an object with a string \"query\"")
                opts = {**base, **_line_options(spec)}
                result = store.recall(RecallQuery(query=spec["query"], query_id=str(spec.get("id", n)), **opts))
                for w in result.warnings:
                    out.warn(f"{name}: line {n}: {w}")
            except NoResult as exc:                      # nothing to search for: answered, with nothing
                asked += 1
                out.problem(f"{name}: line {n}: {exc}")
                continue
            except (ValueError, TypeError, UsageError, TraceError) as exc:
                malformed += 1
                out.problem(f"{name}: line {n}: {exc}")
                continue
            asked += 1
            if result.hits:
                any_hit = True
                out.emit_many(result.hit_dicts())
            else:
                out.note(f"{name}: line {n}: {_nothing(result.asked)}")
    if malformed:
        answered = f"; the {asked} other{'s were' if asked != 1 else ' was'} answered" if asked else ""
        raise TraceError(f"{malformed} malformed line{'s' if malformed != 1 else ''} in {name} (reported above){answered}")
    if not any_hit:
        raise NoResult(f"no query in {name} got a hit" if asked else f"no query in {name}")
    return 0


# What a --queries line may set, and the JSON type each takes (bool is an int
# to Python: it is refused where a number is meant).
_LINE_TYPES = {"k": ("an integer", int), "hops": ("an integer", int), "min_score": ("a number", (int, float)),
               "mmr": ("a number", (int, float)), "session": ("a string", str), "since": ("a string", str),
               "until": ("a string", str), "mode": ("a string", str), "rerank": ("true or false", bool)}


def _line_options(spec: dict) -> dict:
    """The options a --queries line sets, each checked for its JSON type
    (a wrong one is the line's one-line error, not a TypeError)."""
    opts = {}
    for key, (what, kind) in _LINE_TYPES.items():
        if key not in spec:
            continue
        value = spec[key]
        if (key == "min_score" and value is None) or (isinstance(value, kind) and
                                                       (kind is bool or not isinstance(value, bool))):
            opts[key] = value
        else:
            raise ValueError(f"\"{key}\" must be {what}, not {orjson.dumps(value).decode()}")
    if "kind" in spec or "kinds" in spec:
        kinds = spec.get("kinds", spec.get("kind"))
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
            raise ValueError("\"kind\" must be a string or a list of strings")
        opts["kinds"] = kinds
    return opts


SHORT_SESSION = 8          # a session id's first characters, as `--session` accepts them back


def _table(out, hits, query: str) -> None:
    from rich.table import Table
    from reducers.terms import query_words
    from trace_cli.output import terminal_text
    table = Table(header_style="bold", title=terminal_text(f"recall: {query[:80]}"))
    # The numbers never wrap and the snippet takes the width that is left;
    # a narrow terminal drops the per-signal scores (--json has them all).
    wide = out.console.width >= 120
    # p_hit beside the score: the first ten hits share a score (the chance
    # that they hold an answer), p_hit says which of them is likelier.
    columns = ("#", "score", "p_hit", "ft", "vec", "seq", "session", "kind", "when") if wide else \
        ("#", "score", "p_hit", "seq", "session", "kind", "when")
    for col in columns:
        table.add_column(col, no_wrap=True)
    table.add_column("snippet", overflow="fold", ratio=1)
    terms = query_words(query)
    for h in hits:
        snip = terminal_text(" ".join(h.snippet.split()))  # one paragraph: newlines waste rows
        snip.highlight_words(terms, style="bold yellow", case_sensitive=False)
        s = h.scores
        when = (h.ts or "")[:16].replace("T", " ") if wide else (h.ts or "")[5:16].replace("T", " ")
        signals = [f"{s.get('fulltext') or 0:.2f}", "-" if s.get("vector") is None else f"{s['vector']:.2f}"]
        table.add_row(str(h.rank), f"{h.score:.3f}", f"{s.get('p_hit', 0.0):.3f}", *(signals if wide else []),
                      str(h.seq),
                      terminal_text(h.session_id[:SHORT_SESSION]),
                      # a branch its conversation left (a rewound prompt's): found, but never happened
                      terminal_text(h.kind + (" (abandoned)" if h.abandoned else "")), terminal_text(when), snip)
    out.console.print(table)
