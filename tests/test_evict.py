"""Eviction, markers and the cache projection: pure functions, exact plans."""
from __future__ import annotations

import json

from reducers.cache import Cache, project
from reducers.evict import hot_tail_start, plan_compaction
from reducers.markers import marker_text, seq_ranges, topic_hints
from reducers.pairs import normalize_pairs, pair_groups
from reducers.retention import Retention, clear_old_results


def turn(seq: int, t: int, tokens: int = 100, tool: str = "shell", session: str = "s") -> list[dict]:
    """One agent turn: user, tool call, tool result, assistant (4 events)."""
    tid = f"{session}/t{t}"
    base = {"session_id": session, "turn_id": tid, "ts": f"2026-05-01T10:{t % 60:02d}:00.000Z"}
    call = {"name": tool, "call_id": f"c{t}"}
    return [
        {**base, "id": f"e{seq}", "seq": seq, "kind": "user", "text": f"question {t}", "tokens": 10},
        {**base, "id": f"e{seq + 1}", "seq": seq + 1, "kind": "tool_call", "text": f"{tool} {{}}", "tokens": 10,
         "tool": {**call, "input": {}}},
        {**base, "id": f"e{seq + 2}", "seq": seq + 2, "kind": "tool_result", "text": f"output {t} " * 20,
         "tokens": tokens, "tool": {**call, "is_error": False}},
        {**base, "id": f"e{seq + 3}", "seq": seq + 3, "kind": "assistant", "text": f"answer {t}", "tokens": 10},
    ]


def session(turns: int, **kw) -> list[dict]:
    return [e for t in range(turns) for e in turn(1 + 4 * t, t, **kw)]


def _seal(markers: list[dict], start_seq: int) -> list[dict]:
    """What the log does to planned markers: give them ids and seqs."""
    out = []
    for i, m in enumerate(markers):
        out.append({**m, "id": f"m{start_seq + i}", "seq": start_seq + i})
    return out


def test_the_hot_tail_is_the_last_n_turns():
    items = session(5)
    assert hot_tail_start(items, 2) == 12 and hot_tail_start(items, 0) == 20 and hot_tail_start(items, 9) == 0


def test_compaction_gets_under_budget_and_never_touches_the_hot_tail():
    cache = Cache("s", items=session(20))
    plan = plan_compaction(cache, budget=1000, headroom=100, hot_turns=3)
    assert plan.fits and plan.tokens_after <= 900
    assert [e["seq"] for e in plan.items[-12:]] == list(range(69, 81))      # the last 3 turns, intact
    assert plan.items[0]["kind"] == "marker" and len(plan.markers) == 1


def test_no_call_loses_its_result_and_prompts_outlive_the_tool_output_of_their_age():
    plan = plan_compaction(Cache("s", items=session(20)), budget=1500, headroom=0, hot_turns=2)
    kept = [e for e in plan.items if e["kind"] != "marker"]
    calls = {e["tool"]["call_id"] for e in kept if e["kind"] == "tool_call"}
    results = {e["tool"]["call_id"] for e in kept if e["kind"] == "tool_result"}
    assert calls == results
    evicted_turns = {e["turn_id"] for e in plan.evicted_events}
    # the turns that lost their tool output still have their prompt in the cache
    kept_prompts = {e["turn_id"] for e in kept if e["kind"] == "user"}
    assert evicted_turns and evicted_turns <= kept_prompts
    assert all(e["kind"] != "user" for e in plan.evicted_events)
    assert plan.fits and len(plan.markers) == 1


def test_prompts_go_too_once_the_output_of_their_age_is_gone():
    plan = plan_compaction(Cache("s", items=session(20)), budget=500, headroom=0, hot_turns=2)
    gone_prompts = [e["seq"] for e in plan.evicted_events if e["kind"] == "user"]
    assert plan.fits and gone_prompts
    # the prompts that went are the oldest ones, and no younger tool output outlived them
    kept = [e for e in plan.items if e["kind"] != "marker"]
    kept_prompts = [e["seq"] for e in kept if e["kind"] == "user"]
    assert max(gone_prompts) < min(kept_prompts)


