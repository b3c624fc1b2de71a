"""No secret on disk: a fresh set of every secret shape is planted in each
place a transcript can carry text -- messages, thinking, tool inputs and
outputs, large outputs that become artifacts, a line too big to hold, a
hook's output, an API error's fields, Codex's repository URL, attachments,
an imported event's meta and source -- and in recall queries. After
ingest, recall and compaction, a walk of the whole store finds none of
them: not in any field of any logged event, any artifact, any row of
state.db or the index's positions.db, any term or stored field of the
Tantivy index, retrievals.jsonl, the context cache, quarantine, nor any
other file's bytes. The same walk over a store ingested with --no-redact
finds every one of them, so the walk can fail."""
from __future__ import annotations

import gzip
import json
import random
import re
import sqlite3
from pathlib import Path

import orjson
from ahocorasick_rs import AhoCorasick
import stores.big_lines
import stores.sources
from stores.externalize import Externalizer
from tests.helpers import cli
from tests.secret_samples import shape_samples

SID = "7d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
MALFORMED = "claude-code malformed line"
CODEX_SID = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"


class Planter:
    """Hands each placement its own, never repeated, secret of every kind."""

    def __init__(self):
        self.planted: dict[str, list[str]] = {}          # placement -> the parts that must not survive
        self._seed = 0

    def samples(self, placement: str) -> list[str]:
        self._seed += 1
        found = shape_samples(random.Random(self._seed))
        self.planted[placement] = [part for _, _, part in found]
        return [text for _, text, _ in found]


def _cc_line(kind: str, message: dict | None = None, n: int = 0, **fields) -> str:
    rec = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/srv/app", "sessionId": SID,
           "version": "2.0.30", "type": kind, "uuid": f"00000000-0000-4000-8000-{n:012d}",
           "timestamp": f"2026-03-02T09:{n // 60 % 60:02d}:{n % 60:02d}.000Z", **fields}
    if message is not None:
        rec["message"] = message
    return json.dumps(rec)


def claude_code(path: Path, p: Planter) -> Path:
    lines, n = [], 0

    def add(kind, message=None, **fields):
        nonlocal n
        n += 1
        lines.append(_cc_line(kind, message, n, **fields))

    for text in p.samples("claude-code user text"):
        add("user", {"role": "user", "content": f"please deploy with {text} now"})
    for text in p.samples("claude-code assistant text"):
        add("assistant", {"id": f"msg_{n}", "role": "assistant", "model": "claude-x",
                          "content": [{"type": "text", "text": f"Using {text} as asked."}]})
    for text in p.samples("claude-code thinking"):
        add("assistant", {"id": f"msg_{n}", "role": "assistant", "model": "claude-x",
                          "content": [{"type": "thinking", "thinking": f"the key is {text}", "signature": "c2ln"}]})
    inputs, small, big = p.samples("claude-code tool input"), p.samples("claude-code tool output"), \
        p.samples("claude-code large tool output (artifact)")
    for i, (text, out, large) in enumerate(zip(inputs, small, big)):
        for call, result in ((f"toolu_a{i}", out), (f"toolu_b{i}", large + "\n" + "build step ok\n" * 1500)):
            add("assistant", {"id": f"msg_{n}", "role": "assistant", "model": "claude-x", "content": [
                {"type": "tool_use", "id": call, "name": "Bash",
                 "input": {"command": "./deploy.sh", "env": {"DEPLOY_KEY": text}, "args": [text]}}]})
            add("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": result}]})
    for text in p.samples("claude-code hook output (system fields)"):
        add("system", subtype="stop_hook_summary", level="suggestion", hookCount=1,
            hookInfos=[{"command": "./hooks/check.sh", "output": text}], hookErrors=[f"hook said: {text}"])
    for text in p.samples("claude-code api_error fields"):
        add("system", subtype="api_error", level="error", retryInMs=600, retryAttempt=1, maxRetries=10,
            error={"status": 401, "headers": {"x-request-context": text},
                   "error": {"type": "error", "error": {"type": "authentication_error", "message": text}}})
    for text in p.samples("claude-code attachment"):
        add("attachment", attachment={"type": "edited_text_file", "filename": "/srv/app/.env", "snippet": text})
    for text in p.samples("claude-code line of an unknown type"):
        add("future_bookkeeping", payload={"note": text})
    for text in p.samples(MALFORMED):                  # reported, never stored: nor may it be anywhere else
        lines.append('{"type": "user", "message": {"role": "user", "content": "' + json.dumps(text)[1:-1] + '"')
    path.write_text("\n".join(lines) + "\n")
    return path


