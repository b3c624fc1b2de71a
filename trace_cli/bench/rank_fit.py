"""`trace bench fit`: fit recall's ranking weights (reducers/fusion.py
WEIGHTS) and its calibration (reducers/calibration.py TAU, ANSWER_WEIGHTS,
ANSWER_BIAS) on dev data, and print them.

Dev data only: LoCoMo dev questions (a hit is right when it holds one of
the question's evidence turns) and its adversarial no-answer questions;
generated needle sessions (our own seeds: long tool outputs and decoy
lines included) with questions by subject, the same questions about
subjects no session mentions (no answer), the pushed-context form of a
question (the user's two previous lines + the question), and events
sought by their own three rarest words inside their session (what
compaction's reflection asks). Every query keeps its whole candidate pool
with the raw numbers the indexes gave, so the weights can be refitted
without querying again (cached in WORKDIR/pools-MODE-vN.json).

1. Ranking: a listwise softmax fit (each answerable query's right hits
   against its pool), then a coordinate search on R@10 that may only
   improve it; checked leaving each LoCoMo conversation out.
2. A = P(an answer is among the first ten hits): logistic regression on
   query-level evidence (calibration.query_features), no-answer queries
   included.
3. TAU: the softmax temperature under which every shown score is
   calibrated (log loss of score_i against "an answer is among hits
   i..i+9").
Then the --min-score 0.5 gate on dev with the fitted numbers."""
from __future__ import annotations

import json
import math
import random
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from trace_cli.bench.locomo import convert, norm
from trace_cli.bench.needles import SERVICES, build_session

NEEDLE_SEEDS = 9000
OBJECTIVE = {"lc": 1.0, "needles": 0.5, "ctxq": 0.5, "selfshort": 0.3}
K = 10
POOL_VERSION = 4             # rows gained whether each candidate asks a question (2), its traits and the query's form (3), its window's IDF (4)


def pool(recaller, query: str, mode: str, session: str | None, is_right: Callable[[str], bool]) -> dict:
    """A query's whole candidate pool, with the raw numbers the indexes gave."""
    from reducers.calibration import asks_question
    from reducers.query_dates import named_spans
    from reducers.speakers import named_speakers
    from reducers.terms import exact_query_terms, query_words, words
    from reducers.turn_traits import question_form
    from stores.index.fulltext_documents import key63
    from stores.recall import RecallQuery
    q = RecallQuery(query=query, k=K, mode=mode, session=session)
    recaller._events = {}
    qwords, qexact = query_words(query), exact_query_terms(query)
    qterms = recaller.fulltext.query_terms(qwords, qexact)
    qvec = recaller.vectors.embedder().embed_query(query) if mode != "fulltext" and recaller.vectors.count else None
    cands = recaller.gather(qterms, qvec, q.filters(), mode, hop=1)
    recaller.measure(cands, qterms, qvec)
    named = {key63(label) for label in named_speakers(words(query), recaller.fulltext.speaker_known)}
    ranked = recaller.rank(cands, q, named, qterms)
    recaller._read(ranked)
    rows = []
    for c in ranked:
        e = recaller._events.get(c.seq)
        if e is None:
            continue
        text = recaller._full_text(e)
        rows.append([c.seq, c.gp, c.ts_ms, c.kind, c.bm25, c.held, c.cosine, int(c.speaker_key in named),
                     c.chars, int(is_right(text)), int(asks_question(e.get("text") or "", c.kind)), c.traits, c.window])
    unknown = recaller.fulltext.unknown_shares(qwords, qexact, qterms)
    return {"idf": sum(t.idf for t in qterms), "names": bool(named), "unknown": list(unknown), "form": question_form(query),
            "spans": [list(s) for s in named_spans(query)], "rows": rows}


