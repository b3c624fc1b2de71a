"""The full-text index at scale: in a big store, terms found in a large
share of events only add to the scores of events that match a rarer query
term, and a query of common terms alone still runs in full."""
from __future__ import annotations

import json

import pytest

import stores.index.fulltext as fulltext
import stores.index.fulltext_search as fulltext_search
import stores.index.fulltext_documents as fulltext_documents
from stores.store import Store


@pytest.fixture()
def store(tmp_path):
    msgs = []
    for i in range(40):
        text = f"ran the test suite again, round {i}"          # 'test' is in every event
        if i in (7, 23):
            text += " and the zebra migration passed the test"
        if i == 30:
            text = "zebra crossing noted"                       # rare term only
        msgs.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
    (tmp_path / "s.jsonl").write_text(json.dumps({"messages": msgs}) + "\n")
    s = Store(tmp_path / "store")
    list(s.ingest([str(tmp_path / "s.jsonl")]))
    return s


def _search(store, words, monkeypatch, split: bool):
    monkeypatch.setattr(fulltext_search, "COMMON_MIN_DOCS", 0 if split else 10**9)
    monkeypatch.setattr(fulltext_search, "COMMON_SHARE", 0.5)
    ft = fulltext.FulltextIndex(store.dir)
    try:
        return {h.seq: h.score for h in ft.search(words, [], limit=100)}
    finally:
        ft.close()


def test_rare_terms_choose_the_candidates_and_common_terms_keep_their_share_of_the_score(store, monkeypatch):
    full = _search(store, ["zebra", "test"], monkeypatch, split=False)
    split = _search(store, ["zebra", "test"], monkeypatch, split=True)
    assert len(full) == 40                      # every event says 'test'
    assert 3 <= len(split) < 40                 # only events near a zebra (body or ctx) are candidates
    for seq, score in split.items():              # common terms still count (their ctx share aside)
        assert full[seq] * 0.9 <= score <= full[seq] + 1e-6
    ranked = sorted(full, key=lambda s: -full[s])
    assert set(ranked[:len(split)]) == set(split)   # what it leaves out ranked below all it keeps


def test_a_query_of_common_terms_alone_runs_in_full(store, monkeypatch):
    assert len(_search(store, ["test", "suite"], monkeypatch, split=True)) == 40


def test_event_times_become_exact_epoch_milliseconds():
    from datetime import datetime, timezone
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    for ts in ("2025-09-03T00:52:31.217Z", "2004-05-20T21:32:18.393Z", "1999-12-31T23:59:59.999Z"):
        d = datetime.fromisoformat(ts.replace("Z", "+00:00"))
        assert fulltext_documents.ts_millis(ts) == int((d - epoch).total_seconds()) * 1000 + d.microsecond // 1000
    assert fulltext_documents.ts_millis("2025-09-03T00:52:31+02:00") == fulltext_documents.ts_millis("2025-09-02T22:52:31.000Z")
    for bad in ("", None, "2025-09-03T00:52:61.217Z", "2025-09-03T00:52:3a.217Z", "not a time"):
        assert fulltext_documents.ts_millis(bad) == 0


def _indexed(tmp_path, texts: list[str]) -> fulltext.FulltextIndex:
    """The full-text index of one session of these turns (user and assistant by turns)."""
    msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]
    (tmp_path / "s.jsonl").write_text(json.dumps({"messages": msgs}) + "\n")
    s = Store(tmp_path / "store")
    list(s.ingest([str(tmp_path / "s.jsonl")]))
    return fulltext.FulltextIndex(s.dir)


def test_a_query_word_finds_the_spellings_that_share_its_stem(tmp_path, monkeypatch):
    ft = _indexed(tmp_path, ["the deployments stopped at noon", "studied the logs: nothing unusual",
                             "a deploy token was rotated", "an unrelated remark about lunch"])
    try:
        # (ctx_boost 0: neighbours' text matches with score 0; only the event's own text counts)
        found = lambda words: {h.seq for h in ft.search(words, [], limit=10, ctx_boost=0.0) if h.score > 0}
        assert found(["deploying"]) == {1, 3}          # deployments, deploy
        assert found(["stopping"]) == {1}              # stopped
        assert found(["studies"]) == {2}               # studied
        assert found(["noon", "lunch"]) == {1, 4}      # as written
        one = {h.seq: round(h.score, 5) for h in ft.search(["deployments"], [], limit=10, ctx_boost=0.0)}
        other = {h.seq: round(h.score, 5) for h in ft.search(["deploy"], [], limit=10, ctx_boost=0.0)}
        assert one == other                            # one word, whichever spelling the query uses
    finally:
        ft.close()


