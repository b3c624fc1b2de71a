"""Ingest through the Python API: idempotent, lossless, loud about bad input."""
from __future__ import annotations

import json
import os

import orjson
import pytest

from stores.log.artifacts import ArtifactStore, BadArtifactId, check_artifact_id
from stores.log.lookup import export_events, full_text
from stores.store import Store
from tests.helpers import cli, openai_conversations

_VOLATILE = ("seq", "prev", "hash", "ingested_at")


def _stable(events):
    return [{k: v for k, v in e.items() if k not in _VOLATILE} for e in events]


def _ingest(store, *paths, **kw):
    errors = []
    results = list(store.ingest([str(p) for p in paths], on_error=errors.append, **kw))
    return results, errors


def test_reingesting_the_same_file_adds_nothing(tmp_path):
    src = openai_conversations(tmp_path / "chat.jsonl", 3, tool_every=2)
    store = Store(tmp_path / "s")
    (first,), _ = _ingest(store, src)
    (second,), _ = _ingest(store, src)
    assert first.added > 0 and first.errors == 0 and first.format == "openai"
    assert second.added == 0 and second.skipped == first.added
    assert store.stats().events == first.added + first.states


def test_a_file_unchanged_since_its_last_ingest_is_not_parsed_again(tmp_path):
    src = openai_conversations(tmp_path / "chat.jsonl", 3, tool_every=2)
    store = Store(tmp_path / "s")
    (first,), _ = _ingest(store, src)
    (second,), _ = _ingest(store, src)
    assert not first.unchanged and second.unchanged and second.skipped == first.added
    os.utime(src, ns=(0, 0))                       # touched: parsed again, nothing new in it
    (third,), _ = _ingest(store, src)
    assert not third.unchanged and third.added == 0 and third.skipped == first.added


def test_a_grown_file_adds_only_what_is_new(tmp_path):
    src = tmp_path / "chat.jsonl"
    src.write_text("".join(json.dumps({"role": "user" if i % 2 else "assistant", "content": f"turn {i}"}) + "\n"
                           for i in range(5)))                    # one conversation, one message per line
    store = Store(tmp_path / "s")
    (first,), _ = _ingest(store, src)
    with open(src, "a") as f:                      # the conversation goes on
        f.write(json.dumps({"role": "user", "content": "brand new question"}) + "\n")
    (second,), _ = _ingest(store, src)
    assert second.added == 1 and second.skipped == first.added
    assert [e["text"] for e in store.events()][-1] == "brand new question"
    assert store.verify().ok          # the index re-filed the waiting tail without duplicates


def _parts(tmp_path, fmt: str, n: int = 3) -> list:
    """One conversation split into `n` files, each starting at message 0."""
    out = []
    for p in range(n):
        msgs = [{"role": "user", "content": f"part {p} question"}, {"role": "assistant", "content": f"part {p} answer"}]
        if fmt == "codex":
            path = tmp_path / f"part{p}.jsonl"
            path.write_text("".join(json.dumps({"timestamp": f"2026-01-0{p + 1}T00:00:0{i}Z", "type": "response_item",
                                                "payload": {"type": "message", "role": m["role"], "content": [
                                                    {"type": "input_text", "text": m["content"]}]}}) + "\n"
                                    for i, m in enumerate(msgs)))
        elif fmt == "anthropic":
            path = tmp_path / f"part{p}.json"
            path.write_text(json.dumps({"model": "claude", "messages": msgs}))
        else:
            path = tmp_path / f"part{p}.jsonl"
            path.write_text("".join(json.dumps(m) + "\n" for m in msgs))
        out.append(path)
    return out


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "codex"])
def test_a_session_streamed_as_separate_files_keeps_every_part(tmp_path, fmt):
    """Files forced into one session all start at message 0: position is not
    identity, so no part is taken for a repeat of another."""
    store = Store(tmp_path / "s")
    parts = _parts(tmp_path, fmt)
    for path in parts:
        (res,), errors = _ingest(store, path, session="live", format=fmt)
        assert res.added == 2 and not errors, path.name
    texts = [e["text"] for e in store.events()]
    assert texts == [f"part {p} {w}" for p in range(3) for w in ("question", "answer")]
    assert len({e["turn_id"] for e in store.events()}) == 3          # three turns, not one
    for path in parts:                                                # and each part is still idempotent
        (res,), _ = _ingest(store, path, session="live", format=fmt)
        assert res.added == 0