def test_system_notes_task_state_and_the_latest_protected_state_are_never_evicted():
    items = session(10)
    items.insert(0, {"session_id": "s", "turn_id": None, "id": "sys", "seq": 0, "kind": "system",
                     "text": "you are helpful", "tokens": 5})
    items[9:9] = [{"session_id": "s", "turn_id": "s/t2", "id": "n", "seq": 9.5, "kind": "note", "text": "remember",
                   "tokens": 3}]
    old_todo, todo = turn(100, 2, tool="TodoWrite"), turn(200, 4, tool="TodoWrite")
    for e in old_todo + todo:
        if e.get("tool"):
            e["tool"] = {**e["tool"], "call_id": f"todo{e['seq'] // 100}"}
    items[20:20] = old_todo
    items[30:30] = todo
    plan = plan_compaction(Cache("s", items=items), budget=300, headroom=0, hot_turns=1)
    kept_ids = {e.get("id") for e in plan.items}
    assert {"sys", "n"} <= kept_ids
    assert {e["id"] for e in todo if e["kind"] in ("tool_call", "tool_result")} <= kept_ids
    evicted_ids = {e["id"] for e in plan.evicted_events}
    assert {e["id"] for e in old_todo if e["kind"] in ("tool_call", "tool_result")} <= evicted_ids
    assert len(plan.markers) == 1                   # one marker across the pinned state, not two


def test_a_long_current_turn_is_compacted_inside_but_keeps_its_prompt_and_newest_pair():
    items = turn(1, 0)
    for k in range(30):                              # one agentic turn: 30 tool pairs after one prompt
        call, result = [dict(e) for e in turn(10 + 2 * k, 0)[1:3]]
        call.update(id=f"c{k}", seq=10 + 2 * k, tool={**call["tool"], "call_id": f"k{k}"})
        result.update(id=f"r{k}", seq=11 + 2 * k, tool={**result["tool"], "call_id": f"k{k}"})
        items += [call, result]
    plan = plan_compaction(Cache("s", items=items), budget=800, headroom=0, hot_turns=3)
    kept = [e for e in plan.items if e["kind"] != "marker"]
    assert plan.fits and plan.evicted > 0
    assert kept[0]["kind"] == "user" and kept[-1]["id"] == "r29" and kept[-2]["id"] == "c29"
    assert all(e["seq"] < 10 + 2 * 29 for e in plan.evicted_events)          # the oldest pairs went


def test_a_plan_that_cannot_fit_says_what_stopped_it():
    items = [{"session_id": "s", "turn_id": None, "id": "sys", "seq": 0, "kind": "system", "text": "x",
              "tokens": 900}, *session(3)]
    plan = plan_compaction(Cache("s", items=items), budget=600, headroom=100, hot_turns=3)
    assert not plan.fits and "system/persona" in plan.stopped and "raise --budget" in plan.stopped


def test_successive_cycles_leave_one_marker_not_a_pile():
    cache = Cache("s", items=session(40))
    seq = 1000
    for budget in (3000, 2200, 1400, 900, 600):
        plan = plan_compaction(cache, budget=budget, headroom=50, hot_turns=2)
        sealed = _seal(plan.markers, seq)
        seq += len(sealed)
        cache = project("s", [*cache.items, *sealed] if False else sealed, cache)
        markers = [e for e in cache.items if e["kind"] == "marker"]
        assert len(markers) == 1, budget
    assert markers[0]["meta"]["marker"]["count"] == sum(
        1 for e in session(40) if e["seq"] not in {x["seq"] for x in cache.items})


def test_the_cache_is_a_projection_replaying_the_log_gives_the_same_cache():
    events = session(30)
    cache = Cache("s", items=list(events))
    log = list(events)
    seq = 5000
    for budget in (2500, 1200):
        plan = plan_compaction(cache, budget=budget, headroom=0, hot_turns=2)
        sealed = _seal(plan.markers, seq)
        seq += len(sealed)
        log += sealed
        cache = project("s", sealed, cache)
    rebuilt = project("s", log)
    assert [e["id"] for e in rebuilt.items] == [e["id"] for e in cache.items]
    assert rebuilt.cycle == cache.cycle == 2


