"""Recall: exact needles come back by their subject, two-hop chains by
following identifiers, every hit carries scores to gate on, and no query
string can break it."""
from __future__ import annotations

import os

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stores.recall import Recaller, RecallQuery
from stores.store import Store
from trace_cli.bench.needles import build_session
from tests.helpers import REPEATED_ERROR, cli, openai_conversations, repeated_error_recaller


@pytest.fixture(scope="module")
def needle_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("needles")
    session = build_session(turns=600, needles=36, chains=12, flood_words=80, seed=11)
    session.write_openai(root / "session.jsonl")
    store = Store(root / "store")
    (result,) = store.ingest([str(root / "session.jsonl")])
    assert result.added == 600 * 4
    recaller = Recaller(store)
    recaller.prepare("hybrid")
    return store, recaller, session


def test_every_exact_needle_comes_back_in_the_top_10_by_its_subject(needle_store):
    _, recaller, session = needle_store
    for needle in session.needles:
        assert needle.value not in needle.query
        hits = recaller.recall(RecallQuery(query=needle.query, k=10))
        assert any(needle.value in h.text for h in hits), (needle.kind, needle.query)


def test_a_hit_on_a_long_tool_output_shows_the_part_that_matched(tmp_path):
    """Output over the artifact threshold is logged as a head/tail preview;
    a hit on it carries the window that matched in place of the cut, so a
    script or an injected block sees the needle. The log is unchanged."""
    session = build_session(turns=40, needles=4, flood_words=40, seed=5, long_output_words=3000)
    session.write_openai(tmp_path / "long.jsonl")
    store = Store(tmp_path / "store")
    list(store.ingest([str(tmp_path / "long.jsonl")]))
    for needle in session.needles:
        hit = next(h for h in store.recall(needle.query, k=10, mode="fulltext").hits if needle.value in h.snippet)
        assert hit.kind == "tool_result" and needle.value in hit.text
        (logged,) = store.show(str(hit.seq)).events
        assert logged.get("artifact") and needle.value not in logged["text"]
        assert needle.value in store.show(str(hit.seq), full=True).events[0]["text"]


@pytest.mark.parametrize("mode", ["fulltext", "hybrid"])
def test_needles_are_found_in_fulltext_mode_too(needle_store, mode):
    _, recaller, session = needle_store
    found = sum(any(n.value in h.text for h in recaller.recall(RecallQuery(query=n.query, k=10, mode=mode)))
                for n in session.needles)
    assert found == len(session.needles)


def test_two_hop_chains_bring_back_both_events(needle_store):
    _, recaller, session = needle_store
    both = {1: 0, 2: 0}
    for chain in session.chains:
        seen_by_hop1 = False
        for hops in (1, 2):
            hits = recaller.recall(RecallQuery(query=chain.query, k=10, hops=hops))
            first = any(chain.path in h.text and "private key" in h.text for h in hits)
            second = [h for h in hits if chain.checksum in h.text]
            both[hops] += bool(first and second)
            if hops == 1:
                seen_by_hop1 = bool(second)
            elif second and not seen_by_hop1:
                assert second[0].hop == 2            # found by following the path, and says so
    assert both[2] / len(session.chains) >= 0.9
    assert both[2] > both[1]                      # the second hop is what finds them


def test_hits_carry_every_score_and_are_gated_by_min_score(needle_store):
    _, recaller, session = needle_store
    hits = recaller.recall(RecallQuery(query=session.needles[0].query, k=5))
    for h in hits:
        assert {"fulltext", "vector", "recency", "task", "bm25", "coverage", "speaker", "logit"} <= set(h.scores)
        assert 0 < h.score < 1 and h.rank >= 1 and h.event_id and h.snippet
    # Hits come in the order of the score they print.
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    strong = hits[0].score
    gated = recaller.recall(RecallQuery(query=session.needles[0].query, k=5, min_score=strong * 0.99))
    assert gated and all(h.score >= strong * 0.99 for h in gated)
    assert recaller.recall(RecallQuery(query=session.needles[0].query, k=5, min_score=min(strong * 1.01, 1.0))) == []


def test_an_exact_string_returns_every_occurrence_newest_first(tmp_path):
    rc, error = repeated_error_recaller(tmp_path), REPEATED_ERROR
    hits = rc.recall(RecallQuery(query=error, k=15))
    holding = [h for h in hits if error in h.text]
    assert len(holding) == 13 and hits[:13] == holding          # all 13, ahead of anything else
    assert [h.seq for h in holding] == sorted((h.seq for h in holding), reverse=True)     # newest first
    assert all(h.scores.get("exact") for h in holding)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