def _needle_queries(root: Path, note) -> tuple[Path, list[tuple]]:
    """A store of generated needle sessions (seeds of our own) and its queries."""
    from reducers.terms import query_words
    from stores.index.fulltext import FulltextIndex
    from stores.store import Store
    src = root / "needles.jsonl"
    queries, sessions = [], []
    for n, (flood, long_words) in enumerate([(60, 0), (80, 1500), (40, 600), (80, 0), (60, 3000)]):
        s = build_session(turns=300, needles=12, chains=3, flood_words=flood, seed=NEEDLE_SEEDS + n, tag=f"fit{n}",
                          long_output_words=long_words, distractors=True)
        sessions.append(s)
        users = [m["content"] for m in s.messages if m["role"] == "user" and isinstance(m.get("content"), str)]
        for j, nd in enumerate(s.needles):
            right = lambda t, v=nd.value: v in t
            queries.append((f"needle-{n}-{nd.subject}", "needles", nd.query, right, 1, None))
            before = users[(j * 37) % len(users)] + "\n" + users[(j * 37 + 1) % len(users)]
            queries.append((f"ctxq-{n}-{nd.subject}", "ctxq", before + "\n" + nd.query, right, 1, None))
        for i, nd in enumerate(s.needles[:6]):        # about subjects no session mentions: no answer
            ghost = f"{SERVICES[(i * 7 + n) % len(SERVICES)]}-ghost{n}{i}"
            queries.append((f"absent-{n}-{i}", "absent", nd.query.replace(nd.subject, ghost), lambda t: False, 0, None))
    with open(src, "w") as f:
        for s in sessions:
            f.write(json.dumps({"messages": s.messages}) + "\n")
    store_dir = root / "needle-store"
    if not store_dir.exists():
        note("ingesting the needle sessions")
        list(Store(store_dir).ingest([str(src)]))
    store = Store(store_dir)
    ft = FulltextIndex(store.dir)
    rng = random.Random(5)
    events = [e for e in store.events() if e["kind"] in ("user", "assistant", "tool_result")
              and len(e.get("text") or "") > 20]
    for e in rng.sample(events, min(150, len(events))):
        words = [w for w in dict.fromkeys(query_words(e["text"])) if not w.isdigit()]
        rare = sorted(words, key=lambda w: (ft.word_doc_freq(w) or 10**9, w))[:3]
        if rare:
            group = "selfshort" if len(e["text"]) < 400 else "self"
            queries.append((f"self-{e['seq']}", group, " ".join(rare) + "?", lambda t, x=e["text"]: t[:200] == x[:200],
                            1, e["session_id"]))
    ft.close()
    return store_dir, queries


def collect(locomo_json: str, base: Path, note, mode: str = "hybrid") -> list[dict]:
    """Every dev query's pool (cached in base/pools-MODE-vN.json)."""
    from stores.recall import Recaller
    from stores.store import Store
    cache = base / f"pools-{mode}-v{POOL_VERSION}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    convert(Path(locomo_json), base / "lc", dated=True)      # the store knows each session's date
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
            p = pool(rc, q["query"], mode, None, lambda t, ev=ev: any(e in norm(t) for e in ev))
            conv = q["id"].rsplit("-", 1)[0]
            out.append({"id": q["id"], "group": f"lc:{conv}:c{q['category']}", "wanted": len(ev), **p})
    needle_dir = base / "needles"
    needle_dir.mkdir(exist_ok=True)
    needle_store, nqueries = _needle_queries(needle_dir, note)
    rn = Recaller(Store(needle_store))
    rn.prepare(mode)
    rn._log = lambda *a, **k: None
    note(f"pools of {len(nqueries)} needle, pushed-context, absent-subject and own-words queries")
    for qid, group, query, is_right, wanted, session in nqueries:
        out.append({"id": qid, "group": group, "wanted": wanted, **pool(rn, query, mode, session, is_right)})
    cache.write_text(json.dumps(out))
    return out


# -- features ----------------------------------------------------------------------


def matrices(queries: list[dict]):
    """Per query: (features of every candidate, in reducers.fusion.FEATURES
    order plus recency), labels, candidates. numpy arrays."""
    import numpy as np

    from reducers.fusion import FEATURES, Candidate, score_all
    from reducers.query_dates import Span
    out = []
    for q in queries:
        cands, ys = [], {}
        for seq, gp, ts, kind, bm25, held, cos, named, chars, y, _asks, traits, window in q["rows"]:
            cands.append(Candidate(seq=seq, gp=gp, ts_ms=ts, kind=kind, bm25=bm25, held=held, cosine=cos,
                                   speaker_key=named, chars=chars, traits=traits, window=window))
            ys[seq] = y
        ranked = score_all(cands, {1}, q["idf"], spans=[Span(*s) for s in q.get("spans", [])], form=q["form"])
        X = np.array([list(c.f) + [c.rec] for c in ranked]) if ranked else np.zeros((0, len(FEATURES) + 1))
        y = np.array([ys[c.seq] for c in ranked], dtype=float)
        out.append((X, y, ranked))
    return out


