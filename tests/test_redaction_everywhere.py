"""No secret on disk: a fresh set of every secret shape is planted in each
place a transcript can carry text -- messages, thinking, tool inputs and
outputs, large outputs that become artifacts, a line too big to hold, a
hook's output, an API error's fields, Codex's repository URL, attachments
(an .env sent as base64 too), an imported event's meta and source, every
part of Gemini CLI and OpenCode sessions, a transcript followed while it
is written -- and in recall queries, notes, renders, recorded calls, the
agent hooks' payloads and the MCP tools' arguments. After ingest, recall,
compaction, the sweep and the digest, a walk of the whole store finds none of
them: not in any field of any logged event, any artifact, any row of
state.db or the index's positions.db, any term or stored field of the
Tantivy index, retrievals.jsonl, the context cache, quarantine, nor any
other file's bytes. The same walk over a store ingested with --no-redact
finds every one of them, so the walk can fail."""
from __future__ import annotations

import json
import random
from pathlib import Path

import stores.ingest.big_lines
import stores.ingest.sources
from stores.log.externalize import Externalizer
from tests.helpers import cli
from tests.planted_inputs import MALFORMED, SID, Planter, build_inputs, claude_code_lines
from tests.secret_samples import shape_samples
from tests.store_walk import leaks

# ---- the test ---------------------------------------------------------------------------------

QUERY_SECRETS = [text for _, text, _ in shape_samples(random.Random(999))]


# Placements redacted whatever ingest was told (commands, not transcripts): the
# --no-redact control cannot show them on disk, the mutation checks did.
ALWAYS_REDACTED = ("a note", "trace context --query", "trace anatomy record (a logged call)",
                   "trace anatomy record --session", "hook Stop (the transcript it names)",
                   "hook UserPromptSubmit prompt", "hook payload that is not JSON", "MCP recall query",
                   "MCP note_add", "MCP context query")
FOLLOWED = "ingest --follow (a transcript growing, a line torn mid-write)"
HOOKED_SID = "5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e"


def _some(p: Planter, placement: str, every: int) -> list[str]:
    """Every nth sample (a command per secret is slow), kind after kind."""
    texts = p.samples(placement)[::every]
    p.planted[placement] = p.planted[placement][::every]
    return texts


def _commands(store: Path, p: Planter) -> None:
    """The other commands that write: notes, a render with a query, a
    recorded call, the sweep and the digest."""
    for text in _some(p, "a note", 4):
        assert cli("--store", str(store), "note", "add", "-c", "decision", f"use {text} from now on").code == 0
    for text in _some(p, "trace context --query", 10):
        assert cli("--store", str(store), "context", "--session", SID, "--query", text, "--budget", "20000").code == 0
    calls = store.parent / f"{store.name}-calls.jsonl"
    calls.write_text("".join(json.dumps({
        "request": {"model": "claude-x", "max_tokens": 10, "system": f"deploy with {text}",
                    "metadata": {"user_id": text}, "messages": [{"role": "user", "content": text}]},
        "headers": {"authorization": text}, "response": {"usage": {"input_tokens": 5, "output_tokens": 1}}}) + "\n"
        for text in p.samples("trace anatomy record (a logged call)")))
    for session in _some(p, "trace anatomy record --session", 10):
        assert cli("--store", str(store), "anatomy", "record", "--session", session, str(calls)).code == 0
    _hooks_and_mcp(store, p)
    assert cli("--store", str(store), "sweep").code in (0, 3)
    assert cli("--store", str(store), "digest", "--out", str(store / "MEMORY.md")).code in (0, 3)