@pytest.mark.parametrize("error", ["Could not connect to server: Connection refused",
                                   "can't open file 'settings.toml': No such file",
                                   "does not exist in the current schema"])
def test_an_error_text_that_opens_with_a_negated_auxiliary_is_an_exact_string(tmp_path, error):
    """"Could not ...", "can't ...", "does not ..." read as statements, not
    questions: every occurrence comes back, newest first."""
    hits = repeated_error_recaller(tmp_path, error).recall(RecallQuery(query=error, k=15))
    holding = [h for h in hits if error in h.text]
    assert len(holding) == 13 and hits[:13] == holding and all(h.scores.get("exact") for h in holding)
    assert [h.seq for h in holding] == sorted((h.seq for h in holding), reverse=True)


def test_long_outputs_that_hold_an_error_text_s_words_but_not_the_text_are_not_its_occurrences(tmp_path):
    """30 newer long outputs (artifact-backed) hold every word of the error
    scattered; 5 older events hold the error itself: those 5 are the exact
    occurrences, and no long output is taken for one."""
    import random
    from trace_cli.bench.needles import build_session, flood
    rng, error = random.Random(3), "could not connect to server: Connection refused"
    session = build_session(turns=120, needles=0, seed=8)
    results = [4 * t + 2 for t in range(120)]
    for t in results[5:10]:
        session.messages[t]["content"] += f"\n{error}"
    for t in results[40:70]:
        session.messages[t]["content"] = (f"could {flood(rng, 900)} server not {flood(rng, 900)} connect to "
                                          f"refused {flood(rng, 900)} connection")
    session.write_openai(tmp_path / "s.jsonl")
    store = Store(tmp_path / "store")
    list(store.ingest([str(tmp_path / "s.jsonl")]))
    assert store.show(str(results[40] + 1)).events[0].get("artifact")          # the long outputs are artifacts
    hits = store.recall(error, k=10).hits
    exact = [h for h in hits if h.scores.get("exact")]
    assert len(exact) == 5 and all(error in h.text for h in exact) and hits[:5] == exact


def test_a_question_that_opens_with_an_auxiliary_is_not_an_exact_string():
    from stores.recall.exact import looks_exact
    assert not looks_exact("could you check the build logs")
    assert not looks_exact("does the proxy retry on 502")
    assert looks_exact("does not retry on 502")


def test_filters_run_inside_the_index(needle_store):
    store, recaller, session = needle_store
    q = session.needles[3].query
    only_results = recaller.recall(RecallQuery(query=q, k=10, kinds=["tool_result"]))
    assert only_results and all(h.kind == "tool_result" for h in only_results)
    elsewhere = recaller.recall(RecallQuery(query=q, k=10, session="no-such-session"))
    assert elsewhere == []
    future = recaller.recall(RecallQuery(query=q, k=10, since="2999-01-01"))
    assert future == []


def test_every_recall_is_appended_to_the_retrieval_log(needle_store):
    store, recaller, session = needle_store
    log = store.dir / "retrievals.jsonl"
    before = log.read_bytes().count(b"\n") if log.exists() else 0     # other tests may have recalled first
    recaller.recall(RecallQuery(query="which port", k=3, query_id="q-log"))
    rows = (store.dir / "retrievals.jsonl").read_bytes().splitlines()
    assert len(rows) == before + 1
    row = orjson.loads(rows[-1])
    assert row["query_id"] == "q-log" and len(row["results"]) <= 3 and row["latency_ms"] > 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(min_size=1, max_size=300))
def test_no_query_string_raises(needle_store, query):
    _, recaller, _ = needle_store
    q = RecallQuery(query=query, k=3)
    try:
        q.validate()
    except Exception as exc:             # only the documented errors: blank, or nothing to search for
        from stores.recall.query import searchable
        assert ("empty query" in str(exc) and not query.strip()) or (
            "only stop words or punctuation" in str(exc) and not searchable(query))
        return
    for mode in ("fulltext", "hybrid"):
        q.mode = mode
        recaller.recall(q)
    for hops in (2,):
        q.hops = hops
        recaller.recall(q)


@pytest.mark.parametrize("query", ['"unbalanced', "a:b:c", "path/to/(file)", "title:foo AND OR NOT", "(((", "^~*?\\",
                                   "sha256:5be1c0a4", "-", "+"])
def test_query_syntax_characters_are_just_text(needle_store, query):
    _, recaller, _ = needle_store
    recaller.recall(RecallQuery(query=query, k=3))