def _group(q: dict) -> str:
    return q["group"].split(":")[0]


def recall_at(queries: list[dict], mats, weights: dict, k: int = K) -> dict[str, float]:
    """R@k per group (the share of a query's right hits, at most its evidence count, in its top k)."""
    import numpy as np

    from reducers.fusion import FEATURES
    v = np.array([weights.get(f, 0.0) for f in FEATURES] + [weights.get("recency", 0.1)])
    tot: dict[str, float] = {}
    n: dict[str, int] = {}
    for q, (X, y, _) in zip(queries, mats):
        if not q["wanted"]:
            continue
        g = _group(q)
        r = 0.0
        if len(y):
            top = np.argsort(-(X @ v), kind="stable")[:k]
            r = min(y[top].sum(), q["wanted"]) / q["wanted"]
        tot[g] = tot.get(g, 0.0) + r
        n[g] = n.get(g, 0) + 1
    return {g: round(tot[g] / n[g], 4) for g in tot}


def objective(queries, mats, weights) -> float:
    r = recall_at(queries, mats, weights)
    return sum(r.get(g, 0.0) * a for g, a in OBJECTIVE.items())


def fit_listwise(queries, mats, iters: int = 400, lr: float = 0.3, l2: float = 1e-3) -> dict:
    """Softmax listwise fit: maximise each answerable query's probability
    of its right hits under softmax(z) over its pool (Adam, standardised)."""
    import numpy as np

    from reducers.fusion import FEATURES
    data = []
    for q, (X, y, _) in zip(queries, mats):
        g = _group(q)
        if q["wanted"] and g in OBJECTIVE and len(y) and y.sum():
            data.append((X[:, :len(FEATURES)], y > 0, OBJECTIVE[g]))
    sd = np.vstack([d[0] for d in data]).std(0) + 1e-9
    w = np.zeros(len(FEATURES))
    m, v = np.zeros_like(w), np.zeros_like(w)
    for it in range(iters):
        grad, total = np.zeros_like(w), 0.0
        for X, pos, a in data:
            Z = X / sd
            z = Z @ w
            p = np.exp(z - z.max())
            p /= p.sum()
            pp = p[pos].sum()
            grad += a * (p @ Z - (p[pos] / pp) @ Z[pos])
            total += a
        grad = grad / total + l2 * w
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad ** 2
        w -= lr * (m / (1 - 0.9 ** (it + 1))) / (np.sqrt(v / (1 - 0.999 ** (it + 1))) + 1e-8)
    return {f: float(x) for f, x in zip(FEATURES, w / sd)}


def polish(queries, mats, start: dict, rounds: int = 4) -> dict:
    """Coordinate search on the objective: each weight in turn tried at a
    ladder of multiples, kept only where it helps."""
    from reducers.fusion import FEATURES
    w = dict(start)
    best = objective(queries, mats, w)
    for _ in range(rounds):
        improved = False
        for f in FEATURES:
            for factor in (0.0, 0.5, 0.75, 0.9, 1.1, 1.3, 2.0):
                trial = {**w, f: w[f] * factor if w[f] else factor * 0.5}
                o = objective(queries, mats, trial)
                if o > best + 1e-6:
                    w, best, improved = trial, o, True
        if not improved:
            break
    return w


def fit_ranking(queries, mats) -> dict:
    w = fit_listwise(queries, mats)
    w["recency"] = 0.1
    return polish(queries, mats, w)


def _ranked_z(mats, weights):
    import numpy as np

    from reducers.fusion import FEATURES
    v = np.array([weights.get(f, 0.0) for f in FEATURES] + [weights.get("recency", 0.1)])
    out = []
    for X, y, ranked in mats:
        if not len(y):
            out.append((np.zeros(0), np.zeros(0), []))
            continue
        z = X @ v
        order = np.argsort(-z, kind="stable")
        out.append((z[order], y[order], [ranked[i] for i in order]))
    return out