@pytest.mark.parametrize("batch", [2, 3, 2000])
def test_a_file_given_twice_in_one_run_is_added_once_while_its_last_batch_is_still_syncing(
        tmp_path, monkeypatch, batch):
    """The next batch is built while the previous one's fsync runs, before
    the ingest state knows its keys: they are looked up in memory too."""
    import stores.log.appender as appender
    monkeypatch.setattr(appender, "BATCH_EVENTS", batch)
    src = openai_conversations(tmp_path / "chat.jsonl", 3, tool_every=2)
    copy = tmp_path / "again.jsonl"
    copy.write_bytes(src.read_bytes())
    store = Store(tmp_path / "s")
    (first, second), _ = _ingest(store, src, src, session="one")
    (third,), _ = _ingest(store, copy, session="one")
    assert first.added > 0 and second.added == 0 and second.skipped == first.added
    assert third.added == 0 and third.skipped == first.added
    assert store.stats().events == first.added + first.states and store.verify().ok


def test_the_ingest_state_never_records_a_batch_before_the_log_has_synced_it(tmp_path, monkeypatch):
    """After a crash the state may lag the log but never lead it: a key
    recorded for an event the disk lost would make re-ingest skip it."""
    import stores.log.appender as appender
    from stores.log.event_log import EventLog
    from stores.ingest_state import IngestState
    monkeypatch.setattr(appender, "BATCH_EVENTS", 3)
    durable, violations, recorded = [0], [], []
    real_wait, real_record = EventLog.wait_durable, IngestState.record

    def wait_durable(self):
        real_wait(self)
        durable[0] = self.tail.seq        # every append before this call is on disk

    def record(self, events):
        recorded.append(len(events))
        violations.extend(e["seq"] for e in events if e["seq"] > durable[0])
        real_record(self, events)
    monkeypatch.setattr(EventLog, "wait_durable", wait_durable)
    monkeypatch.setattr(IngestState, "record", record)
    src = openai_conversations(tmp_path / "chat.jsonl", 4, tool_every=2)
    (res,), _ = _ingest(Store(tmp_path / "s"), src)
    assert res.added > 6 and len(recorded) > 2 and sum(recorded) == res.added + res.states
    assert violations == []


def test_same_content_arriving_again_after_the_state_is_lost_is_still_not_doubled(tmp_path):
    src = openai_conversations(tmp_path / "chat.jsonl", 2)
    store = Store(tmp_path / "s")
    (first,), _ = _ingest(store, src)
    for name in ("state.db", "state.db-wal", "state.db-shm"):
        (store.dir / name).unlink(missing_ok=True)   # derived: rebuilt from the log
    (again,), _ = _ingest(store, src)
    assert again.added == 0 and again.skipped == first.added