def test_cli_usage_errors(tmp_path):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 1)))
    assert cli("recall", "").code == 2
    assert cli("recall", "   ").code == 2
    bad_kind = cli("recall", "x", "--kind", "wizard")
    assert bad_kind.code == 2 and "tool_result" in bad_kind.err
    assert cli("recall", "x", "--mode", "telepathy").code == 2
    assert cli("recall", "x", "--since", "last tuesday").code == 2
    long = cli("recall", "config " * 3000)
    assert long.code == 0 and "searching its first 2000" in long.err
    assert cli("recall", "x", "--min-score", "1.5").code == 2


@pytest.mark.parametrize("query", ["the of and to", "?!...", "what is it", "** ,, --", "?!... ---", "=== ###",
                                   "the ---", "#::"])
def test_a_query_of_only_stop_words_or_punctuation_is_a_clear_note_and_exit_3(tmp_path, query):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 1)))
    run = cli("recall", query)
    assert run.code == 3 and run.out == "" and "only stop words or punctuation" in run.err


def test_a_query_over_10000_characters_searches_its_first_2000(tmp_path):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 1)))
    query = RecallQuery(query="config " + "z" * 12_000)
    assert "searching its first 2000" in query.validate()[0] and len(query.query) == 2000


def test_min_score_exits_3_when_nothing_clears_it(tmp_path):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 2)))
    assert cli("recall", "config", "--min-score", "0.0001").code == 0
    run = cli("recall", "config", "--min-score", "0.9999")
    assert run.code == 3 and run.out == ""


def test_batch_mode_answers_every_query_with_its_id(tmp_path):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 3, prefix="batch")))
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "one", "query": "where is config_0_1.yaml"}\n'
                       'not json\n'
                       '{"id": "two", "query": "question 2", "k": 2, "kind": "user"}\n')
    run = cli("recall", "--queries", str(queries))
    hits = run.lines()
    assert {h["query_id"] for h in hits} == {"one", "two"}
    assert len([h for h in hits if h["query_id"] == "two"]) <= 2
    assert all(h["kind"] == "user" for h in hits if h["query_id"] == "two")
    assert f"{queries}: line 2:" in run.err
    assert run.code == 1                                   # a malformed line is an error, once the rest is answered


def test_batch_mode_exits_3_when_no_query_gets_a_hit(tmp_path):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 2)))
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "a", "query": "zebra quagga", "mode": "fulltext"}\n{"id": "b", "query": "config", "since": "2000-01-01", '
                       '"until": "2000-01-02"}\n')
    run = cli("recall", "--queries", str(queries))
    assert run.code == 3 and run.out == "" and "line 1: no hits" in run.err and "line 2: no hits" in run.err
    queries.write_text('{"id": "a", "query": "config"}\n')
    assert cli("recall", "--queries", str(queries)).code == 0


def test_a_recall_that_finds_nothing_says_so_and_exits_3(tmp_path):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 2)))
    run = cli("recall", "zebra quagga", "--mode", "fulltext")      # (in hybrid mode vectors always have a nearest)
    assert run.code == 3 and run.out == "" and "no hits" in run.err
    run = cli("recall", "config", "--kind", "note")
    assert run.code == 3 and "widen --kind" in run.err


def test_budgets_must_be_positive(tmp_path):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 2)))
    for budget in ("-5", "0"):
        run = cli("recall", "config", "--block", "--budget", budget)
        assert run.code == 2 and "--budget" in run.err
    assert cli("recall", "config", "--block", "--window", "0").code == 2


def test_a_block_too_small_for_any_hit_says_why(tmp_path):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 5, turns=4, tool_every=1)))
    run = cli("recall", "where is config", "--block", "--budget", "20")
    assert run.code == 3 and run.out == "" and "raise --budget" in run.err


def test_session_filter_takes_a_unique_prefix(tmp_path):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 3, prefix="pfx")))
    sessions = sorted({h["session_id"] for h in cli("recall", "config", "-k", "50").lines()})
    target = sessions[0]
    prefix = next(target[:n] for n in range(1, len(target) + 1)
                  if sum(s.startswith(target[:n]) for s in sessions) == 1)
    hits = cli("recall", "config", "--session", prefix).lines()
    assert hits and {h["session_id"] for h in hits} == {target}
    assert cli("recall", "config", "--session", "no-such-session").code == 1
    common = os.path.commonprefix(sessions)                 # ids are "<file stem>-<hash>": "a-" fits all three
    assert len(common) >= 2
    run = cli("recall", "config", "--session", common)
    assert run.code == 1 and "ambiguous" in run.err and all(s in run.err for s in sessions)


