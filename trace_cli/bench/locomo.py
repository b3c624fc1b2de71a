"""LoCoMo retrieval, measured the way memory systems publish it.

`convert` reads LoCoMo conversations (the JSON the dataset ships) into
what TRACE ingests: one OpenAI-layout `{"messages": [...]}` line per
session, each turn's text "Speaker: words" (an image's caption appended as
"[shares an image: …]"), exactly as ../shared/tools/locomo_to_chat.py
writes them, so its scorer applies; optionally (`dated`) each message
carries its session's date as a timestamp, which the shared converter
leaves out. Questions of categories 1-4 go to questions.jsonl with their
evidence turns' texts; category 5 (adversarial: the conversation does not
say) to no_answer.jsonl, for the score gate.

`score` computes, per category and overall, from hits in rank order:
- turn R@K: the share of a question's evidence turns in its top K hits
  (what ../shared/tools/score_locomo.py prints);
- turn recall_all@K: 1 when every evidence turn is in the top K;
- session recall_any@K / recall_all@K: sessions ranked by their best hit,
  the first K distinct sessions against the sessions holding the evidence
  (how session-level systems report LoCoMo and LongMemEval);
- session recall_any over the sessions of the top K hits alone (stricter)."""
from __future__ import annotations

import json
import re
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def session_date(text: str | None) -> datetime | None:
    """LoCoMo's "1:56 pm on 8 May, 2023" -> a UTC datetime."""
    if not text:
        return None
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    return None


def _evidence_ids(evidence: list[str]) -> list[str]:
    out = []
    for e in evidence:
        for part in re.split(r"[;, ]+", e):
            m = _EVIDENCE.match(part)
            if m:
                out.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return out


def convert(locomo_json: Path, out_dir: Path, dated: bool = False) -> dict:
    """Write sessions.jsonl, questions.jsonl and no_answer.jsonl; returns counts."""
    data = json.loads(Path(locomo_json).read_text())
    out_dir.mkdir(parents=True, exist_ok=True)
    counts = {"sessions": 0, "questions": 0, "no_answer": 0}
    with open(out_dir / "sessions.jsonl", "w") as fs, open(out_dir / "questions.jsonl", "w") as fq, \
            open(out_dir / "no_answer.jsonl", "w") as fn:
        for conv_rec in data:
            conv = conv_rec["conversation"]
            first = conv["speaker_a"]
            texts: dict[str, str] = {}
            numbers = sorted(int(m.group(1)) for key in conv if (m := re.match(r"session_(\d+)$", key))
                             and isinstance(conv[key], list))
            for n in numbers:
                when = session_date(conv.get(f"session_{n}_date_time")) if dated else None
                messages = []
                for i, turn in enumerate(conv[f"session_{n}"]):
                    text = f"{turn['speaker']}: {turn['text']}"
                    if turn.get("blip_caption"):
                        text += f" [shares an image: {turn['blip_caption']}]"
                    s, t = turn["dia_id"][1:].split(":")
                    texts[f"D{int(s)}:{int(t)}"] = text
                    msg = {"role": "user" if turn["speaker"] == first else "assistant", "content": text}
                    if when is not None:
                        msg["timestamp"] = (when + timedelta(seconds=30 * i)).isoformat().replace("+00:00", "Z")
                    messages.append(msg)
                fs.write(json.dumps({"messages": messages}) + "\n")
                counts["sessions"] += 1
            for i, qa in enumerate(conv_rec["qa"]):
                evidence = [texts[e] for e in _evidence_ids(qa.get("evidence", [])) if e in texts]
                row = {"id": f"{conv_rec['sample_id']}-{i}", "query": qa["question"], "category": qa["category"]}
                if qa["category"] == 5:
                    fn.write(json.dumps(row) + "\n")
                    counts["no_answer"] += 1
                elif evidence:
                    fq.write(json.dumps({**row, "evidence": evidence}) + "\n")
                    counts["questions"] += 1
    return counts


def score(questions: list[dict], hits: dict[str, list[dict]], k: int,
          sessions_of_text: dict[str, set[str]]) -> dict:
    """Metrics per category and "all" (see the module docstring). `hits`
    maps a question id to its hits (dicts with rank, text, session_id);
    `sessions_of_text` maps a normalised event text to its sessions."""
    per: dict = defaultdict(lambda: defaultdict(list))
    for q in questions:
        ranked = sorted(hits.get(str(q["id"]), []), key=lambda h: h.get("rank", 0))
        top = [norm(h.get("text") or "") for h in ranked[:k]]
        evidence = [norm(e) for e in q["evidence"]]
        found = [any(e in t for t in top) for e in evidence]
        wanted = {s for e in evidence for s in holding(e, sessions_of_text)}
        by_best: list[str] = []
        for h in ranked:
            if h["session_id"] not in by_best:
                by_best.append(h["session_id"])
        first_k = set(by_best[:k])
        of_top = {h["session_id"] for h in ranked[:k]}
        m = {"turn_R": sum(found) / len(found), "turn_all": float(all(found)),
             "session_any": float(bool(wanted & first_k)), "session_all": float(bool(wanted) and wanted <= first_k),
             "session_any_topk_turns": float(bool(wanted & of_top))}
        for cat in (f"c{q['category']}", "all"):
            for name, value in m.items():
                per[cat][name].append(value)
    return {cat: {**{name: round(sum(v) / len(v), 4) for name, v in ms.items()}, "questions": len(ms["turn_R"])}
            for cat, ms in sorted(per.items())}