def test_a_live_session_with_a_pending_call_keeps_it_in_the_hot_tail():
    items = session(10)
    items.append({"session_id": "s", "turn_id": "s/t10", "id": "live", "seq": 99, "kind": "tool_call",
                  "text": "shell {}", "tokens": 5, "tool": {"name": "shell", "call_id": "pending", "input": {}}})
    plan = plan_compaction(Cache("s", items=items), budget=400, headroom=0, hot_turns=1)
    assert plan.items[-1]["id"] == "live"


def test_marker_text_is_a_pointer_not_a_summary():
    text = marker_text(812, 947, "2026-05-01T12:03:10.000Z", "2026-05-01T12:41:55.000Z", 136, ["docker", "build", "ssl"])
    assert text == ('[Events 812–947 (2026-05-01 12:03–12:41) evicted: 136 events. Topics: docker, build, ssl. '
                    'Use recall("docker build ssl") or trace show 812..947.]')


def test_a_marker_whose_range_holds_other_events_scopes_show_to_its_session():
    whole = marker_text(812, 947, None, None, 136, ["ssl"], "4f1c")
    interleaved = marker_text(812, 947, None, None, 120, ["ssl"], "4f1c")
    assert whole.endswith("trace show 812..947.]")
    assert interleaved.endswith("trace show 812..947 --session 4f1c.]")


def test_a_marker_names_its_exact_ranges_when_they_are_few():
    exact = marker_text(10, 40, None, None, 20, [], "s", ranges=[(10, 19), (23, 37)])
    assert marker_text(10, 40, None, None, 25, [], "s", ranges=[(10, 19), (23, 37)]).endswith("10..19,23..37.]")
    assert exact.endswith("trace show 10..19,23..37 --session s.]")
    many = marker_text(10, 90, None, None, 8, [], "s", ranges=[(10, 11), (20, 21), (30, 31), (89, 90)])
    assert many.endswith("trace show 10..90 --session s.]")


def test_topics_are_words_a_person_would_search_for():
    texts = ['{"cmd": "cd /home/alice/proj\\nexport PATH=/usr/bin\\nexport TOKEN=x"}',
             "C:\\Users\\bob\\deploy.ps1 failed; bob@laptop:~/proj$ make deploy",
             "commit 3f9a2c1e7b deploy deploy failed again"]
    topics = topic_hints(texts, lambda w: 1, n_docs=1000, k=8)
    assert "export" in topics and "deploy" in topics
    assert not {"nexport", "alice", "bob", "3f9a2c1e7b", "users"} & set(topics)


def test_a_cjk_run_is_a_topic_whole_not_as_its_character_pairs():
    texts = ["東京クラスタ 障害 発生", "東京クラスタ を 再起動", "deploy 東京クラスタ"]
    topics = topic_hints(texts, lambda w: 1, n_docs=1000, k=3)
    assert topics[0] == "東京クラスタ" and not any(len(t) == 2 for t in topics)


def test_the_owner_and_group_of_a_long_listing_are_not_topics():
    # `ls -l` output names a user in every line, in a tool result and escaped inside JSON alike.
    listing = "total 16\ndrwxrwxr-x  2 carol carol 4096 Feb 10 23:12 migrations\n" \
              "-rw-rw-r--  1 carol staff   97 Feb 10 23:12 schema.sql\n"
    texts = [listing, json.dumps({"output": listing}), "the migrations failed on schema.sql"]
    topics = topic_hints(texts, lambda w: 1, n_docs=1000, k=8)
    assert "migrations" in topics
    assert not {"carol", "staff", "drwxrwxr"} & set(topics)


def test_topic_hints_prefer_words_frequent_here_and_rare_in_the_store():
    texts = ["docker build failed", "docker build ssl cert expired", "the the the config"]
    df = {"docker": 3, "build": 2, "ssl": 1, "cert": 1, "config": 900, "failed": 50, "expired": 40}
    assert topic_hints(texts, lambda w: df.get(w, 0), n_docs=1000, k=3) == ["build", "docker", "cert"]