def _hooks_and_mcp(store_dir: Path, p: Planter) -> None:
    """What the agent's hooks and the MCP server write: the Stop hook's
    ingest, a prompt's recall, a payload it cannot read; the MCP tools'
    recall, note and context."""
    from stores.hooks.runtime import run_hook
    from stores.store import Store
    from trace_cli.mcp_server import TraceTools
    store = Store(store_dir)
    transcript = store_dir.parent / f"{store_dir.name}-hooked.jsonl"
    transcript.write_text("\n".join(claude_code_lines(HOOKED_SID, _some(p, "hook Stop (the transcript it names)", 3)))
                          + "\n")
    payload = {"session_id": HOOKED_SID, "transcript_path": str(transcript), "hook_event_name": "Stop"}
    assert run_hook(store, "claude-code", "Stop", json.dumps(payload)).ingested > 0
    for text in _some(p, "hook UserPromptSubmit prompt", 6):
        run_hook(store, "claude-code", "UserPromptSubmit", json.dumps({"session_id": HOOKED_SID,
                                                                       "prompt": f"why did {text} fail"}))
    for text in _some(p, "hook payload that is not JSON", 6):
        run_hook(store, "claude-code", "Stop", f"{{'transcript': {text}}}")
    tools = TraceTools(store)
    for text in _some(p, "MCP recall query", 6):
        tools.recall(f"which secret {text}", mode="fulltext")
    for text in _some(p, "MCP note_add", 6):
        tools.note_add(f"rotate {text} on Friday", "decision", HOOKED_SID)
    for text in _some(p, "MCP context query", 12):
        tools.context(SID, 25000, "text", f"what about {text}")


