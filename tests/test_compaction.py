"""`trace compact` and `trace context` through the CLI: pointers in the log,
nothing lost, the context always within budget."""
from __future__ import annotations

import json
import shutil

import pytest

from reducers.tokens import count_tokens
from stores.store import Store
from tests.helpers import cli
from trace_cli.bench.needles import build_session


def _write_parts(tmp_path, turns=40, needles=10, parts=5, seed=4, chains=0):
    """One session streamed as `parts` growing snapshots (JSONL of messages)."""
    s = build_session(turns=turns, needles=needles, chains=chains, flood_words=80, seed=seed)
    path = tmp_path / "live.jsonl"
    per = len(s.messages) // parts
    return s, path, [s.messages[: per * (i + 1)] if i < parts - 1 else s.messages for i in range(parts)]


def _snapshot(path, messages):
    path.write_text("".join(json.dumps(m) + "\n" for m in messages))


@pytest.mark.parametrize("delivery", ["growing file", "separate files"])
def test_streamed_session_compacted_each_part_keeps_every_needle_and_the_budget(tmp_path, delivery):
    s, path, parts = _write_parts(tmp_path, chains=3)
    done = 0
    for i, messages in enumerate(parts):
        if delivery == "separate files":              # each part holds only its new messages
            path = tmp_path / f"part{i}.jsonl"
            _snapshot(path, messages[done:])
            done = len(messages)
        else:
            _snapshot(path, messages)
        assert cli("ingest", str(path), "--session", "live").code == 0
        result = cli("compact", "--session", "live", "--budget", "1500", "--headroom", "100").lines()[0]
        assert result["tokens_after"] <= 1400 and result["fits"]
        pack = cli("context", "--session", "live", "--budget", "1500").lines()[0]
        assert pack["tokens"] <= 1500
    markers = [m for m in pack["markers"] if m["id"]]
    assert len(markers) == 1                                      # merged, not stacked
    for needle in s.needles:
        hits = cli("recall", needle.query, "-k", "10").lines()
        assert any(needle.value in h["text"] for h in hits), needle.query
    for chain in s.chains:                                        # both halves evicted, both come back
        texts = [h["text"] for h in cli("recall", chain.query, "-k", "10", "--hops", "2").lines()]
        assert any(chain.path in t and "private key" in t for t in texts), chain.query
        assert any(chain.checksum in t for t in texts), chain.query
    assert cli("verify").code == 0


def test_compact_reports_what_it_did_and_the_marker_points_back(tmp_path):
    s = build_session(turns=30, needles=5, seed=2)
    s.write_openai(tmp_path / "s.jsonl")
    cli("ingest", str(tmp_path / "s.jsonl"), "--session", "demo")
    r = cli("compact", "--session", "demo", "--budget", "1200").lines()[0]
    assert {"session_id", "cycle", "evicted", "markers", "cache_events", "tokens_before", "tokens_after",
            "latency_ms", "index_catchup_ms"} <= set(r)
    assert r["cycle"] == 1 and r["markers"] == 1 and r["evicted"] > 0 and r["latency_ms"] >= 0
    assert r["reflection"]["checked"] > 0 and r["reflection"]["found"] == r["reflection"]["checked"]
    marker = r["new_markers"][0]
    text = marker["text"]
    assert text.startswith(f"[Events {marker['seq_from']}–{marker['seq_to']} (") and "Topics:" in text
    assert 'recall("' in text
    directive = text.split(" or trace show ", 1)[1].rstrip(".]").split()
    shown = {e["seq"] for e in cli("show", *directive).lines() if e["kind"] != "marker"}
    marker_id = next(e["id"] for e in Store().events() if e["kind"] == "marker")
    evicted = {e["seq"] for e in cli("show", "--marker", marker_id).lines()}
    assert len(evicted) == r["evicted"] and evicted <= shown     # --marker is exact; the directive reaches it all
    if len(marker["ranges"]) <= 3:
        assert shown == evicted                                  # few ranges: the directive names them exactly