def test_export_then_ingest_into_an_empty_store_reproduces_the_events(tmp_path):
    src = openai_conversations(tmp_path / "chat.jsonl", 2, tool_every=1)
    a = Store(tmp_path / "a")
    _ingest(a, src)
    big = "\n".join(f"row {i}: " + "payload " * 10 for i in range(2000))
    (tmp_path / "big.json").write_text(json.dumps([
        {"role": "user", "content": "dump it"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "dump", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": big}]))
    _ingest(a, tmp_path / "big.json")
    exported = tmp_path / "export.jsonl"
    with open(exported, "wb") as f:
        for e in export_events(a):
            f.write(orjson.dumps(e) + b"\n")
    b = Store(tmp_path / "b")
    (res,), errors = _ingest(b, exported)
    assert res.format == "trace" and not errors
    assert _stable(b.events()) == _stable(a.events())
    with_artifact = [e for e in b.events() if e.get("artifact")]
    assert with_artifact and full_text(b, with_artifact[0]) == big
    # ...and ingesting the export into the store it came from adds nothing.
    (back,), _ = _ingest(a, exported)
    assert back.added == 0


def test_imported_events_are_looked_up_even_in_a_session_the_store_has_never_seen(tmp_path):
    """A first ingest of new sessions skips the dedupe lookups: a parser's
    keys name their session (tests/formats/test_keys.py). Imported events
    keep their original keys, so they are looked up whatever their session:
    an export whose events were moved to new session ids adds nothing to the
    store it came from."""
    src = openai_conversations(tmp_path / "chat.jsonl", 2, tool_every=1)
    store = Store(tmp_path / "s")
    (first,), _ = _ingest(store, src)
    moved = tmp_path / "moved.jsonl"
    with open(moved, "wb") as f:
        for e in export_events(store):
            f.write(orjson.dumps({**e, "session_id": "renamed-" + e["session_id"]}) + b"\n")
    (back,), _ = _ingest(store, moved)
    assert (back.added, back.skipped) == (0, first.added + first.states)   # the task states came along


def test_a_malformed_line_is_reported_and_the_rest_still_ingests(tmp_path):
    src = openai_conversations(tmp_path / "chat.jsonl", 3)
    lines = src.read_text().splitlines()
    lines.insert(1, '{"messages": [ this is not json')
    src.write_text("\n".join(lines) + "\n")
    store = Store(tmp_path / "s")
    (res,), errors = _ingest(store, src)
    assert res.errors == 1 and res.added > 0
    assert errors == [f"{src}:2: not valid JSON (unexpected character)"] or errors[0].startswith(f"{src}:2: not valid JSON")


def test_strict_writes_nothing_from_a_file_with_a_bad_line(tmp_path):
    src = openai_conversations(tmp_path / "chat.jsonl", 3)
    with open(src, "a") as f:
        f.write("not json at all\n")
    store = Store(tmp_path / "s")
    (res,), errors = _ingest(store, src, strict=True)
    assert res.added == 0 and res.errors == 1
    assert any("--strict" in e for e in errors)
    assert store.stats().events == 0


def test_strict_writes_nothing_even_when_the_bad_line_comes_batches_later(tmp_path, monkeypatch):
    import stores.log.appender
    monkeypatch.setattr(stores.log.appender, "BATCH_EVENTS", 2)       # many batches before the bad line
    src = openai_conversations(tmp_path / "chat.jsonl", 20, tool_every=1)
    with open(src, "a") as f:
        f.write("not json at all\n")
    store = Store(tmp_path / "s")
    (res,), _ = _ingest(store, src, strict=True, embed=False)
    assert (res.added, res.errors) == (0, 1) and store.stats().events == 0
    assert not list(export_events(store))


def test_a_secret_in_a_transcript_is_in_no_file_of_the_store_and_no_redact_keeps_it(tmp_path):
    import gzip
    secret = "ghp_" + "Q7x" * 12
    src = tmp_path / "chat.json"
    src.write_text(json.dumps([
        {"role": "user", "content": f"use {secret} for the push"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "bash", "arguments": json.dumps({"cmd": f"git push https://x:{secret}@github.com/a/b"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": f"token {secret}\n" + "pushed ok\n" * 3000}]))
    store = Store(tmp_path / "s")
    _ingest(store, src)                                       # full-text and vector indexes too

    def holds_secret(root) -> list[str]:
        found = []
        for path in root.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                if path.suffix == ".gz":
                    data = gzip.decompress(data)
                if secret.encode() in data:
                    found.append(str(path.relative_to(root)))
        return found
    assert store.stats().artifacts >= 1 and holds_secret(store.dir) == []
    plain = Store(tmp_path / "plain")
    _ingest(plain, src, redact=False, embed=False)
    assert holds_secret(plain.dir)


def test_invalid_utf8_is_a_reported_line_not_a_crash(tmp_path):
    src = openai_conversations(tmp_path / "chat.jsonl", 2)
    with open(src, "ab") as f:
        f.write(b'{"messages": [{"role": "user", "content": "caf\xe9"}]}\n')
    (res,), errors = _ingest(Store(tmp_path / "s"), src)
    assert res.errors == 1 and res.added > 0
    assert errors == [f"{src}:3: invalid UTF-8"]


def test_unknown_format_names_the_formats_tried_and_writes_nothing(tmp_path):
    src = tmp_path / "weird.jsonl"
    src.write_text('{"hello": "world"}\n{"hello": "again"}\n')
    store = Store(tmp_path / "s")
    (res,), errors = _ingest(store, src)
    assert res.errors == 1 and res.added == 0
    assert "tried trace, claude-code, codex, gemini-cli, opencode, anthropic, openai" in errors[0]
    assert store.stats().events == 0


def test_an_empty_file_is_fine_and_adds_nothing(tmp_path):
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (res,), errors = _ingest(Store(tmp_path / "s"), tmp_path / "empty.jsonl")
    assert res.added == 0 and res.errors == 0 and not errors


def test_a_missing_path_is_an_error_result_and_others_still_ingest(tmp_path):
    src = openai_conversations(tmp_path / "chat.jsonl", 1)
    results, errors = _ingest(Store(tmp_path / "s"), tmp_path / "nope.jsonl", src)
    assert results[0].errors == 1 and "no such file" in results[0].error
    assert results[1].added > 0


def test_directories_recurse_and_skip_non_transcripts(tmp_path):
    (tmp_path / "d" / "sub").mkdir(parents=True)
    openai_conversations(tmp_path / "d" / "a.jsonl", 1, prefix="a")
    openai_conversations(tmp_path / "d" / "sub" / "b.jsonl", 1, prefix="b")
    (tmp_path / "d" / "README.txt").write_text("not a transcript")
    results, _ = _ingest(Store(tmp_path / "s"), tmp_path / "d")
    assert [os.path.basename(r.source) for r in results] == ["a.jsonl", "b.jsonl"]


def _ingest_build_output(tmp_path, out: str) -> Store:
    """A store holding one OpenAI conversation whose shell call printed `out`."""
    (tmp_path / "t.json").write_text(json.dumps([
        {"role": "user", "content": "build"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": out}]))
    store = Store(tmp_path / "s")
    _ingest(store, tmp_path / "t.json")
    return store


def test_a_large_tool_output_becomes_an_artifact_with_an_honest_preview(tmp_path):
    out = "".join(f"line {i}: building target_{i} with flags -O2 -Wall\n" for i in range(3000))
    store = _ingest_build_output(tmp_path, out)
    result = [e for e in store.events() if e["kind"] == "tool_result"][0]
    art = result["artifact"]
    assert art["bytes"] == len(out.encode()) and art["tokens"] > 2000 and art["sha256"] == art["id"]
    assert result["text"].startswith("Total output lines: 3000")
    assert "tokens truncated…" in result["text"] and "line 0:" in result["text"] and "line 2999:" in result["text"]
    assert result["tokens"] < 600
    assert full_text(store, result) == out
    assert store.verify().ok


def test_the_whole_of_a_large_output_is_searchable_not_just_its_preview(tmp_path):
    # Right after ingest the index gets the artifact's content from memory;
    # a rebuild reads it back from the artifact store. Both must find the middle.
    out = "".join(f"line {i}: building target_{i} with flags -O2 -Wall\n" for i in range(3000))
    out = out.replace("line 1500:", "line 1500: zanzibar")
    store = _ingest_build_output(tmp_path, out)
    from stores.recall import Recaller, RecallQuery

    def top_kind():
        rc = Recaller(store)
        rc.prepare("fulltext")
        hits = rc.recall(RecallQuery(query="zanzibar", k=3, mode="fulltext"))
        return hits[0].kind if hits else None

    assert "zanzibar" not in [e for e in store.events() if e["kind"] == "tool_result"][0]["text"]
    assert top_kind() == "tool_result"
    store.reindex()
    assert top_kind() == "tool_result"


def test_artifact_ids_cannot_escape_the_store(tmp_path):
    for bad in ("../../etc/passwd", "a" * 63, "A" * 64, "/" + "a" * 63, "a" * 64 + "/.."):
        with pytest.raises(BadArtifactId):
            check_artifact_id(bad)
    arts = ArtifactStore(tmp_path)
    artifact_id, size = arts.put(b"hello")
    assert arts.read(artifact_id) == b"hello" and size == 5
    with pytest.raises(BadArtifactId):
        arts.read("../" + artifact_id[3:])


def test_an_export_line_pointing_outside_the_store_is_rejected(tmp_path):
    line = {"id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "seq": 1, "hash": "x", "kind": "tool_result", "text": "t",
            "session_id": "s", "artifact": {"id": "../../../etc/passwd"}}
    (tmp_path / "evil.jsonl").write_bytes(orjson.dumps(line) + b"\n")
    store = Store(tmp_path / "s")
    (res,), errors = _ingest(store, tmp_path / "evil.jsonl")
    assert res.errors == 1 and res.added == 0 and "artifact" in errors[0]


def test_stdin_is_read_once_and_ingested(tmp_path, monkeypatch):
    import io
    import sys
    data = openai_conversations(tmp_path / "c.jsonl", 1).read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    (res,), _ = _ingest(Store(tmp_path / "s"), "-", session="piped")
    assert res.added > 0 and res.session_id == "piped"


@pytest.mark.parametrize("cut", [b'{"messages":[{"role":"us', b'{"messages":[{"role":"user","content":"hi"}]}\n{"mess'])
def test_stdin_cut_inside_a_line_is_an_error_not_a_wait_for_more(cut):
    # A file's half-written last line is read by the next run; stdin has no next run.
    run = cli("ingest", "-", stdin=cut)
    (result,) = run.lines()
    assert run.code == 1 and result["errors"] == 1 and result["pending"] == 0
    assert "cut short" in run.err and "once complete" not in run.err


def test_session_override_puts_everything_in_one_session(tmp_path):
    src = openai_conversations(tmp_path / "chat.jsonl", 3)
    store = Store(tmp_path / "s")
    (res,), _ = _ingest(store, src, session="mine")
    assert {e["session_id"] for e in store.events()} == {"mine"} and res.sessions == 1


def test_sessions_leaving_memory_mid_ingest_are_indexed_once_and_completed_later(tmp_path, monkeypatch):
    import stores.index.fulltext
    monkeypatch.setattr(stores.index.fulltext, "OPEN_SESSIONS", 1)         # force the LRU path
    files = {}
    for name in ("a", "b", "c"):
        files[name] = tmp_path / f"{name}.jsonl"
        files[name].write_text("".join(json.dumps({"role": "user" if i % 2 == 0 else "assistant",
                                                   "content": f"{name} message {i}"}) + "\n" for i in range(4)))
    store = Store(tmp_path / "s")
    _ingest(store, files["a"], files["b"], files["c"])
    with open(files["a"], "a") as f:                 # session a goes on after it left memory
        f.write(json.dumps({"role": "user", "content": "a follow-up about the zebra migration"}) + "\n")
    _ingest(store, files["a"])
    assert store.verify().ok                         # one document per event, none doubled
    from stores.recall import Recaller, RecallQuery
    rc = Recaller(store)
    rc.prepare("fulltext")
    hits = rc.recall(RecallQuery(query="zebra migration", k=3, mode="fulltext", mmr=1.0))
    texts = [h.text for h in hits]
    assert texts[0] == "a follow-up about the zebra migration"
    assert "a message 3" in texts                    # found by its successor, through ctx


def _plain_then(tmp_path, tail: list[dict]):
    """A message-per-line chat: 30 plain role/content lines either chat API
    could have written, then `tail`, the first lines that show which one."""
    lines = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"plain line {i}"} for i in range(30)]
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in lines + tail))
    return path


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_a_chat_whose_tool_use_comes_late_is_detected_by_it(tmp_path, api):
    if api == "anthropic":
        tail = [{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "grep",
                                                   "input": {"q": "x"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "3 hits"}]}]
    else:
        tail = [{"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "grep", "arguments": "{\"q\": \"x\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "3 hits"}]
    store = Store(tmp_path / "s")
    (res,), errors = _ingest(store, _plain_then(tmp_path, tail))
    assert res.format == api and not errors and res.added == 32
    calls = [e for e in store.events() if e["kind"] == "tool_call"]
    results = [e for e in store.events() if e["kind"] == "tool_result"]
    assert len(calls) == len(results) == 1
    assert calls[0]["tool"]["call_id"] == results[0]["tool"]["call_id"] and results[0]["text"] == "3 hits"
    assert [e["text"] for e in store.events()][:30] == [f"plain line {i}" for i in range(30)]


def test_a_plain_chat_with_nothing_to_tell_the_apis_apart_is_read_as_openai(tmp_path):
    (res,), errors = _ingest(Store(tmp_path / "s"), _plain_then(tmp_path, []))
    assert res.format == "openai" and res.added == 30 and not errors


def test_a_file_of_whole_conversations_is_decided_from_its_first_records(tmp_path, monkeypatch):
    """Each record shows a whole conversation, so reading on (and holding up
    to 2,000 of them in memory) would add little: only message-per-line
    chats read on."""
    import stores.ingest.run as ingest
    limits = []
    real_sniff = ingest.sniff
    monkeypatch.setattr(ingest, "sniff", lambda records, limit=None: limits.append(limit) or real_sniff(records, limit))
    conversations = tmp_path / "ft.jsonl"
    conversations.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"},
                                                              {"role": "assistant", "content": f"a{i}"}]}) + "\n"
                                     for i in range(40)))
    (res,), _ = _ingest(Store(tmp_path / "s"), conversations)
    assert res.format == "openai" and res.added == 80 and limits == [None]
    limits.clear()
    (res,), _ = _ingest(Store(tmp_path / "s2"), _plain_then(tmp_path, []))
    assert res.format == "openai" and limits == [None, ingest.SNIFF_MORE_RECORDS]


def test_events_the_size_reconciler_declined_are_not_decided_again_on_reingest(tmp_path, monkeypatch):
    # Twenty identical `git status` turns over a tiny budget: the repeats are declined.
    msgs = []
    for t in range(20):
        call = f"call_{t}"
        msgs += [{"role": "user", "content": f"status please ({t})"},
                 {"role": "assistant", "content": None, "tool_calls": [
                     {"id": call, "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "git status"}'}}]},
                 {"role": "tool", "tool_call_id": call, "content": "On branch main\nnothing to commit, working tree clean"}]
    src = tmp_path / "repeat.json"
    src.write_text(json.dumps(msgs))
    monkeypatch.setenv("TRACE_RECONCILE", "size")
    monkeypatch.setenv("TRACE_RECONCILE_BUDGET", "200")
    store = Store(tmp_path / "s")
    (first,), _ = _ingest(store, src)
    assert first.dropped > 0
    os.utime(src, ns=(1, 1))                       # "changed": parsed again, every draft reconsidered
    (second,), _ = _ingest(store, src)
    assert (second.added, second.dropped) == (0, 0)
    assert second.skipped == first.added + first.dropped


def test_a_redacted_import_counts_the_tokens_of_the_text_it_keeps(tmp_path):
    secret = "sk-" + "Ab3" * 16
    src = tmp_path / "chat.json"
    src.write_text(json.dumps([{"role": "user", "content": f"my key is {secret} and " + "words " * 50}]))
    plain = Store(tmp_path / "plain")
    _ingest(plain, src, redact=False, embed=False)
    exported = tmp_path / "export.jsonl"
    exported.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in export_events(plain)))
    redacted = Store(tmp_path / "redacted")
    _ingest(redacted, exported, embed=False)
    (before,), (after,) = list(export_events(plain)), list(export_events(redacted))
    assert secret not in after["text"]
    from reducers.tokens import count_tokens
    assert after["tokens"] == count_tokens(after["text"]) != before["tokens"]


def test_a_last_line_still_being_written_is_left_for_the_next_run_without_an_error(tmp_path):
    # cron re-ingests live transcripts: it can catch the writer mid-line
    src = openai_conversations(tmp_path / "live.jsonl", 3)
    whole = src.read_bytes()
    fourth = b'{"messages": [{"role": "user", "content": "one more question"}]}\n'
    src.write_bytes(whole + fourth[:25])
    store = Store(tmp_path / "s")
    (first,), errors = _ingest(store, src)
    assert (first.errors, first.pending) == (0, 1)
    assert errors == [f"{src}:4: last line is incomplete (no newline yet: still being written?); "
                      f"it will be read once complete"]
    src.write_bytes(whole + fourth)                  # the writer finished the line
    (second,), errors = _ingest(store, src)
    assert (second.added, second.errors, second.pending, errors) == (1, 0, 0, [])
    assert "one more question" in [e["text"] for e in export_events(store)]


def test_a_new_transcripts_half_written_first_line_is_pending_not_an_error(tmp_path):
    # a hook or cron run can catch a session the moment its first record is being written
    from pathlib import Path
    lines = (Path(__file__).resolve().parent.parent / "sample_sessions" / "claude-code"
             / "demo-session.jsonl").read_bytes().splitlines(keepends=True)
    src = tmp_path / "new-session.jsonl"
    src.write_bytes(lines[0][:len(lines[0]) // 2])
    store = Store(tmp_path / "s")
    (first,), errors = _ingest(store, src)
    assert (first.added, first.errors, first.pending) == (0, 0, 1)
    assert len(errors) == 1 and "still being written" in errors[0]
    src.write_bytes(b"".join(lines))                  # the writer went on
    (second,), errors = _ingest(store, src)
    one_shot = Store(tmp_path / "one-shot")
    (whole,), _ = _ingest(one_shot, src)
    assert (second.errors, second.pending, errors) == (0, 0, [])
    assert second.added == whole.added > 0


def test_a_first_line_that_is_not_json_is_still_an_error(tmp_path):
    src = tmp_path / "notes.jsonl"
    src.write_bytes(b"remember to rotate the keys")          # no newline: but not JSON cut short either
    (result,), errors = _ingest(Store(tmp_path / "s"), src)
    assert (result.errors, result.pending) == (1, 0) and "not valid JSON" in errors[0]


def test_a_file_nothing_can_be_read_from_is_reported_once_until_it_changes(tmp_path):
    # cron ingests ~/.claude/projects every few minutes: a stray file must not fail every run
    folder = tmp_path / "projects"
    folder.mkdir()
    (folder / "settings.json").write_text('{"theme": "dark"}\n')
    (folder / "scratch.jsonl").write_bytes(b"\xff\xfe not text\n")
    store = Store(tmp_path / "s")
    first, errors = _ingest(store, folder)
    assert sorted(r.errors for r in first) == [1, 1] and len(errors) == 2
    again, errors = _ingest(store, folder)
    assert errors == [] and all(r.unchanged and not r.errors for r in again)
    rechecked = list(store.ingest([str(folder)], recheck=True, on_error=lambda m: None))
    assert sorted(r.errors for r in rechecked) == [1, 1]
    (folder / "settings.json").write_text('{"theme": "light"}\n')          # changed: read again
    changed, errors = _ingest(store, folder)
    assert len(errors) == 1 and "settings.json" in errors[0]


def test_a_file_with_no_readable_record_names_its_first_problem(tmp_path):
    src = tmp_path / "latin1.jsonl"
    src.write_bytes(b'{"role": "user", "content": "caf\xe9"}\n')
    (result,), errors = _ingest(Store(tmp_path / "s"), src)
    assert result.errors == 1
    assert errors == [f"{src}:1: invalid UTF-8; no JSON records found (is it a transcript?)"]


@pytest.mark.parametrize("fmt", ["auto", "openai", "claude-code", "trace"])
def test_empty_input_is_nothing_found_whether_or_not_the_format_is_named(tmp_path, fmt):
    """A zero-byte file, a file of blank lines, an empty pipe: as `ingest
    --help` and the CLI contract say, one JSON line per input on stdout,
    the reason once on stderr, exit 3 (nothing found); no error."""
    blank, zero = tmp_path / "blank.jsonl", tmp_path / "zero.jsonl"
    blank.write_text("\n\n  \n")
    zero.write_bytes(b"")
    for args, shown in (([str(blank)], str(blank)), ([str(zero)], str(zero)), (["-"], "-")):
        run = cli("--store", str(tmp_path / f"s-{shown[-1]}"), "ingest", "--format", fmt, *args, stdin=b"")
        assert run.code == 3, (args, run.code, run.out, run.err)
        (line,) = run.lines()
        assert line["source"] == shown and line["empty"] is True and line["errors"] == line["added"] == 0
        assert "error" not in line                                          # said once: on stderr
        assert run.err == f"{shown}: empty (no JSON records found); nothing to ingest\n", run.err
    again = cli("--store", str(tmp_path / "s-l"), "ingest", str(zero))   # still empty the next time: said again
    assert again.code == 3 and again.lines()[0]["empty"] is True


def test_an_empty_input_beside_a_transcript_is_said_and_the_run_succeeds(tmp_path):
    zero = tmp_path / "zero.jsonl"
    zero.write_bytes(b"")
    run = cli("ingest", str(zero), str(openai_conversations(tmp_path / "a.jsonl", 1)))
    assert run.code == 0 and [r["empty"] for r in run.lines()] == [True, False]
    assert "zero.jsonl: empty" in run.err


def test_a_directory_of_empty_files_is_nothing_found_and_quiet_per_file(tmp_path):
    folder = tmp_path / "projects"
    folder.mkdir()
    (folder / "new-session.jsonl").write_bytes(b"")          # a session file the agent has not written to yet
    run = cli("ingest", str(folder))
    assert run.code == 3 and run.out == ""
    assert run.err == "trace: nothing to ingest: the 1 transcript file(s) found are empty\n"
    openai_conversations(folder / "a.jsonl", 1)
    run = cli("ingest", str(folder))
    assert run.code == 0 and [r["source"] for r in run.lines()] == [str(folder / "a.jsonl")]


def test_the_trace_sample_ingests_as_the_events_it_holds(tmp_path, samples):
    sample = samples / "trace" / "billing-handoff.trace.jsonl"
    store = Store(tmp_path / "s")
    (result,), errors = _ingest(store, sample, embed=False)
    assert (result.format, result.errors, errors) == ("trace", 0, [])
    source = [orjson.loads(line) for line in sample.read_bytes().splitlines()]
    assert _stable(export_events(store)) == _stable(source)
    assert [e["id"] for e in export_events(store)] == [e["id"] for e in source]


def test_a_killed_writers_half_written_artifact_is_cleared_by_the_next_writer(tmp_path):
    store = Store(tmp_path / "s")
    _ingest(store, openai_conversations(tmp_path / "a.jsonl", 1), embed=False)
    leftover = store.dir / "artifacts" / ".incoming-99999-1234"
    leftover.parent.mkdir(parents=True, exist_ok=True)
    leftover.write_bytes(b"\x1f\x8b half a gzip stream")
    _ingest(store, openai_conversations(tmp_path / "b.jsonl", 1, prefix="b"), embed=False)
    assert not leftover.exists()


def test_an_export_that_carries_an_artifact_restores_it_to_a_store_that_lacks_it(tmp_path):
    src = tmp_path / "big.json"
    output = "".join(f"line of output number {i}\n" for i in range(3000))
    src.write_text(json.dumps([
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": output}]))
    origin = Store(tmp_path / "origin")
    _ingest(origin, src, embed=False)
    full = list(export_events(origin))
    assert any(e.get("artifact_content") for e in full)
    carried, bare = tmp_path / "carried.jsonl", tmp_path / "bare.jsonl"
    carried.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in full))
    bare.write_bytes(b"".join(orjson.dumps({k: v for k, v in e.items() if k != "artifact_content"}) + b"\n"
                              for e in full))
    copy = Store(tmp_path / "copy")
    _ingest(copy, bare, embed=False)
    lacking = copy.verify()                            # the event points at an artifact this store lacks:
    assert lacking.ok and any("never in this store" in n for n in lacking.notes)   # noted (it came without it)
    (again,), _ = _ingest(copy, carried, embed=False)
    restored = copy.verify()
    assert again.added == 0 and restored.ok and not any("never in this store" in n for n in restored.notes)
    assert all(copy.artifacts.exists(e["artifact"]["id"]) for e in full if e.get("artifact"))


def test_a_file_gone_between_listing_and_reading_is_one_error_and_the_rest_ingests(tmp_path, monkeypatch):
    import stores.ingest.sources
    (tmp_path / "in").mkdir()
    gone = openai_conversations(tmp_path / "in" / "a.jsonl", 1, prefix="a")
    kept = openai_conversations(tmp_path / "in" / "b.jsonl", 1, prefix="b")
    real = stores.ingest.sources.Source.fingerprint

    def vanishing(source):
        if source.path == gone:
            gone.unlink()                              # deleted right after the directory was listed
        return real(source)
    monkeypatch.setattr(stores.ingest.sources.Source, "fingerprint", vanishing)
    results, errors = _ingest(Store(tmp_path / "s"), tmp_path / "in", embed=False)
    assert [(r.source, r.errors) for r in results] == [(str(gone), 1), (str(kept), 0)]
    assert errors == [f"{gone}: cannot read it (No such file or directory)"] and results[1].added > 0
