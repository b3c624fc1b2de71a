"""`trace context` and `trace compact` as a runtime uses them: reads that
follow the session's tail, the automatic trigger, recall hygiene, the
truncation setting and the bad-input exits."""
from __future__ import annotations

import json
import shutil

import pytest

from reducers.tokens import count_tokens
from stores.context import compact, push_pack
from stores.store import Store
from tests.helpers import cli
from tests.pack_checks import check_pack
from trace_cli.bench.needles import build_session


def _ingest(tmp_path, name: str, turns: int, seed: int = 3, needles: int = 4, extra: list | None = None):
    s = build_session(turns=turns, needles=needles, seed=seed, tag=name)
    if extra:
        s.messages += extra
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(s.messages))
    assert cli("ingest", str(path), "--session", name).code == 0
    return s


def _events(session: str) -> list[dict]:
    return [e for e in Store().events() if e["session_id"] == session]


def test_a_render_reads_the_tail_it_needs_not_the_session(tmp_path):
    _ingest(tmp_path, "long", turns=600)                      # 2,400 events, ~250k tokens
    result = push_pack(Store(), "long", budget=1000)
    assert result.read_events < 120 and result.pack.tokens <= 1000
    check_pack(result, _events("long"), 1000)
    assert result.pack.elision.ranges[0][0] == 1              # the unread start is named, not read


def test_the_pack_reports_exactly_what_it_includes(tmp_path):
    _ingest(tmp_path, "inc", turns=40)
    compact(Store(), "inc", budget=1500, reflect=False)
    js = cli("context", "--session", "inc", "--budget", "1200").lines()[0]
    seqs = sorted({s for m in js["messages"] if m["part"] != "markers" for s in m["seqs"]})
    assert js["included"]["seqs"] == seqs
    assert js["included"]["marker_ids"] == [m["id"] for m in js["markers"] if m["id"]]
    assert js["included"]["elided_ranges"] == (js["elided"] or {}).get("ranges", [])


def test_window_compacts_first_once_the_working_set_passes_75_percent(tmp_path):
    _ingest(tmp_path, "w", turns=60)
    tokens = Store().stats().tokens
    calm = push_pack(Store(), "w", budget=2000, window=int(tokens / 0.7))
    assert calm.compacted is None and calm.working_set_tokens == tokens
    hot = push_pack(Store(), "w", budget=2000, window=int(tokens / 0.8))
    assert hot.compacted and hot.compacted["evicted"] > 0 and hot.cycle == 1
    assert [m for m in hot.markers if m["id"]]
    again = push_pack(Store(), "w", budget=2000, window=int(tokens / 0.8))
    assert again.compacted is None and again.working_set_tokens < 0.75 * tokens / 0.8
    check_pack(again, _events("w"), 2000)


def test_compact_auto_runs_only_past_the_ceiling_and_window_must_hold_the_budget(tmp_path):
    _ingest(tmp_path, "a", turns=40)
    tokens = Store().stats().tokens
    idle = cli("compact", "--session", "a", "--budget", "1500", "--auto", "--window", str(tokens * 2)).lines()[0]
    assert idle["auto"]["triggered"] is False and idle["evicted"] == 0
    ran = cli("compact", "--session", "a", "--budget", "1500", "--auto", "--window", str(tokens)).lines()[0]
    assert ran["auto"]["triggered"] is True and ran["evicted"] > 0
    assert cli("compact", "--session", "a", "--auto").code == 2
    small = cli("context", "--session", "a", "--budget", "4000", "--window", "3000")
    assert small.code == 2 and "--window" in small.err


@pytest.mark.parametrize("budget", [1, 50, 200])
def test_window_with_a_budget_at_or_under_the_default_headroom_still_compacts(tmp_path, budget):
    """`context` has no --headroom, so its automatic compaction must not fail
    on compaction's default one: the call compacts and renders, or names the
    smallest pack, never a usage error about an option it does not take."""
    _ingest(tmp_path, "tiny", turns=20)
    run = cli("context", "--session", "tiny", "--budget", str(budget), "--window", str(budget * 3))
    assert "--headroom" not in run.err
    assert run.code == 0 or (run.code == 1 and "raise --budget to at least" in run.err), run.err
    assert [e for e in _events("tiny") if e["kind"] == "marker"]          # it compacted first


def test_a_long_never_compacted_session_compacts_from_its_tail(tmp_path, trace_home):
    _ingest(tmp_path, "bulk", turns=500)
    done = compact(Store(), "bulk", budget=2000, reflect=False)
    assert done.fits and done.evicted > 1900 and done.markers == 1
    events = _events("bulk")
    cached = {e["seq"] for e in events if e["kind"] != "marker"} - {
        s for m in Store().events() if m["kind"] == "marker" for a, b in m["meta"]["marker"]["ranges"]
        for s in range(a, b + 1)}
    assert len(cached) == done.cache_events                   # the marker covers everything else
    before = cli("context", "--session", "bulk", "--budget", "2000", "--no-recall").lines()[0]
    shutil.rmtree(trace_home / "cache")                       # the cache is a projection of the log
    after = cli("context", "--session", "bulk", "--budget", "2000", "--no-recall").lines()[0]
    assert before["messages"] == after["messages"]
    check_pack(push_pack(Store(), "bulk", budget=2000), _events("bulk"), 2000)