def test_spelling_candidates_cover_common_inflections():
    from stores.index.spellings import spellings
    assert {"stop", "stops", "stopped", "stopping"} <= set(spellings("stopping"))
    assert {"study", "studies", "studied", "studying"} <= set(spellings("studies"))
    assert {"deploy", "deployed", "deployment", "deployments"} <= set(spellings("deploy"))
    assert spellings("lgbtq") == ["lgbtq"]
    assert {"go", "going", "went", "gone"} <= set(spellings("go"))       # irregular forms of one word
    assert {"run", "runs", "running", "ran"} <= set(spellings("ran")) and "ran" in spellings("running")
    assert "walk" not in spellings("go") and "travel" not in spellings("went")     # inflection, not a thesaurus


def test_a_question_in_one_tense_finds_the_line_in_another(tmp_path):
    ft = _indexed(tmp_path, ["I bought a red kayak on Saturday", "the children ran a lemonade stand",
                             "I sold my old bike and paid the fee", "an unrelated remark about lunch"])
    try:
        found = lambda words: {h.seq for h in ft.search(words, [], limit=10, ctx_boost=0.0) if h.score > 0}
        assert found(["buy"]) == {1}                   # bought
        assert found(["running"]) == {2}               # ran
        assert found(["child"]) == {2}                 # children
        assert found(["pay"]) == {3}                   # paid
        one = {h.seq: round(h.score, 5) for h in ft.search(["buy"], [], limit=10, ctx_boost=0.0)}
        other = {h.seq: round(h.score, 5) for h in ft.search(["bought"], [], limit=10, ctx_boost=0.0)}
        assert one == other                            # one word, whichever form the query uses
    finally:
        ft.close()


def test_a_window_holds_the_terms_its_neighbours_hold_each_counted_once(tmp_path):
    """window_held_idf: the IDF of the query terms a line or the two lines
    each side of it hold (the ctx field), each term once however often it
    appears; held_idf counts the line's own text alone."""
    ft = _indexed(tmp_path, ["did the coconut ice cream turn out? coconut, really?", "super good! rich and tasty",
                             "glad to hear", "a remark about lunch", "another remark", "more about the weather"])
    try:
        terms = ft.query_terms(["coconut", "ice"], [])
        total = sum(t.idf for t in terms)
        seqs = list(range(1, 7))
        held, window = ft.held_idf(seqs, terms), ft.window_held_idf(seqs, terms)
        assert held[1] == pytest.approx(total) == window[1]       # its own words, each term once
        assert held.get(2, 0.0) == 0.0 and window[2] == pytest.approx(total)   # the reply beside the question
        assert window[3] == pytest.approx(total)                  # two away still counts
        assert window.get(4, 0.0) == 0.0                          # three away does not
    finally:
        ft.close()


def test_sessions_interleaved_in_one_batch_keep_their_positions_and_context(tmp_path, monkeypatch):
    """With room for one open session, every switch closes a session and
    reopens another inside the same batch: each session's positions still
    count its events in order, once each, and every event is found through
    the words of the events beside it in its own session (ctx)."""
    monkeypatch.setattr(fulltext, "OPEN_SESSIONS", 1)
    order = ["a", "a", "b", "a", "c", "b", "b", "a", "c", "c", "a", "b"]
    lines = [json.dumps({"type": "user", "sessionId": f"s-{sid}", "uuid": f"u{i}",
                         "timestamp": f"2026-05-01T12:00:{i:02d}.000Z",
                         "message": {"role": "user", "content": f"note {i} mentions marker{i}q"}})
             for i, sid in enumerate(order)]
    (tmp_path / "mixed.jsonl").write_text("\n".join(lines) + "\n")
    store = Store(tmp_path / "store")
    list(store.ingest([str(tmp_path / "mixed.jsonl")]))
    events = list(store.events())
    ft = fulltext.FulltextIndex(store.dir)
    try:
        hits = ft.lookup([e["seq"] for e in events])
        assert sorted(h.seq for h in hits) == [e["seq"] for e in events]           # each once
        session_of = {e["seq"]: e["session_id"] for e in events}
        assert len({h.gp >> 32 for h in hits}) == 3                                  # one ordinal per session
        for sid in ("s-a", "s-b", "s-c"):
            mine = sorted((h.seq, h.gp) for h in hits if session_of[h.seq] == sid)
            assert len({gp >> 32 for _, gp in mine}) == 1
            assert [gp & 0xFFFFFFFF for _, gp in mine] == list(range(len(mine)))
        for sid in ("s-a", "s-b", "s-c"):
            seqs = [e["seq"] for e in events if e["session_id"] == sid]
            for before, after in zip(seqs, seqs[1:]):
                word = f"marker{after - 1}q"            # seq n holds note n-1
                found = {h.seq for h in ft.search([word], [])}
                assert {before, after} <= found, (sid, before, after, found)
    finally:
        ft.close()