def evidence(q: dict, z, cands) -> dict:
    """A query's evidence for A (calibration.query_features), as recall
    computes it: whether each of the first hits asks a question comes from
    the pool's rows (the first WINDOW when the query names a speaker, else
    the first)."""
    from reducers.calibration import WINDOW, query_features
    asks_at = {row[0]: bool(row[10]) for row in q.get("rows", ())}
    first = cands[:WINDOW if q["names"] else 1]
    return query_features(list(z), [c.f[1] for c in cands], [c.f[3] > 0 for c in cands], q["names"], *q["unknown"],
                          asks=[asks_at.get(c.seq, False) for c in first])


def fit_tau(queries, ranked, answer_w: dict, answer_b: float) -> float:
    """The temperature under which p_hit means what it says: the log loss
    of each of a query's first K hits' p_hit against whether that hit is an
    answer, no-answer queries included."""
    from reducers.calibration import answerable, window_scores
    data = []
    for q, (z, y, cands) in zip(queries, ranked):
        if not len(z):
            continue
        labels = [float(bool(q["wanted"]) and y[i] > 0) for i in range(min(K, len(z)))]
        data.append((list(z), answerable(evidence(q, z, cands), answer_w, answer_b), labels))

    def loss(tau):
        total = 0.0
        for z, a, labels in data:
            _, p_hit = window_scores(z, a, K, tau)
            for p, t in zip(p_hit, labels):
                p = min(max(p, 1e-6), 1 - 1e-6)
                total -= t * math.log(p) + (1 - t) * math.log(1 - p)
        return total
    return min((0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0, 1.25), key=loss)


def evidence_rows(queries, ranked):
    """(features, label) per query: label 1 when an answer is among its first K hits."""
    from reducers.calibration import QUERY_FEATURES
    rows = []
    for q, (z, y, cands) in zip(queries, ranked):
        if not len(z):
            continue
        f = evidence(q, z, cands)
        rows.append(([f[name] for name in QUERY_FEATURES], float(y[:K].sum() > 0) if q["wanted"] else 0.0))
    return rows


def logistic_fit(rows, l2: float = 1e-3, iters: int = 4000) -> tuple[list[float], float]:
    """Plain logistic regression (standardised features, gradient descent), in original units."""
    import numpy as np
    X = np.array([r[0] for r in rows], dtype=np.float64)
    y = np.array([r[1] for r in rows], dtype=np.float64)
    mu, sd = X.mean(0), X.std(0) + 1e-9
    Z = (X - mu) / sd
    w, b = np.zeros(X.shape[1]), 0.0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-(Z @ w + b)))
        w -= Z.T @ (p - y) / len(y) + l2 * w
        b -= float((p - y).mean())
    w_raw = w / sd
    return w_raw.tolist(), float(b - (w_raw * mu).sum())


def fit_answer(queries, ranked) -> tuple[dict, float]:
    """A's weights (by QUERY_FEATURES name) and bias."""
    from reducers.calibration import QUERY_FEATURES
    w, b = logistic_fit(evidence_rows(queries, ranked))
    return dict(zip(QUERY_FEATURES, (round(x, 4) for x in w))), round(b, 4)


def gate_counts(queries, ranked, tau: float, answer_w: dict, answer_b: float, threshold: float = 0.5) -> dict:
    """The --min-score gate's counts per group, as `trace bench locomo`
    counts them: a query passes when a hit of its first K scores at least
    `threshold`; it is right when a passing hit is an answer."""
    from reducers.calibration import answerable, window_scores
    per: dict[str, dict] = {}
    for q, (z, y, cands) in zip(queries, ranked):
        g = "needles" if q["group"] == "absent" else _group(q)
        d = per.setdefault(g, {"right": 0, "passed": 0, "false_pass": 0, "answerable": 0, "found": 0, "no_answer": 0})
        kept = []
        if len(z):
            scores, _ = window_scores(list(z), answerable(evidence(q, z, cands), answer_w, answer_b), K, tau)
            kept = [i for i, s in enumerate(scores) if s >= threshold]
        if q["wanted"]:
            d["answerable"] += 1
            d["found"] += bool(len(y) and y[:K].sum() > 0)
            if kept:
                d["passed"] += 1
                d["right"] += bool(any(y[i] for i in kept))
        else:
            d["no_answer"] += 1
            d["false_pass"] += bool(kept)
    return per


