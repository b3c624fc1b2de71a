"""Where LoCoMo's missed evidence turns are: for `trace bench locomo
--misses FILE`.

An evidence turn outside a question's top K is either ranked too low
(recall found it as a candidate, then put others first: an ordering
problem) or never a candidate at all (neither the lexical query, the
vector index nor the neighbours of the strongest reached it: a candidate
problem). The two need different fixes, so each missed turn is written
with its rank among the hits returned and its rank in the whole candidate
pool (the first hop's), and the counts per category come back as rows."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

from trace_cli.bench.locomo import holding, norm


def misses(recaller, questions: list[dict], hits: dict[str, list[dict]], k: int, mode: str,
           seqs_of_text: dict[str, list[int]], out: Path) -> list[dict]:
    """Write one JSON line per evidence turn not in its question's top K
    (the question, its category, the turn, `rank` among the hits returned
    or null, `pool_rank` in the candidate pool or null when no candidate
    generator reached it, `pool_size`); return per-category counts."""
    from trace_cli.bench.rank_fit import pool
    counts: dict[str, Counter] = defaultdict(Counter)
    with open(out, "w") as f:
        for q in questions:
            ranked = sorted(hits.get(str(q["id"]), []), key=lambda h: h.get("rank", 0))
            texts = [norm(h.get("text") or "") for h in ranked]
            missed = []
            for e in dict.fromkeys(norm(e) for e in q["evidence"]):
                at = next((i for i, t in enumerate(texts) if e in t), None)
                for cat in (f"c{q['category']}", "all"):
                    counts[cat]["evidence"] += 1
                    counts[cat]["in_top_k"] += at is not None and at < k
                if at is None or at >= k:
                    missed.append((e, at))
            if not missed:
                continue
            p = pool(recaller, q["query"], mode, None, lambda t: False)
            place = {row[0]: i for i, row in enumerate(p["rows"])}
            for e, at in missed:
                pool_rank = min((place[s] for s in holding(e, seqs_of_text) if s in place), default=None)
                where = ("ranked_below_k" if at is not None else
                         "in_pool_below_hits" if pool_rank is not None else "not_in_pool")
                for cat in (f"c{q['category']}", "all"):
                    counts[cat][where] += 1
                f.write(json.dumps({"id": q["id"], "category": q["category"], "query": q["query"], "evidence": e,
                                    "rank": None if at is None else at + 1,
                                    "pool_rank": None if pool_rank is None else pool_rank + 1,
                                    "pool_size": len(p["rows"]), "where": where}) + "\n")
    return [{"bench": "locomo-misses", "category": cat, "k": k, **{name: c[name] for name in (
        "evidence", "in_top_k", "ranked_below_k", "in_pool_below_hits", "not_in_pool")}}
            for cat, c in sorted(counts.items())]