def test_recall_in_the_pack_is_gated_scoped_and_never_recalls_a_recalled_block(tmp_path):
    s = _ingest(tmp_path, "one", turns=30, needles=6)
    question = {"role": "user", "content": s.needles[0].query}
    _ingest(tmp_path, "two", turns=30, seed=8, needles=6)
    path = tmp_path / "q.json"
    path.write_text(json.dumps([question]))
    cli("ingest", str(path), "--session", "two")           # asked in the other session
    compact(Store(), "one", budget=1200, reflect=False)
    scoped = push_pack(Store(), "two", budget=3000)
    assert s.needles[0].value not in _recalled(scoped)
    wide = push_pack(Store(), "two", budget=3000, cross_session=True)
    assert s.needles[0].value in _recalled(wide)
    # `included` names the other session's events the block quotes: an anatomy reads them from there
    needle_seq = next(h["seq"] for h in cli("recall", s.needles[0].value, "--session", "one", "-k", "1").lines())
    assert needle_seq in wide.pack.included()["recalled_seqs"] and not scoped.pack.included()["recalled_seqs"]
    assert not _recalled(push_pack(Store(), "two", budget=3000, cross_session=True, recall_min_score=50.0))
    # a block injected once and logged with the next message is not found, or shown, again
    logged = [{"role": "user", "content": f"{_recalled(wide)}\nthanks, now deploy it"}]
    path.write_text(json.dumps(logged))
    cli("ingest", str(path), "--session", "two")
    hits = cli("recall", s.needles[0].value, "--session", "two", "-k", "5").lines()
    assert all(not h["text"].startswith("<recalled-context") for h in hits)
    shown = [e for e in cli("show", "--session", "two", "--tail", "3").lines() if e["kind"] == "user"][-1]
    assert shown["text"].startswith("<recalled-context")     # the log keeps its bytes
    again = push_pack(Store(), "two", budget=3000)
    assert "<recalled-context" not in "\n".join(m.content for m in again.pack.messages if m.part != "recalled")


def _recalled(result) -> str:
    return next((m.content for m in result.pack.messages if m.part == "recalled"), "")


def test_tool_output_truncation_follows_the_option_and_the_environment(tmp_path, monkeypatch):
    big = "\n".join(f"row {i}: value {i * 7}" for i in range(3000))
    s = build_session(turns=2, needles=0)
    s.messages += [{"role": "user", "content": "dump the table"},
                   {"role": "assistant", "content": None, "tool_calls": [
                       {"id": "dump", "type": "function", "function": {"name": "sql", "arguments": "{}"}}]},
                   {"role": "tool", "tool_call_id": "dump", "content": big},
                   {"role": "assistant", "content": "done"}]
    (tmp_path / "t.json").write_text(json.dumps(s.messages))
    cli("ingest", str(tmp_path / "t.json"), "--session", "t")

    def result_tokens(*args):
        js = cli("context", "--session", "t", "--budget", "30000", "--no-recall", *args)
        assert js.code == 0, js.err
        return count_tokens(next(m["content"] for m in js.lines()[0]["messages"] if m.get("tool_call_id") == "dump"))

    assert 1500 < result_tokens() <= 2000                                  # the default
    assert result_tokens("--tool-max-tokens", "400") <= 400
    monkeypatch.setenv("TRACE_TOOL_MAX_TOKENS", "600")
    assert 400 < result_tokens() <= 600
    monkeypatch.setenv("TRACE_TOOL_MAX_TOKENS", "lots")
    bad = cli("context", "--session", "t")
    assert bad.code == 2 and "TRACE_TOOL_MAX_TOKENS" in bad.err


def test_a_session_prefix_is_resolved_once_a_render(tmp_path, monkeypatch):
    from stores import sessions
    _ingest(tmp_path, "alpha-session", turns=4, needles=1)
    _ingest(tmp_path, "beta-session", turns=4, needles=1)
    asked, real = [], sessions.resolve_session
    monkeypatch.setattr(sessions, "resolve_session", lambda store, text: asked.append(text) or real(store, text))
    result = Store().context("alpha", budget=2000, record=False)
    assert result.session_id == "alpha-session" and asked == ["alpha"]