def codex(path: Path, p: Planter) -> Path:
    urls, calls, outputs, said = (p.samples("codex session_meta git.repository_url"), p.samples("codex function_call"),
                                  p.samples("codex function_call_output"), p.samples("codex agent message"))
    instructions = p.samples("codex instructions")
    lines = [{"timestamp": "2026-04-10T15:00:00.000Z", "type": "session_meta", "payload": {
        "id": CODEX_SID, "timestamp": "2026-04-10T15:00:00.000Z", "cwd": "/home/dev/gw", "originator": "codex_cli_rs",
        "cli_version": "0.60.0", "instructions": "\n".join(instructions), "model_provider": "openai",
        "git": {"branch": "main", "commit_hash": "4be1f0c9a7d2e6b8c3a5f1e0d9b7c6a5e4f3d2c1",
                "repository_url": urls[0]}}}]
    # one rollout has one session_meta: the other URLs ride on later rollouts' headers
    extra = []
    for i, url in enumerate(urls[1:]):
        extra.append([{"timestamp": "2026-04-10T15:00:00.000Z", "type": "session_meta", "payload": {
            "id": f"0199a1b2-c3d4-7e5f-8a9b-{i:012d}", "timestamp": "2026-04-10T15:00:00.000Z", "cwd": "/w",
            "git": {"branch": "main", "repository_url": url}}}])
    for i, (call, out, msg) in enumerate(zip(calls, outputs, said)):
        ts = f"2026-04-10T15:{i // 60:02d}:{i % 60:02d}.500Z"
        lines.append({"timestamp": ts, "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "call_id": f"call_{i}",
            "arguments": json.dumps({"command": ["bash", "-lc", call], "env": {"TOKEN_FOR_CI": call}})}})
        lines.append({"timestamp": ts, "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": f"call_{i}", "output": json.dumps({"output": out})}})
        lines.append({"timestamp": ts, "type": "response_item", "payload": {
            "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": msg}]}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    for i, rollout in enumerate(extra):
        (path.parent / f"rollout-{i}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in rollout))
    return path.parent


def openai_chat(path: Path, p: Planter) -> Path:
    convs = []
    for i, (ask, args, out) in enumerate(zip(p.samples("openai message"), p.samples("openai tool_call arguments"),
                                             p.samples("openai tool message"))):
        convs.append({"messages": [
            {"role": "user", "content": ask},
            {"role": "assistant", "content": None, "tool_calls": [{"id": f"call_{i}", "type": "function", "function": {
                "name": "run", "arguments": json.dumps({"cmd": args, "headers": {"Authorization": args}})}}]},
            {"role": "tool", "tool_call_id": f"call_{i}", "content": out}]})
    path.write_text("".join(json.dumps(c) + "\n" for c in convs))
    return path


def anthropic(path: Path, p: Planter) -> Path:
    messages = []
    for i, (text, out) in enumerate(zip(p.samples("anthropic tool_use input"), p.samples("anthropic tool_result"))):
        messages += [{"role": "user", "content": f"step {i}"},
                     {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": "sh",
                                                        "input": {"script": text, "vars": {"SECRET_FOR_STEP": text}}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": out}]}]
    for text in p.samples("anthropic text document (attachment)"):
        env = f"HOST=db.internal\nKEY_FILE=/etc/key\n{text}\n" + "#keep\n" * 60     # no space: still text
        messages += [{"role": "user", "content": [{"type": "text", "text": "read this config"}, {
            "type": "document", "source": {"type": "text", "media_type": "text/plain", "data": env}}]},
                     {"role": "assistant", "content": "read it"}]
    path.write_text(json.dumps({"model": "claude-x", "max_tokens": 100, "messages": messages}))
    return path


def trace_events(path: Path, p: Planter) -> Path:
    lines = []
    for i, (meta, tool, src) in enumerate(zip(p.samples("trace meta"), p.samples("trace tool fields"),
                                              p.samples("trace source"))):
        lines.append({"id": f"01HZX0000000000000000{i:05d}", "seq": i + 1, "hash": f"{i:064x}",
                      "session_id": "imported", "turn_id": f"imported/t{i}", "ts": "2026-05-01T10:00:00.000Z",
                      "kind": "tool_call", "text": "run the deploy", "tokens": 3,
                      "tool": {"name": "deploy", "call_id": f"c{i}", "input": {"cmd": tool, "note": [tool]}},
                      "meta": {"fields": {"hook": {"output": meta}}, "labels": [meta]},
                      "source": {"format": "openai", "path": f"exports/{i}.json", "line": i + 1, "uuid": None,
                                 "key": f"imported/{i}", "comment": src}})
    for i, (session, turn) in enumerate(zip(p.samples("trace session_id (names and dedupe keys)"),
                                            p.samples("trace turn_id"))):
        lines.append({"id": f"01HZY0000000000000000{i:05d}", "seq": i + 1, "hash": f"{i:064x}", "session_id": session,
                      "turn_id": turn, "ts": "2026-05-02T10:00:00.000Z", "kind": "user", "text": "hello", "tokens": 1})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def huge_line(path: Path, p: Planter) -> Path:
    """A tool output on one line bigger than the reader holds (spilled to a
    temp file and streamed, redacted, into the artifact store)."""
    filler = "".join(f"row {i}: nothing to see here\n" for i in range(3000))
    body = filler + "\n".join(p.samples("a line too big to hold")) + "\n" + filler
    lines = [_cc_line("assistant", {"id": "msg_big", "role": "assistant", "model": "claude-x", "content": [
                 {"type": "tool_use", "id": "toolu_big", "name": "Bash", "input": {"command": "cat dump"}}]}, 1,
                      sessionId="big-line-session"),
             _cc_line("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_big",
                                                            "content": body}]}, 2, sessionId="big-line-session")]
    path.write_text("\n".join(lines) + "\n")
    return path


