"""`trace bench fit`: fit recall's scoring weights (reducers/fusion.py
WEIGHTS, BIAS) as a logistic regression, so that score = σ(logit) is the
estimated probability that a hit answers the query.

Training data, all dev: LoCoMo dev questions (a hit is right when it is
one of the question's evidence turns), generated needle sessions (right:
the event stating the needle; short decoy lines and long tool outputs
included), and queries with no answer in the store (LoCoMo's adversarial
category 5, and needle questions about subjects that were never
mentioned), where every hit is wrong. Each query contributes its stage-1
pool. The fit is checked leaving one LoCoMo conversation out at a time
(and the needles out), so the weights are not fitted to one sample."""
from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Callable

from trace_cli.bench.locomo import convert, norm
from trace_cli.bench.needles import SERVICES, build_session

FIT_POOL = 80


def pool_features(recaller, query: str, mode: str = "hybrid") -> list[tuple[dict, str]]:
    """(features, text) of a query's stage-1/2 pool, as recall scores it."""
    from reducers.speakers import named_speakers
    from reducers.terms import exact_query_terms, query_words, words
    from stores.recall import RecallQuery
    from stores.recall import recaller as rmod
    q = RecallQuery(query=query, k=FIT_POOL // 3, mode=mode, mmr=1.0)
    recaller._events = {}
    qwords, qexact = query_words(query), exact_query_terms(query)
    qvec = recaller.vectors.embedder().embed([query])[0] if mode != "fulltext" and recaller.vectors.count else None
    cands = recaller.gather(qwords, qexact, qvec, q.filters(), mode, hop=1)
    old = rmod.RERANK_POOL
    rmod.RERANK_POOL = FIT_POOL
    try:
        ranked = recaller.rank(cands, q, named_speakers(words(query), recaller.fulltext.speaker_known),
                               recaller.fulltext.query_terms(qwords, qexact))
    finally:
        rmod.RERANK_POOL = old
    return [(dict(c.x), recaller._events[c.seq].get("text", "")) for c in ranked]


def logistic_fit(rows: list[tuple[list[float], int]], l2: float = 1e-4, iters: int = 3000,
                 lr: float = 1.0) -> tuple[list[float], float]:
    """Plain logistic regression by gradient descent on standardised
    features, returned in the original units."""
    import numpy as np
    X = np.array([r[0] for r in rows], dtype=np.float64)
    y = np.array([r[1] for r in rows], dtype=np.float64)
    mu, sd = X.mean(0), X.std(0) + 1e-9
    Z = (X - mu) / sd
    w, b = np.zeros(X.shape[1]), 0.0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-(Z @ w + b)))
        w -= lr * (Z.T @ (p - y) / len(y) + l2 * w)
        b -= lr * float((p - y).mean())
    w_raw = w / sd
    return w_raw.tolist(), float(b - (w_raw * mu).sum())


def recall_at(queries: list[dict], weights: dict, k: int = 10) -> float:
    """Mean share of each query's right answers (at most its evidence
    count) in its top k when its pool is ordered by these weights."""
    total = 0.0
    for q in queries:
        order = sorted(q["pool"], key=lambda r: -sum(weights.get(f, 0.0) * v for f, v in r[0].items()))
        total += min(sum(r[1] for r in order[:k]), q["wanted"]) / q["wanted"]
    return total / max(len(queries), 1)


def fit_ranking(queries: list[dict], start: dict, rounds: int = 3) -> dict:
    """Coordinate search on R@10: each weight in turn tried at a ladder of
    multiples, kept where recall is best (ties keep the smaller change)."""
    w = dict(start)
    best = recall_at(queries, w)
    for _ in range(rounds):
        for f in list(w):
            for factor in (0.0, 0.25, 0.5, 0.75, 1.5, 2.0, 3.0):
                trial = {**w, f: w[f] * factor if w[f] else factor * 0.5}
                r = recall_at(queries, trial)
                if r > best + 1e-6:
                    w, best = trial, r
    return w


def _needle_queries(root: Path, note) -> tuple[Path, list[tuple[str, str, Callable]]]:
    """A store of generated needle sessions (seeds of our own) and its queries."""
    from stores.store import Store
    src = root / "needles.jsonl"
    queries = []
    with open(src, "w") as f:
        for n, (flood, long_words) in enumerate([(60, 0), (80, 1500), (40, 600), (80, 0), (60, 3000)]):
            s = build_session(turns=300, needles=12, flood_words=flood, seed=9000 + n, tag=f"fit{n}",
                              long_output_words=long_words, distractors=True)
            f.write(json.dumps({"messages": s.messages}) + "\n")
            for nd in s.needles:
                queries.append((f"needle-{n}-{nd.subject}", "needles", nd.query, lambda t, v=nd.value: v in t))
            # The same questions about subjects no session ever mentions: no answer.
            for i, nd in enumerate(s.needles[:6]):
                ghost = f"{SERVICES[(i * 7 + n) % len(SERVICES)]}-ghost{n}{i}"
                queries.append((f"absent-{n}-{i}", "absent", nd.query.replace(nd.subject, ghost), lambda t: False))
    note("ingesting the needle sessions")
    store_dir = root / "needle-store"
    list(Store(store_dir).ingest([str(src)]))
    return store_dir, queries


