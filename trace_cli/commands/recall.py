"""`trace recall`: scored hits an agent can gate on."""
from __future__ import annotations

from typing import Annotated

import typer

from reducers.event_kinds import KINDS
from trace_cli.options import JsonOpt
from trace_cli.recall_answer import DEFAULTS, answer


def register(app: typer.Typer) -> None:
    @app.command(help=(
        "Find events by meaning and by exact string: BM25 over the text and exact tokens "
        "(hashes, paths, identifiers), the rare query terms each event holds, vector similarity, the "
        "speaker, neighbouring turns, recency and the session's active task. Every hit carries those "
        "components and a calibrated score to gate on (a probability, see --min-score); nothing found "
        "exits 3 with a line on stderr.\n\n"
        "Examples:\n\n"
        "  trace recall \"which file sets the payments timeout\" -k 5\n\n"
        "  trace recall \"checksum of the release tarball\" --hops 2\n\n"
        "  trace recall \"what did she say about the adoption\" --rerank      (the optional extra)\n\n"
        "  trace recall --queries questions.jsonl > hits.jsonl    (JSONL {\"id\",\"query\",…filters})\n\n"
        "  trace recall \"why did checkout fail\" --block --budget 2000          (a <recalled-context> block)"))
    def recall(
        ctx: typer.Context,
        query: Annotated[str | None, typer.Argument(metavar="QUERY", help="What to look for.")] = DEFAULTS["query"],
        k: Annotated[int, typer.Option("-k", "--top", min=1, metavar="N", help="Hits to return.")] = DEFAULTS["k"],
        session: Annotated[str | None, typer.Option("--session", "-s", metavar="ID", help="Only this session (or a unique prefix of its id).")] = DEFAULTS["session"],
        kind: Annotated[list[str] | None, typer.Option("--kind", metavar="KIND", help=f"Only events of these kinds, one --kind each: {', '.join(KINDS)}.")] = DEFAULTS["kind"],
        since: Annotated[str | None, typer.Option("--since", metavar="TIME", help="ISO time or age (3d, 12h).")] = DEFAULTS["since"],
        until: Annotated[str | None, typer.Option("--until", metavar="TIME", help="ISO time or age.")] = DEFAULTS["until"],
        mode: Annotated[str, typer.Option("--mode", metavar="hybrid|fulltext|vector", help="hybrid: words, exact tokens and meaning; fulltext: words and exact tokens only (the fastest); vector: meaning only.")] = DEFAULTS["mode"],
        hops: Annotated[int, typer.Option("--hops", metavar="1|2", help="2: follow identifiers found by the first hop.")] = DEFAULTS["hops"],
        min_score: Annotated[float | None, typer.Option("--min-score", metavar="X", help="Drop hits below X; exit 3 if none is left. A score is the estimated probability that an answer lies among the ten hits up to that one (the first ten share one score: that they hold an answer at all); 0.5 keeps the hits of a query more likely answered than not.")] = DEFAULTS["min_score"],
        mmr: Annotated[float, typer.Option("--mmr", metavar="λ", help="MMR trade-off: 1 = relevance only (the default: diversity cost 0.13 R@10 on LoCoMo dev), lower = more diverse; exact occurrences are never thinned.")] = DEFAULTS["mmr"],
        rerank: Annotated[bool, typer.Option("--rerank", help="Reorder the best 50 candidates with a stronger model (multilingual-e5-small, 4-bit, on the CPU): each hit gains scores.rerank. Costs about 2 s a query on two cores, and measured no gain on LoCoMo dev (README). Needs the optional extra (make install-rerank in the checkout; without it, exit 2 naming the install command).")] = DEFAULTS["rerank"],
        queries: Annotated[str | None, typer.Option("--queries", metavar="FILE|-", help="JSONL, one {\"id\", \"query\", …filters} object per line (the filters as the options name them: k, session, kind, since, until, mode, hops, min_score, mmr, rerank); - reads stdin. One process for many queries; a malformed line is reported and makes the run exit 1.")] = DEFAULTS["queries"],
        block: Annotated[bool, typer.Option("--block", help="Print a <recalled-context> block instead of hits (with --json: one JSON object holding the block, its tokens, the budget and the hits it holds).")] = DEFAULTS["block"],
        budget: Annotated[int, typer.Option("--budget", metavar="TOKENS", min=1, help="Hard cap for --block.")] = DEFAULTS["budget"],
        window: Annotated[int, typer.Option("--window", metavar="TOKENS", min=1, help="Context window; --block stays within 10% of it.")] = DEFAULTS["window"],
        json_out: JsonOpt = False,
    ) -> int:
        from trace_cli.app_state import opened

        out, store = opened(ctx, json_out)
        return answer(out, store, query, k=k, session=session, kind=kind, since=since, until=until, mode=mode,
                      hops=hops, min_score=min_score, mmr=mmr, rerank=rerank, queries=queries, block=block,
                      budget=budget, window=window)