def test_an_unknown_session_names_the_first_five_known(tmp_path):
    for i in range(7):
        _ingest(tmp_path, f"s{i}", turns=2, needles=1)
    run = cli("context", "--session", "nope")
    assert run.code == 1 and "7 session(s)" in run.err and "s0, s1, s2, s3, s4 …" in run.err and "s5" not in run.err
    assert len(run.err.strip().splitlines()) == 1
    assert cli("context", "--session", "s6", "--budget", "2000").lines()[0]["session_id"] == "s6"
    assert cli("compact", "--session", "s", "--budget", "2000").code == 1            # ambiguous prefix


def _many_short_tool_pairs(tmp_path, pairs: int, ask_after: bool = True) -> str:
    """A session of short tool pairs whose call ids are as long as Claude
    Code's (toolu_01 + 22 characters: about 18 tokens each)."""
    import random
    rng = random.Random(7)
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789"
    messages = [{"role": "user", "content": "check every service's health endpoint"}]
    for i in range(pairs):
        call_id = "toolu_01" + "".join(rng.choice(alphabet) for _ in range(22))
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": "Bash", "arguments": json.dumps({"command": f"curl -s svc{i}:8080/health"})}}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": "ok"})
    if ask_after:
        messages.append({"role": "user", "content": "which ones failed?"})
    path = tmp_path / "pairs.json"
    path.write_text(json.dumps(messages))
    assert cli("ingest", str(path), "--session", "pairs").code == 0
    return "pairs"


def test_call_ids_count_toward_the_budget_in_every_printed_format(tmp_path):
    session = _many_short_tool_pairs(tmp_path, 120)
    for budget in (600, 1500, 4000):
        text = cli("context", "--session", session, "--budget", str(budget), "--format", "text").out
        assert count_tokens(text) <= budget, (budget, count_tokens(text))
        sent = cli("context", "--session", session, "--budget", str(budget), "--format", "openai").lines()[0]
        ids = sum(count_tokens(c["id"]) for m in sent for c in m.get("tool_calls") or ())
        ids += sum(count_tokens(m["tool_call_id"]) for m in sent if m["role"] == "tool")
        assert ids > 0
        content = sum(count_tokens(m.get("content") or "") for m in sent)
        calls = sum(count_tokens(c["function"]["name"]) + count_tokens(c["function"]["arguments"])
                    for m in sent for c in m.get("tool_calls") or ())
        assert content + calls + ids <= budget, (budget, content, calls, ids)


def test_a_result_shorter_than_its_placeholder_is_never_cleared(tmp_path):
    session = _many_short_tool_pairs(tmp_path, 120, ask_after=False)      # the pairs are the current turn
    for budget in (800, 2000):
        pack = cli("context", "--session", session, "--budget", str(budget)).lines()[0]
        assert pack["tokens"] <= budget
        results = [m for m in pack["messages"] if m["role"] == "tool"]
        assert results and all(m["content"] == "ok" for m in results), budget
        assert pack["cleared"] == []


def test_the_pack_prints_as_text_on_a_terminal_and_as_json_to_a_program(tmp_path, trace_home):
    import os
    import pty
    import subprocess
    from pathlib import Path
    session = _many_short_tool_pairs(tmp_path, 3)
    trace = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "trace"
    argv = [str(trace), "context", "--session", session, "--budget", "2000"]
    env = {**os.environ, "TRACE_SERVE": "0"}
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(argv, stdout=follower, stderr=subprocess.PIPE, env=env, timeout=120)
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:                   # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0, done.stderr
    assert not shown.lstrip().startswith(b"{") and b"[user]" in shown and b"which ones failed?" in shown, shown[:200]
    piped = subprocess.run(argv, capture_output=True, env=env, timeout=120)
    assert json.loads(piped.stdout)["session_id"] == session


def test_an_index_that_panics_reading_rotted_bytes_is_rebuilt_and_the_pack_rendered(tmp_path, monkeypatch):
    """Bit rot keeps a file's size and time, so no quick check sees it and
    the engine panics mid-read (pyo3's PanicException, a BaseException).
    The index is derived: context rebuilds it from the log and renders the
    same pack, with a note saying what happened."""
    from stores.context import reading

    _ingest(tmp_path, "rot", turns=30)
    want = push_pack(Store(), "rot", budget=1500)

    class PanicException(BaseException):          # the name is what pyo3's exception shares
        pass

    real, calls = reading.SessionReader._search, []

    def rotted(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise PanicException("mid > len")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(reading.SessionReader, "_search", rotted)
    got = push_pack(Store(), "rot", budget=1500)
    assert got.pack.tokens == want.pack.tokens and got.formatted("text") == want.formatted("text")
    assert any("rebuilt from the log" in n for n in got.notes)
    assert not any("rebuilt" in n for n in want.notes)


def test_an_exception_other_than_the_engines_panic_is_not_swallowed(tmp_path, monkeypatch):
    from stores.context import reading

    _ingest(tmp_path, "boom", turns=10)

    def broken(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(reading.SessionReader, "_search", broken)
    with pytest.raises(KeyboardInterrupt):
        push_pack(Store(), "boom", budget=1500)