def test_ranges_bridge_other_sessions_but_never_a_kept_event():
    assert seq_ranges([1, 2, 3, 7, 8], kept=[]) == [(1, 8)]
    assert seq_ranges([1, 2, 3, 7, 8], kept=[5]) == [(1, 3), (7, 8)]


def test_pair_normalisation_adds_an_aborted_result_and_drops_orphans():
    events = turn(1, 0)[:2] + [{**turn(9, 5)[2]}]          # a call without result, a result without call
    out = normalize_pairs(events)
    kinds = [(e["kind"], e["tool"]["call_id"]) for e in out if e.get("tool")]
    assert kinds == [("tool_call", "c0"), ("tool_result", "c0")]
    synthetic = out[-1]
    assert synthetic["text"] == "aborted" and synthetic["id"] == "aborted-e2"
    assert normalize_pairs(events) == out                   # deterministic


def test_pair_groups_never_split_a_call_from_its_results():
    events = turn(1, 0) + turn(5, 1)
    groups = pair_groups(events)
    assert [1, 2] in groups and [5, 6] in groups and [0] in groups


def test_retention_clears_old_results_keeps_the_last_k_and_the_pinned_state():
    events = session(12, tokens=300)
    events[2] = {**events[2], "meta": {"pinned": True}}
    cfg = Retention(trigger_tokens=1000, keep_last=3, clear_at_least=0)
    out = clear_old_results(events, cfg)
    results = [e for e in out if e["kind"] == "tool_result"]
    cleared = [e for e in results if (e.get("meta") or {}).get("cleared")]
    assert results[0]["text"].startswith("output 0")                       # pinned
    assert all(not (e.get("meta") or {}).get("cleared") for e in results[-3:])
    assert len(cleared) == 12 - 1 - 3        # all but the pinned one and the last three
    assert all("trace show" in e["text"] and e["tokens"] < 30 for e in cleared)
    assert [e["kind"] for e in out] == [e["kind"] for e in events]         # calls stay


def test_a_result_logged_before_its_call_moves_after_it_once():
    events = turn(1, 0)
    call, result = events[1], events[2]
    out = normalize_pairs([events[0], result, call, events[3]])
    assert [e["kind"] for e in out] == ["user", "tool_call", "tool_result", "assistant"]


def test_reused_call_ids_keep_each_result_after_its_own_call():
    # SWE-agent replays reuse one recorded call id for several steps.
    steps = []
    for t, output in enumerate(["344", "listing", "345"]):
        call, result = turn(10 * t + 1, t)[1:3]
        call["tool"] = {**call["tool"], "call_id": "call_same"}
        result["tool"] = {**result["tool"], "call_id": "call_same"}
        result["text"] = output
        steps += [call, result]
    out = normalize_pairs(steps)
    assert [(e["kind"], e["text"] if e["kind"] == "tool_result" else "") for e in out] == [
        ("tool_call", ""), ("tool_result", "344"), ("tool_call", ""), ("tool_result", "listing"),
        ("tool_call", ""), ("tool_result", "345")]


def test_a_repeated_call_id_whose_result_came_before_it_gets_its_own_aborted_result():
    # A sub-agent's file can repeat a call (same id) its parent's log already
    # answered: the repeat has no result after it, so it gets the synthetic one.
    call, result = turn(1, 0)[1:3]
    again = {**call, "id": "e9", "seq": 9}
    out = normalize_pairs([call, result, again, turn(10, 1)[3]])
    kinds = [e["kind"] for e in out]
    assert kinds == ["tool_call", "tool_result", "tool_call", "tool_result", "assistant"]
    assert out[3]["text"] == "aborted" and out[3]["id"] == "aborted-e9"


def test_a_marker_absorbing_one_made_earlier_in_the_same_cycle_does_not_need_its_id():
    from reducers.markers import build_marker
    earlier = build_marker("s", [{"seq": 1, "ts": "2026-01-01T00:00:00.000Z"}], ["alpha"], 1, "pointer")
    merged = build_marker("s", [{"seq": 2, "ts": "2026-01-01T00:01:00.000Z"}], ["beta"], 1, "pointer",
                          absorbed=[earlier])
    assert merged["meta"]["marker"]["ranges"] == [[1, 2]] and merged["meta"]["marker"]["replaces"] == []