def test_recalled_context_block_stays_within_its_cap(tmp_path):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 5, turns=4, tool_every=1)))
    from reducers.tokens import count_tokens
    for budget in (60, 200, 1000):
        run = cli("recall", "where is config", "--block", "--budget", str(budget))
        block = run.out
        assert count_tokens(block.rstrip("\n")) <= budget
        if block.strip():
            assert block.startswith('<recalled-context source="trace">') and "<detail>" in block
        else:
            assert run.code == 3 and "raise --budget" in run.err            # never a silent nothing
    windowed = cli("recall", "where is config", "--block", "--budget", "4000", "--window", "800").out
    assert count_tokens(windowed.rstrip("\n")) <= 80


def test_block_with_json_is_one_json_object_holding_the_block_and_its_hits(tmp_path):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 5, turns=4, tool_every=1)))
    from reducers.tokens import count_tokens
    text = cli("recall", "where is config", "--block", "--budget", "300").out     # piped without --json: the text
    run = cli("recall", "where is config", "--block", "--json", "--budget", "300")
    assert run.code == 0 and len(run.lines()) == 1
    found = run.lines()[0]
    assert found["block"] + "\n" == text and found["tokens"] == count_tokens(found["block"]) <= found["budget"] == 300
    every = {h["event_id"]: h for h in cli("recall", "where is config").lines()}
    assert found["hits"] and all(every[h["event_id"]] == h for h in found["hits"])
    assert all(f"#{h['seq']}]" in found["block"] for h in found["hits"] if h["kind"] not in ("note", "task_state"))
    assert len(found["hits"]) < len(every)          # 300 tokens hold some of the ten, and it says which
    batch = tmp_path / "q.jsonl"
    batch.write_text('{"query": "where is config"}\n')
    refused = cli("recall", "--queries", str(batch), "--block")          # not silently ignored
    assert refused.code == 2 and refused.out == "" and "--block packs the hits of one QUERY" in refused.err


def test_a_deleted_index_is_rebuilt_with_a_note(tmp_path, trace_home):
    import shutil
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 2)))
    shutil.rmtree(trace_home / "fulltext")
    run = cli("recall", "config", "-k", "3")
    assert run.code == 0 and run.lines() and "rebuilding" in run.err
    assert cli("verify").code == 0


def test_a_corrupt_index_is_rebuilt(tmp_path, trace_home):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 2)))
    for f in (trace_home / "fulltext").glob("*.term"):
        f.write_bytes(b"garbage")
    (trace_home / "fulltext" / "meta.json").write_text("{not json")
    run = cli("recall", "config", "-k", "3")
    assert run.code == 0 and run.lines()


def test_a_store_copied_without_its_file_times_is_not_rebuilt(tmp_path, trace_home):
    import shutil
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 3)))
    before = cli("recall", "config", "-k", "3").lines()
    copy = tmp_path / "copy"
    shutil.copytree(trace_home, copy, copy_function=shutil.copyfile)      # cp -r: new mtimes, same bytes
    run = cli("--store", str(copy), "recall", "config", "-k", "3")
    assert run.code == 0 and run.err == "" and run.lines() == before      # no "changed after it was written"
    assert cli("--store", str(copy), "recall", "config", "-k", "3").err == ""
    assert cli("--store", str(copy), "verify").code == 0


def test_an_index_file_rewritten_to_the_same_size_is_still_damage(tmp_path, trace_home):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 3)))
    term = next((trace_home / "fulltext").glob("*.term"))
    term.write_bytes(bytes(len(term.read_bytes())))                       # same size, new mtime, other bytes
    run = cli("recall", "config", "-k", "3")
    assert run.code == 0 and run.lines() and "changed after it was written" in run.err


def test_deferred_embedding_is_caught_up_by_recall_and_reported_when_not(tmp_path, trace_home):
    cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "a.jsonl", 3)))
    status = Store(trace_home).index_status()
    assert status["fulltext_seq"] == status["log_seq"] and status["vector_seq"] < status["log_seq"]
    hits = cli("recall", "config", "-k", "2").lines()
    assert hits and "vector_lag" not in hits[0]
    status = Store(trace_home).index_status()
    assert status["vector_seq"] == status["log_seq"]


def test_changing_the_embedder_rebuilds_the_vectors_never_mixes(tmp_path, trace_home):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 2)))
    assert Store(trace_home).index_status()["embedder"] == "wordllama"
    run = cli("index", "--embedder", "hash")
    assert run.code == 0 and "rebuilding" in run.err
    status = Store(trace_home).index_status()
    assert status["embedder"] == "hash" and status["dim"] == 256 and status["vector_seq"] == status["log_seq"]
    assert cli("index", "--embedder", "nonsense").code == 2