def holding(evidence: str, of_text: dict) -> list:
    """What `of_text` (a normalised event text -> its sessions, or its
    seqs) holds for the events whose text is the evidence turn's, else for
    every event whose text contains it."""
    found = of_text.get(evidence)
    if found:
        return list(found)
    return [x for text, xs in of_text.items() if evidence in text for x in xs]


def gate(answerable: list[tuple[list[dict], list[str]]], no_answer: list[list[dict]], threshold: float) -> dict:
    """How a `--min-score threshold` gate does on each query's first K hits:
    a query passes when a hit scores at or above it. Precision: of the
    queries that pass, the share whose passing hits hold a right answer;
    recall: of the answerable queries, the share that pass with a right
    answer among the passing hits (recall_of_found: the same of those whose
    first K hits hold one, which is all a gate can keep); no_answer_dropped:
    the share of no-answer queries with no passing hit."""
    right = passed = found = 0
    for hits, evidence in answerable:
        evidence = [norm(e) for e in evidence]
        texts = [(norm(h.get("text") or ""), h["score"] >= threshold) for h in hits]
        found += any(e in t for e in evidence for t, _ in texts)
        kept = [t for t, keep in texts if keep]
        if kept:
            passed += 1
            right += any(e in t for e in evidence for t in kept)
    false_pass = sum(1 for hits in no_answer if any(h["score"] >= threshold for h in hits))
    total_passed = passed + false_pass
    return {"threshold": threshold, "precision": round(right / total_passed, 4) if total_passed else None,
            "recall": round(right / len(answerable), 4) if answerable else None,
            "recall_of_found": round(right / found, 4) if found else None,
            "no_answer_dropped": round(1 - false_pass / len(no_answer), 4) if no_answer else None,
            "answerable": len(answerable), "no_answer": len(no_answer)}


def run_locomo_bench(locomo_json: str, workdir: str | None, k: int, mode: str, hops: int, dated: bool,
                     note, rerank: bool = False, misses_out: str | None = None) -> list[dict]:
    """Convert, ingest into one store, recall every question (and every
    no-answer query) in one process, and score: one row per category, then
    the --min-score 0.5 gate; with `misses_out`, where each missed evidence
    turn ranked (trace_cli/bench/locomo_misses.py), its counts as rows
    before the gate's."""
    import shutil
    import tempfile

    from stores.recall import Recaller, RecallQuery
    from stores.log.segments import iter_events
    from stores.store import Store
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="trace-bench-locomo-"))
    try:
        counts = convert(Path(locomo_json), base / "lc", dated=dated)
        note(f"{counts['sessions']} sessions, {counts['questions']} questions, {counts['no_answer']} no-answer")
        store = Store(base / "store")
        if not store.segments_dir.exists():
            list(store.ingest([str(base / "lc" / "sessions.jsonl")], format="openai"))
        sessions_of_text: dict[str, set[str]] = defaultdict(set)
        seqs_of_text: dict[str, list[int]] = defaultdict(list)
        for e in iter_events(store.segments_dir):
            sessions_of_text[norm(e.get("text") or "")].add(e["session_id"])
            seqs_of_text[norm(e.get("text") or "")].append(e["seq"])
        rc = Recaller(store)
        rc.prepare(mode)
        questions = [json.loads(line) for line in open(base / "lc" / "questions.jsonl")]
        no_answer = [json.loads(line) for line in open(base / "lc" / "no_answer.jsonl")]
        deep = max(k, 50)                      # session metrics rank sessions by their best hit

        def ask(q):
            return [h.as_json() for h in rc.recall(RecallQuery(query=q["query"], k=deep, mode=mode, hops=hops,
                                                               query_id=str(q["id"]), rerank=rerank))]
        note(f"recalling {len(questions)} questions")
        hits = {str(q["id"]): ask(q) for q in questions}
        note(f"recalling {len(no_answer)} no-answer queries")
        silent = [ask(q)[:k] for q in no_answer]
        metrics = score(questions, hits, k, sessions_of_text)
        rows = [{"bench": "locomo", "category": cat, "k": k, "mode": mode, "hops": hops, "rerank": rerank, **m}
                for cat, m in metrics.items()]
        if misses_out:
            from trace_cli.bench.locomo_misses import misses
            note(f"where the missed evidence turns rank: {misses_out}")
            rows += misses(rc, questions, hits, k, mode, seqs_of_text, Path(misses_out))
        answerable = [(hits[str(q["id"])][:k], q["evidence"]) for q in questions]
        rows.append({"bench": "locomo-gate", **gate(answerable, silent, 0.5)})
        return rows
    finally:
        if not workdir:
            shutil.rmtree(base, ignore_errors=True)