def gate_figures(per: dict) -> dict:
    """Precision, recall (of every answerable query, and of those whose first
    K hits hold an answer) and the share of no-answer queries dropped."""
    return {g: {"precision": round(d["right"] / max(d["passed"] + d["false_pass"], 1), 4),
                "recall": round(d["right"] / max(d["answerable"], 1), 4),
                "recall_of_found": round(d["right"] / d["found"], 4) if d["found"] else None,
                "no_answer_dropped": round(1 - d["false_pass"] / d["no_answer"], 4) if d["no_answer"] else None,
                "answerable": d["answerable"], "no_answer": d["no_answer"]} for g, d in sorted(per.items())}


def gate(queries, ranked, tau: float, answer_w: dict, answer_b: float, threshold: float = 0.5) -> dict:
    """The --min-score gate per group with the given calibration."""
    return gate_figures(gate_counts(queries, ranked, tau, answer_w, answer_b, threshold))


def fold_of(q: dict, folds: list[str]) -> str:
    """The cross-validation fold of a query: its LoCoMo conversation; a
    needle query goes with the needle session it was asked of (one per
    fold), an own-words query by its event's seq."""
    if q["group"].startswith("lc:"):
        return q["group"].split(":")[1]
    parts = q["id"].split("-")
    n = int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else int(parts[-1])
    return folds[n % len(folds)]


def cross_validated_gate(queries, ranked) -> dict:
    """The gate when A and TAU are fitted without the fold they are
    measured on (each LoCoMo conversation, with one needle session, in
    turn): what a held-out set should see."""
    folds = sorted({q["group"].split(":")[1] for q in queries if q["group"].startswith("lc:")})
    if len(folds) < 2:
        return {}
    of = [fold_of(q, folds) for q in queries]
    total: dict[str, dict] = {}
    for fold in folds:
        train = [i for i, f in enumerate(of) if f != fold]
        test = [i for i, f in enumerate(of) if f == fold]
        tq, tr = [queries[i] for i in train], [ranked[i] for i in train]
        w, b = fit_answer(tq, tr)
        tau = fit_tau(tq, tr, w, b)
        per = gate_counts([queries[i] for i in test], [ranked[i] for i in test], tau, w, b)
        for g, d in per.items():
            acc = total.setdefault(g, dict.fromkeys(d, 0))
            for name, v in d.items():
                acc[name] += v
    return gate_figures(total)


def run_fit(locomo_json: str, workdir: str | None, note: Callable[[str], None], mode: str = "hybrid") -> dict:
    from reducers.fusion import WEIGHTS
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="trace-fit-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        queries = collect(locomo_json, base, note, mode)
        mats = matrices(queries)
        note("fitting the ranking on all dev queries, then leaving each LoCoMo conversation out")
        ranking = fit_ranking(queries, mats)
        loco = {}
        for conv in sorted({q["group"].split(":")[1] for q in queries if q["group"].startswith("lc:")}):
            train = [i for i, q in enumerate(queries) if q["group"].split(":")[1:2] != [conv]]
            test = [i for i, q in enumerate(queries) if q["group"].split(":")[1:2] == [conv]]
            w = fit_ranking([queries[i] for i in train], [mats[i] for i in train])
            tq, tm = [queries[i] for i in test], [mats[i] for i in test]
            loco[conv] = {"held_out": recall_at(tq, tm, w).get("lc"), "all_dev": recall_at(tq, tm, ranking).get("lc")}
        fitted = recall_at(queries, mats, ranking)
        if objective(queries, mats, WEIGHTS) >= objective(queries, mats, ranking):
            ranking = {**WEIGHTS}             # the shipped weights rank dev at least as well: calibrate those
        ranked = _ranked_z(mats, ranking)
        note("calibrating on all dev queries, then on each fold left out")
        answer, answer_b = fit_answer(queries, ranked)
        tau = fit_tau(queries, ranked, answer, answer_b)
        return {"weights": {f: round(v, 4) for f, v in ranking.items()},
                "tau": tau, "answer_weights": answer, "answer_bias": answer_b,
                "dev_recall_at_10_current": recall_at(queries, mats, WEIGHTS),
                "dev_recall_at_10_fitted": fitted,
                "leave_one_conversation_out": loco,
                "gate_at_0.5": gate(queries, ranked, tau, answer, answer_b),
                "gate_at_0.5_cross_validated": cross_validated_gate(queries, ranked)}
    finally:
        if not workdir:
            shutil.rmtree(base, ignore_errors=True)