def file_names(folder: Path, p: Planter) -> Path:
    """Transcripts whose file names hold a token (the path is kept in every
    event's source, in state.db and in the anatomy record of each call)."""
    folder.mkdir()
    names = p.samples("a transcript's file name")
    kept = [n for n in names if re.fullmatch(r"[A-Za-z0-9_.-]{1,200}", n)]
    p.planted["a transcript's file name"] = kept
    for i, name in enumerate(kept):
        if i % 2:
            (folder / f"{name}.jsonl").write_text(
                _cc_line("user", {"role": "user", "content": "nothing secret here"}, i, sessionId=f"file-{i}") + "\n")
        else:                                          # a request body: ingest writes an anatomy record of it
            (folder / f"{name}.json").write_text(json.dumps({"model": "claude-x", "max_tokens": 10, "messages": [
                {"role": "user", "content": "nothing secret here"}, {"role": "assistant", "content": "ok"}]}))
    return folder


def build_inputs(root: Path) -> tuple[list[Path], Planter]:
    p = Planter()
    root.mkdir()
    (root / "codex").mkdir()
    paths = [claude_code(root / "cc.jsonl", p), codex(root / "codex" / "rollout.jsonl", p),
             openai_chat(root / "chat.jsonl", p), anthropic(root / "request.json", p),
             trace_events(root / "export.trace.jsonl", p), huge_line(root / "huge.jsonl", p),
             file_names(root / "named", p)]
    return paths, p