def collect(locomo_json: str, base: Path, note, mode: str = "hybrid") -> list[dict]:
    """Every dev query's pool: {id, group, wanted, pool: [(features, right)]}
    (wanted 0: a query with no answer). Cached in base/pools.json."""
    from stores.recall import Recaller
    from stores.store import Store
    cache = base / f"pools-{mode}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    convert(Path(locomo_json), base / "lc")
    store_dir = base / "locomo-store"
    if not store_dir.exists():
        note("ingesting LoCoMo dev")
        list(Store(store_dir).ingest([str(base / "lc" / "sessions.jsonl")], format="openai"))
    out = []
    rc = Recaller(Store(store_dir))
    rc.prepare(mode)
    rc._log = lambda *a, **k: None
    for name in ("questions", "no_answer"):
        rows = [json.loads(line) for line in open(base / "lc" / f"{name}.jsonl")]
        note(f"pools of {len(rows)} LoCoMo {name}")
        for q in rows:
            ev = [norm(e) for e in q.get("evidence", [])]
            pool = [(x, int(any(e in norm(text) for e in ev))) for x, text in pool_features(rc, q["query"], mode)]
            out.append({"id": q["id"], "group": q["id"].rsplit("-", 1)[0], "wanted": len(ev), "pool": pool})
    needle_dir = base / "needles"
    needle_dir.mkdir(exist_ok=True)
    needle_store, nqueries = _needle_queries(needle_dir, note)
    rn = Recaller(Store(needle_store))
    rn.prepare(mode)
    rn._log = lambda *a, **k: None
    note(f"pools of {len(nqueries)} needle queries")
    for qid, group, query, is_right in nqueries:
        pool = [(x, int(is_right(text))) for x, text in pool_features(rn, query, mode)]
        out.append({"id": qid, "group": "needles", "wanted": 0 if group == "absent" else 1, "pool": pool})
    cache.write_text(json.dumps(out))
    return out


def run_fit(locomo_json: str, workdir: str | None, note: Callable[[str], None], mode: str = "hybrid") -> dict:
    from reducers.fusion import WEIGHTS
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="trace-fit-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        queries = collect(locomo_json, base, note, mode)
        answerable = [q for q in queries if q["wanted"]]
        start = {f: WEIGHTS.get(f, 0.0) for f in WEIGHTS}
        note("fitting the ranking (R@10) on all dev queries, then leaving each conversation out")
        ranking = fit_ranking(answerable, start)
        loco = {}
        for group in sorted({q["group"] for q in answerable}):
            train = [q for q in answerable if q["group"] != group]
            test = [q for q in answerable if q["group"] == group]
            w = fit_ranking(train, start, rounds=2)
            loco[group] = {"held_out": round(recall_at(test, w), 4), "all_dev_weights": round(recall_at(test, ranking), 4),
                           "start_weights": round(recall_at(test, start), 4)}
        # Calibration (Platt): P(right) = σ(a · ranking logit + b) over every
        # query's top 10, no-answer queries included.
        rows = []
        for q in queries:
            scored = sorted(((sum(ranking.get(f, 0.0) * v for f, v in x.items()), y) for x, y in q["pool"]),
                            key=lambda t: -t[0])[:10]
            rows += [([z], y) for z, y in scored]
        (a,), b = logistic_fit(rows)
        return {"weights": {f: round(a * v, 4) for f, v in ranking.items()}, "bias": round(b, 4),
                "platt_slope": round(a, 4), "ranking_weights": ranking,
                "dev_recall_at_10_start": round(recall_at(answerable, start), 4),
                "dev_recall_at_10_fitted": round(recall_at(answerable, ranking), 4),
                "leave_one_group_out": loco, "calibration_rows": len(rows),
                "calibration_log_loss": _log_loss(rows, [a], b)}
    finally:
        if not workdir:
            shutil.rmtree(base, ignore_errors=True)


def _log_loss(rows, w, b) -> float:
    total = 0.0
    for x, y in rows:
        z = b + sum(a * c for a, c in zip(w, x))
        p = min(max(1 / (1 + math.exp(-max(min(z, 40), -40))), 1e-9), 1 - 1e-9)
        total -= y * math.log(p) + (1 - y) * math.log(1 - p)
    return round(total / max(len(rows), 1), 4)