def test_dry_run_writes_nothing(tmp_path):
    build_session(turns=20, needles=2).write_openai(tmp_path / "s.jsonl")
    cli("ingest", str(tmp_path / "s.jsonl"), "--session", "d")
    before = Store().stats().events
    r = cli("compact", "--session", "d", "--budget", "800", "--dry-run").lines()[0]
    assert r["dry_run"] and r["evicted"] > 0
    assert Store().stats().events == before


def test_unknown_session_names_how_many_there_are_and_how_to_list_them(tmp_path):
    build_session(turns=3, needles=1).write_openai(tmp_path / "s.jsonl")
    cli("ingest", str(tmp_path / "s.jsonl"))
    sid = Store().stats().by_session[0]["session_id"]
    run = cli("compact", "--session", "nope")
    assert run.code == 1 and "1 session" in run.err and sid in run.err
    ctx = cli("context", "--session", "nope")
    assert ctx.code == 1 and sid in ctx.err and len(ctx.err.strip().splitlines()) == 1


def test_a_budget_below_the_protected_blocks_says_what_they_need(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps([{"role": "system", "content": "rule " * 400},
                                {"role": "user", "content": "hello there"}]))
    cli("ingest", str(path), "--session", "p")
    run = cli("compact", "--session", "p", "--budget", "300", "--headroom", "0")
    assert run.code == 1 and "could not reach the budget" in run.err and "system/persona" in run.err
    assert run.lines()[0]["fits"] is False                      # the result is still reported
    ctx = cli("context", "--session", "p", "--budget", "100")
    assert ctx.code == 1 and "raise --budget to at least" in ctx.err and len(ctx.err.strip().splitlines()) == 1
    need = int(ctx.err.split("raise --budget to at least ")[1].split()[0].rstrip(".;"))
    pack = cli("context", "--session", "p", "--budget", str(need)).lines()[0]
    assert pack["tokens"] <= need and any(m["role"] == "user" for m in pack["messages"])


def test_the_cache_is_rebuilt_identically_from_the_log(tmp_path, trace_home):
    build_session(turns=30, needles=3).write_openai(tmp_path / "s.jsonl")
    cli("ingest", str(tmp_path / "s.jsonl"), "--session", "c")
    assert cli("compact", "--session", "c", "--budget", "3400").lines()[0]["cycle"] == 1
    assert cli("compact", "--session", "c", "--budget", "900").lines()[0]["cycle"] == 2
    before = cli("context", "--session", "c", "--budget", "900", "--no-recall").lines()[0]
    shutil.rmtree(trace_home / "cache")
    after = cli("context", "--session", "c", "--budget", "900", "--no-recall").lines()[0]
    assert before["messages"] == after["messages"] and before["cycle"] == after["cycle"] == 2


def test_a_live_session_with_an_unanswered_call_compacts_and_keeps_the_call(tmp_path):
    s = build_session(turns=25, needles=2)
    s.messages.append({"role": "user", "content": "now run the migration"})
    s.messages.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_live", "type": "function", "function": {"name": "shell", "arguments": "{\"cmd\": \"migrate\"}"}}]})
    s.write_openai(tmp_path / "s.jsonl")
    cli("ingest", str(tmp_path / "s.jsonl"), "--session", "live")
    assert cli("compact", "--session", "live", "--budget", "1000").code == 0
    msgs = cli("context", "--session", "live", "--budget", "1000", "--format", "openai").lines()[0]
    last_calls = [c["id"] for m in msgs if m.get("tool_calls") for c in m["tool_calls"]]
    assert "call_live" in last_calls
    answered = [m for m in msgs if m["role"] == "tool" and m["tool_call_id"] == "call_live"]
    assert answered and answered[0]["content"] == "aborted"             # synthetic, so the API accepts it