# ---- walking the store --------------------------------------------------------------------------

def _strings(value, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            out.append(str(k))
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def _json_lines(data: bytes, where: str, out: list[tuple[str, str]]) -> None:
    for i, line in enumerate(data.splitlines()):
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            out.append((f"{where}:{i + 1}", line.decode("utf-8", "replace")))
            continue
        found: list[str] = []
        _strings(value, found)
        out.extend((f"{where}:{i + 1}", s) for s in found)


def _sqlite(path: Path, where: str, out: list[tuple[str, str]]) -> None:
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in db.execute(f'SELECT * FROM "{table}"'):
                for cell in row:
                    if isinstance(cell, bytes):
                        cell = cell.decode("utf-8", "replace")
                    if isinstance(cell, str):
                        out.append((f"{where}:{table}", cell))
                        if cell[:1] in "[{":                  # JSON kept in a column
                            try:
                                found: list[str] = []
                                _strings(json.loads(cell), found)
                                out.extend((f"{where}:{table}", s) for s in found)
                            except ValueError:
                                pass
    finally:
        db.close()


def _tantivy(index_dir: Path, out: list[tuple[str, str]]) -> None:
    import tantivy
    index = tantivy.Index.open(str(index_dir))
    searcher = index.searcher()
    schema = json.loads((index_dir / "meta.json").read_text())["schema"]
    for field in schema:
        if field["type"] == "text":
            for term, _ in searcher.terms_with_prefix(field["name"], ""):
                out.append((f"tantivy term {field['name']}", term))
    hits = searcher.search(tantivy.Query.all_query(), limit=max(searcher.num_docs, 1)).hits
    for _, address in hits:
        for name, values in searcher.doc(address).to_dict().items():
            out.extend((f"tantivy stored {name}", str(v)) for v in values)


def store_strings(root: Path) -> list[tuple[str, str]]:
    """(where, text) for every string the store holds, file by file, in
    the form a reader would see it."""
    out: list[tuple[str, str]] = []
    tantivy_dirs = {m.parent for m in root.rglob("meta.json") if (m.parent / ".managed.json").exists()}
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        where = str(path.relative_to(root))
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        if data[:16] == b"SQLite format 3\x00":
            _sqlite(path, where, out)
        elif path.suffix in (".jsonl", ".json") or path.name in ("retrievals.jsonl", "lost-events.log"):
            _json_lines(data, where, out)
        # every file's raw text too (index segments, quarantined torn lines, anything new)
        out.append((where, data.decode("utf-8", "replace")))
    for index_dir in tantivy_dirs:
        _tantivy(index_dir, out)
    return out


_RUN = re.compile(r"[A-Za-z0-9]{12,}")


def leaks(root: Path, planted: dict[str, list[str]]) -> dict[str, list[str]]:
    """placement -> where its secrets were found. A secret counts as found
    in the text when it is there whole (as is or JSON-escaped, as a raw
    line holds it), and in an index term when one of its runs of 12+
    letters and digits is (terms are lowercased parts)."""
    strings = store_strings(root)
    texts = "\n".join(s for where, s in strings if not where.startswith("tantivy term"))
    terms = "\n".join(s for where, s in strings if where.startswith("tantivy term"))
    whole, runs = [], []                             # (needle, placement, part)
    for placement, parts in planted.items():
        for part in parts:
            for form in {part, json.dumps(part)[1:-1]}:
                whole.append((form, placement, part))
            runs.extend((r.lower(), placement, part) for r in _RUN.findall(part))
    found: dict[tuple[str, str], set[str]] = {}
    for needles, haystack, label in ((whole, texts, "text"), (runs, terms, "index term")):
        if not needles or not haystack:
            continue
        automaton = AhoCorasick([n for n, _, _ in needles])
        for i, _, _ in automaton.find_matches_as_indexes(haystack, overlapping=True):
            _, placement, part = needles[i]
            found.setdefault((placement, part), set()).add(label)
    out: dict[str, list[str]] = {}
    for (placement, part), where in sorted(found.items()):
        out.setdefault(placement, []).append(f"{part[:24]}… in {', '.join(sorted(where))}")
    return out


# ---- the test ---------------------------------------------------------------------------------

QUERY_SECRETS = [text for _, text, _ in shape_samples(random.Random(999))]


# Placements redacted whatever ingest was told (commands, not transcripts): the
# --no-redact control cannot show them on disk, the mutation checks did.
ALWAYS_REDACTED = ("a note", "trace context --query", "trace anatomy record (a logged call)",
                   "trace anatomy record --session")


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
        assert cli("--store", str(store), "context", "--session", SID, "--query", text).code == 0
    calls = store.parent / f"{store.name}-calls.jsonl"
    calls.write_text("".join(json.dumps({
        "request": {"model": "claude-x", "max_tokens": 10, "system": f"deploy with {text}",
                    "metadata": {"user_id": text}, "messages": [{"role": "user", "content": text}]},
        "headers": {"authorization": text}, "response": {"usage": {"input_tokens": 5, "output_tokens": 1}}}) + "\n"
        for text in p.samples("trace anatomy record (a logged call)")))
    for session in _some(p, "trace anatomy record --session", 10):
        assert cli("--store", str(store), "anatomy", "record", "--session", session, str(calls)).code == 0
    assert cli("--store", str(store), "sweep").code in (0, 3)
    assert cli("--store", str(store), "digest", "--out", str(store / "MEMORY.md")).code in (0, 3)


def _exercise(store: Path, inputs: list[Path], *, redact: bool, monkeypatch, planter: Planter | None = None) -> None:
    # the huge line is read in pieces and its long string spilled and streamed (scaled down)
    monkeypatch.setattr(stores.sources, "_READ_CHUNK", 8192)
    monkeypatch.setattr(stores.sources, "BIG_LINE_BYTES", 20_000)
    monkeypatch.setattr(stores.big_lines, "SPILL_CHARS", 5_000)
    monkeypatch.setattr(stores.big_lines, "_CHUNK", 4096)
    streamed = []
    stream = Externalizer.stream
    monkeypatch.setattr(Externalizer, "stream", lambda self, text: streamed.append(1) or stream(self, text))
    args = ["--store", str(store), "ingest", "--no-embed", *(str(p) for p in inputs)]
    run = cli(*(args if redact else [*args, "--no-redact"]))
    # exit 1: the malformed lines are reported (file:line: reason); the rest ingests
    assert run.code == 1 and sum(r["errors"] for r in run.lines()) == len(shape_samples()), run.err
    queries = store.parent / f"{store.name}-queries.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "query": f"deploy key {q}"}) + "\n"
                               for i, q in enumerate(QUERY_SECRETS)))
    assert cli("--store", str(store), "recall", "--queries", str(queries), "--mode", "fulltext").code in (0, 3)
    assert cli("--store", str(store), "recall", f"which deploy key {QUERY_SECRETS[0]}", "--mode", "fulltext").code in (0, 3)
    assert cli("--store", str(store), "compact", "--session", SID, "--budget", "25000").code == 0
    if planter is not None:
        _commands(store, planter)
    assert cli("--store", str(store), "verify").code == 0
    assert streamed, "the huge line did not take the streaming path"


def test_no_planted_secret_is_anywhere_in_the_store(tmp_path, monkeypatch):
    inputs, planter = build_inputs(tmp_path / "in")
    store = tmp_path / "store"
    _exercise(store, inputs, redact=True, monkeypatch=monkeypatch, planter=planter)
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
    _exercise(store, inputs, redact=False, monkeypatch=monkeypatch)
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