def _follow(store_dir: Path, p: Planter, redact: bool) -> None:
    """A transcript ingested with --follow while it is written: a pass sees
    it cut mid-line, the next sees the rest."""
    from stores.follow.tailer import Follower
    from stores.store import Store
    lines = claude_code_lines("f011ow00-0000-4000-8000-000000000000", p.samples(FOLLOWED))
    path = store_dir.parent / f"{store_dir.name}-followed.jsonl"
    half = "\n".join(lines[:len(lines) // 2]) + "\n" + lines[len(lines) // 2][:40]
    path.write_text(half)
    steps = [lambda: None, lambda: path.write_text(half + lines[len(lines) // 2][40:] + "\n"
                                                   + "\n".join(lines[len(lines) // 2 + 1:]) + "\n"), lambda: None]

    def until() -> bool:                         # one step between passes, then the final pass
        if steps:
            steps.pop(0)()
            return False
        return True
    follower = Follower(Store(store_dir), [str(path)], poll=0.01, settle=0,
                        ingest_options={"embed": False, "redact": redact})
    results = list(follower.run(until=until))
    assert sum(r.added for r in results) >= len(lines)


def _exercise(store: Path, inputs: list[Path], planter: Planter, *, redact: bool, monkeypatch, commands: bool) -> None:
    # the huge line is read in pieces and its long string spilled and streamed (scaled down)
    monkeypatch.setattr(stores.ingest.sources, "_READ_CHUNK", 8192)
    monkeypatch.setattr(stores.ingest.sources, "BIG_LINE_BYTES", 20_000)
    monkeypatch.setattr(stores.ingest.big_lines, "SPILL_CHARS", 5_000)
    monkeypatch.setattr(stores.ingest.big_lines, "_CHUNK", 4096)
    streamed = []
    stream = Externalizer.stream
    monkeypatch.setattr(Externalizer, "stream", lambda self, text: streamed.append(1) or stream(self, text))
    args = ["--store", str(store), "ingest", "--no-embed", *(str(p) for p in inputs)]
    run = cli(*(args if redact else [*args, "--no-redact"]))
    # exit 1: the malformed lines are reported (file:line: reason); the rest ingests
    assert run.code == 1 and sum(r["errors"] for r in run.lines()) == len(shape_samples()), run.err
    _follow(store, planter, redact)
    queries = store.parent / f"{store.name}-queries.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "query": f"deploy key {q}"}) + "\n"
                               for i, q in enumerate(QUERY_SECRETS)))
    assert cli("--store", str(store), "recall", "--queries", str(queries), "--mode", "fulltext").code in (0, 3)
    assert cli("--store", str(store), "recall", f"which deploy key {QUERY_SECRETS[0]}", "--mode", "fulltext").code in (0, 3)
    # (the budget leaves room for the pairs and tool state kept whatever the budget: unredacted
    # secrets take more tokens than their [REDACTED:…] marks)
    assert cli("--store", str(store), "compact", "--session", SID, "--budget", "27000").code == 0
    if commands:
        _commands(store, planter)
    assert cli("--store", str(store), "verify").code == 0
    assert streamed, "the huge line did not take the streaming path"


def test_no_planted_secret_is_anywhere_in_the_store(tmp_path, monkeypatch):
    inputs, planter = build_inputs(tmp_path / "in")
    store = tmp_path / "store"
    _exercise(store, inputs, planter, redact=True, monkeypatch=monkeypatch, commands=True)
    assert leaks(store, planter.planted) == {}
    # the fields the review found stored verbatim now hold redactions
    events = [json.loads(line) for seg in sorted((store / "segments").glob("*.jsonl"))
              for line in seg.read_text().splitlines()]
    redacted_meta = [e["meta"] for e in events if "[REDACTED:" in json.dumps(e.get("meta") or {})]
    for field in ("hookInfos", "error", "repository_url", "labels"):
        assert any(field in json.dumps(m) for m in redacted_meta), field
    # the queries were logged, with their secrets out
    logged = [json.loads(line)["query"] for line in (store / "retrievals.jsonl").read_text().splitlines()]
    assert len([q for q in logged if q.startswith(("deploy key", "which deploy key"))]) == len(QUERY_SECRETS) + 1
    assert leaks(store, {"recall queries": [part for _, _, part in shape_samples(random.Random(999))]}) == {}


def test_the_walk_finds_every_planted_secret_when_redaction_is_off(tmp_path, monkeypatch):
    """The control: the same transcripts with --no-redact put every planted
    secret on disk, and the walk names each placement (so the walk can
    fail, and every placement reaches the store)."""
    inputs, planter = build_inputs(tmp_path / "in")
    store = tmp_path / "plain"
    _exercise(store, inputs, planter, redact=False, monkeypatch=monkeypatch, commands=False)
    found = leaks(store, planter.planted)
    missing = {placement: len(parts) - len(found.get(placement, [])) for placement, parts in planter.planted.items()}
    stored = {placement: 0 for placement in planter.planted if placement != MALFORMED}
    assert {p: n for p, n in missing.items() if p != MALFORMED} == stored
    # the term dictionary is walked: unredacted secrets show up there as well
    assert sum("index term" in f for fs in found.values() for f in fs) > 100


def test_a_hook_failure_that_quotes_a_secret_is_logged_redacted(tmp_path):
    from stores.hooks.runtime import LOG_NAME, log_failure
    from stores.store import Store
    store = Store(tmp_path / "store")
    parts = []
    for _, text, part in shape_samples(random.Random(4321))[::7]:
        log_failure(store, "claude-code", "Stop", f"payload is not JSON: {text!r}\nValueError: {text}")
        parts.append(part)
    logged = (store.dir / LOG_NAME).read_text()
    assert logged.count("payload is not JSON") == len(parts)
    assert [p for p in parts if p in logged] == []


def test_a_hook_failure_that_cannot_be_logged_goes_to_stderr_redacted(tmp_path, capsys):
    """A store the hook cannot write (here its folder cannot be made: a
    file stands where its parent belongs) still leaves the failure where
    the agent keeps it, and a secret it quotes is redacted there too."""
    from stores.hooks.runtime import log_failure
    from stores.store import Store
    (tmp_path / "file").write_text("")
    store = Store(tmp_path / "file" / "store")
    _, text, part = shape_samples(random.Random(4321))[0]
    log_failure(store, "claude-code", "Stop", f"payload is not JSON: {text!r}\nValueError: {text}")
    err = capsys.readouterr().err
    assert err.startswith("trace: hook claude-code Stop: payload is not JSON") and err.count("\n") == 1
    assert f"not logged: {store.dir}/hooks.log" in err and part not in err


def test_a_secret_cut_by_a_logs_length_limit_is_redacted_before_the_cut(tmp_path):
    """hooks.log quotes a bad payload's first 80 characters and the
    retrieval log a query's first 2,000: a key straddling the cut would
    be left as a fragment no rule recognises, so the text is redacted
    first and cut after."""
    from stores.hooks.runtime import LOG_NAME, run_hook
    from stores.recall import Recaller, RecallQuery
    from stores.store import Store
    store = Store(tmp_path / "store")
    token = "ghp_" + "Zq8" * 12
    run_hook(store, "claude-code", "Stop", "not json " + "x" * 49 + " " + token)          # the token spans character 80
    logged = (store.dir / LOG_NAME).read_text()
    assert "payload is not JSON" in logged and "Zq8Zq8" not in logged and "REDACTED" in logged
    assert cli("--store", str(store.dir), "note", "add", "-c", "context", "something to find").code == 0
    Recaller(store).recall(RecallQuery(query="w " * 990 + token, mode="fulltext"))
    (row,) = [json.loads(line) for line in (store.dir / "retrievals.jsonl").read_text().splitlines()]
    assert "Zq8Zq8" not in row["query"] and len(row["query"]) <= 2000