def test_context_formats_and_recall_block(tmp_path):
    s = build_session(turns=30, needles=6, seed=9)
    s.messages.append({"role": "user", "content": s.needles[0].query})
    s.write_openai(tmp_path / "s.jsonl")
    cli("ingest", str(tmp_path / "s.jsonl"), "--session", "f")
    cli("compact", "--session", "f", "--budget", "1200")
    js = cli("context", "--session", "f", "--budget", "2000").lines()[0]
    assert js["recalled"] and js["tokens"] <= 2000
    recalled = next(m for m in js["messages"] if m["part"] == "recalled")
    assert s.needles[0].value in recalled["content"]                   # the evicted answer, recalled
    assert count_tokens(recalled["content"]) <= 200                    # 10% of the budget
    text = cli("context", "--session", "f", "--budget", "2000", "--format", "text").out
    assert text.startswith("[system: task]") and "[system: markers]" in text
    anthropic = cli("context", "--session", "f", "--budget", "2000", "--format", "anthropic").lines()[0]
    assert set(anthropic) == {"system", "messages"} and anthropic["messages"][0]["role"] == "user"
    assert cli("context", "--session", "f", "--format", "yaml").code == 2


def test_trivial_user_messages_do_not_trigger_recall(tmp_path):
    s = build_session(turns=10, needles=1)
    s.messages.append({"role": "user", "content": "ok"})
    s.write_openai(tmp_path / "s.jsonl")
    cli("ingest", str(tmp_path / "s.jsonl"), "--session", "t")
    js = cli("context", "--session", "t", "--budget", "3000").lines()[0]
    assert js["query"] and "ok" not in js["query"].split("\n")


def test_baselines_run_in_the_same_code_path(tmp_path):
    build_session(turns=30, needles=3).write_openai(tmp_path / "s.jsonl")
    for strategy in ("truncate", "narrative"):
        cli("ingest", str(tmp_path / "s.jsonl"), "--session", strategy)
        r = cli("compact", "--session", strategy, "--budget", "1200", "--strategy", strategy).lines()[0]
        assert r["evicted"] > 0 and r["strategy"] == strategy
        text = r["new_markers"][0]["text"]
        assert text == "" if strategy == "truncate" else text.startswith("Summary of events")
    assert cli("compact", "--session", "truncate", "--strategy", "magic").code == 2


@pytest.mark.parametrize("strategy", ["truncate", "narrative"])
def test_a_baseline_compaction_on_a_store_still_leaves_every_evicted_event_reachable(tmp_path, strategy):
    """The baselines write markers with no pointer (truncate: no text,
    narrative: a summary). The pack and the post-compaction hook context
    still point at what such a marker hides: `trace show` with the ranges
    they print brings back every event the pack left out."""
    from stores.context import push_pack
    from stores.hooks.reinjection import session_memory
    from tests.pack_checks import check_pack
    build_session(turns=30, needles=3).write_openai(tmp_path / "s.jsonl")
    cli("ingest", str(tmp_path / "s.jsonl"), "--session", "b")
    r = cli("compact", "--session", "b", "--budget", "1200", "--strategy", strategy).lines()[0]
    assert r["evicted"] > 0
    ranges = r["new_markers"][0]["ranges"]
    store = Store()
    events = [e for e in store.events() if e["session_id"] == "b"]
    for budget in (1200, 8000):
        result = push_pack(store, "b", budget=budget, recall=False)
        found = check_pack(result, events, budget)
        markers = next(m.content for m in result.pack.messages if m.part == "markers")
        assert f"trace show {ranges[0][0]}.." in markers and found["missing"] >= r["evicted"]
    assert f"trace show {ranges[0][0]}.." in session_memory(store, "b")
    if strategy == "narrative":                     # the baseline's own text is still what it wrote
        assert r["new_markers"][0]["text"] in markers