def test_wordllama_vectors_equal_the_packages_own():
    import importlib.util
    import os

    import numpy as np
    if importlib.util.find_spec("wordllama") is None:
        pytest.skip("wordllama not installed")
    from wordllama import WordLlama

    import wordllama
    from stores.index.embedders import WordLlamaEmbedder
    texts = ["docker build failed on the ssl cert", "where is the payments config?", "ok"]
    ours = WordLlamaEmbedder(256).embed(texts)
    theirs = WordLlama.load(cache_dir=os.path.dirname(wordllama.__file__), disable_download=True).embed(texts)
    theirs = theirs / np.linalg.norm(theirs, axis=1, keepdims=True)
    assert np.allclose(ours, theirs, atol=1e-5)


def test_query_tokens_in_python_equal_the_rust_tokenizers():
    """A cold recall tokenizes its query in Python (reducers/bpe.py); the
    ids, and so the vector, must be the ones ingest's tokenizer gives."""
    import importlib.util

    import numpy as np
    if importlib.util.find_spec("wordllama") is None:
        pytest.skip("wordllama not installed")
    from reducers.bpe import bpe_ids
    from stores.index.embedders import WordLlamaEmbedder
    emb = WordLlamaEmbedder(128)
    texts = ["which port does payroll-sync listen on?", "  two  spaces\tand a tab\nnew line",
             "Ünïcödé naïve café — “quotes” 🚀 emoji and 漢字", "E_PAYROLL_SYNC_4242 at /srv/app/conf/main-123.yaml",
             "What did Caroline realize after her charity race?", "a", "", "x" * 300, "ab" * 400]
    probe = emb.embed_query("warm up")            # loads the merge table
    assert probe.shape == (128,)
    for text in texts:
        rust = emb.tokenizer.encode(text, add_special_tokens=False).ids
        assert bpe_ids(text, *emb._bpe) == rust, text
        if text.strip():
            assert np.allclose(emb.embed_query(text), emb.embed([text])[0], atol=1e-6)


def _dialogue_store(root, asker: str, answerer: str) -> Recaller:
    filler = ["Ana: The weather was lovely at the lake this weekend.", "Ben: I spent Sunday repairing my old bike.",
              "Ana: My sister visited and we baked bread together.", "Ben: Work has been busy with the new project."]
    lines = filler + [f"{asker}: Wow, your new hair looks amazing! Why did you choose cobalt blue for your hair?",
                      f"{answerer}: I chose cobalt blue for my hair because it matches the logo of my band.",
                      f"{asker}: That is so cool, it really suits you."] + filler[::-1]
    messages = [{"role": "user" if line.startswith("Ana") else "assistant", "content": line} for line in lines]
    root.mkdir()
    (root / "talk.jsonl").write_text(orjson.dumps({"messages": messages}).decode() + "\n")
    store = Store(root / "store")
    list(store.ingest([str(root / "talk.jsonl")], format="openai"))
    recaller = Recaller(store)
    recaller.prepare("hybrid")
    return recaller


def test_a_question_crediting_the_asker_with_the_answer_scores_below_the_same_question_answered(tmp_path):
    # The same words; only who says what differs. Where Ana asks and Ben
    # answers, "Why did Ana choose ..." finds its words in Ana's own
    # question and Ben's answer: it has no answer.
    query = RecallQuery(query="Why did Ana choose cobalt blue for her hair?", k=5)
    answered = _dialogue_store(tmp_path / "answered", asker="Ben", answerer="Ana").recall(query)
    credited = _dialogue_store(tmp_path / "credited", asker="Ana", answerer="Ben").recall(query)
    assert any("Ana: I chose cobalt" in h.text for h in answered[:2])
    assert credited[0].score < answered[0].score


def test_a_candidate_carries_every_number_of_its_index_hit():
    # _candidate builds Candidates positionally (the cheap call): each field
    # must land where its name says, whatever order Candidate declares.
    from stores.index.fulltext_search import FulltextHit
    from stores.recall.recaller import _candidate
    h = FulltextHit(seq=11, score=2.5, segment=3, offset=4096, gp=7 << 32 | 5, kind="tool_result", ts_ms=1_700_000_000_000,
                    speaker_key=99, chars=321)
    c = _candidate(h, 2)
    assert (c.seq, c.bm25, c.segment, c.offset, c.gp, c.kind, c.ts_ms, c.speaker_key, c.chars, c.hop) == \
        (11, 2.5, 3, 4096, 7 << 32 | 5, "tool_result", 1_700_000_000_000, 99, 321, 2)
    assert (c.held, c.cosine, c.task, c.measured) == (0.0, None, 1.0, False)