def test_show_marker_lists_what_it_evicted(tmp_path):
    build_session(turns=20, needles=2).write_openai(tmp_path / "s.jsonl")
    cli("ingest", str(tmp_path / "s.jsonl"), "--session", "m")
    r = cli("compact", "--session", "m", "--budget", "900").lines()[0]
    mid = cli("context", "--session", "m", "--budget", "900", "--no-recall").lines()[0]["markers"][0]["id"]
    assert len(cli("show", "--marker", mid).lines()) == r["evicted"]
    assert cli("show", "--marker", "01ARZ3NDEKTSV4RRFFQ69G5FAV").code == 1


def test_overflow_tries_shrink_to_85_72_60_percent_then_give_up(tmp_path):
    build_session(turns=20, needles=2).write_openai(tmp_path / "s.jsonl")
    cli("ingest", str(tmp_path / "s.jsonl"), "--session", "o")
    normal = cli("context", "--session", "o", "--budget", "2000", "--no-recall").lines()[0]
    assert normal["tokens"] > 1700
    sizes = []
    for n, limit in ((1, 1700), (2, 1440), (3, 1200)):
        pack = cli("context", "--session", "o", "--budget", "2000", "--no-recall", "--overflow").lines()[0]
        assert pack["overflow"]["try"] == n and pack["overflow"]["limit"] == limit
        assert pack["tokens"] <= limit and len(pack["overflow"]["tries"]) == n - 1      # each try recorded
        sizes.append(pack["tokens"])
    assert sizes == sorted(sizes, reverse=True)
    gave_up = cli("context", "--session", "o", "--budget", "2000", "--no-recall", "--overflow")
    assert gave_up.code == 1 and "lower --budget" in gave_up.err
    # the session moved on (the call went through): the next overflow starts again at 85%
    more = tmp_path / "more.json"
    more.write_text(json.dumps([{"role": "user", "content": "and now the staging deploy please"}]))
    cli("ingest", str(more), "--session", "o")
    again = cli("context", "--session", "o", "--budget", "2000", "--no-recall", "--overflow").lines()[0]
    assert again["overflow"]["try"] == 1


def test_a_marker_over_interleaved_sessions_points_at_its_own_events(tmp_path):
    """Two sessions growing side by side interleave in the log; following
    the marker's show directive prints only the compacted session."""
    a, b = build_session(turns=20, needles=2, seed=5), build_session(turns=20, needles=2, seed=6)
    for i in range(0, len(a.messages), 8):                 # cron ingests both, a piece at a time
        for name, s in (("a", a), ("b", b)):
            _snapshot(tmp_path / f"{name}.jsonl", s.messages[: i + 8])
            assert cli("ingest", str(tmp_path / f"{name}.jsonl"), "--session", name).code == 0
    cli("compact", "--session", "a", "--budget", "900")
    marker = cli("context", "--session", "a", "--budget", "900", "--no-recall").lines()[0]["markers"][0]
    directive = marker["text"].split(" or ", 1)[1].rstrip(".]")
    assert directive.endswith("--session a")
    selector = directive.split()[2]
    shown = cli("show", selector, "--session", "a").lines()
    assert shown and {e["session_id"] for e in shown} == {"a"}
    assert {e["session_id"] for e in cli("show", selector).lines()} == {"a", "b"}   # the bare range is everything
    assert cli("show", selector, "--session", "nobody").code == 1
    assert cli("show", selector, "--marker", marker["id"]).code == 2


def test_a_recalled_block_over_its_cap_drops_the_lowest_ranked_of_hits_that_share_a_score():
    from reducers.recall_block import build_block
    hits = [{"kind": "assistant", "text": f"answer number {i}: " + "detail " * 30, "score": 0.7, "rank": i + 1,
             "ts": "2026-11-27T10:00:00Z", "seq": i, "session_id": "s"} for i in range(5)]
    block = build_block(hits, 120)
    assert "answer number 0" in block and "answer number 4" not in block
