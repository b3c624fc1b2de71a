"""The shared transcripts and the sample sessions ingested as a user would:
one folder, formats detected, every file into one store. Each file's user
texts, tool calls and results reach the log exactly as its parser reads
them (the format tests check those readings against the sources): nothing
is lost to detection, to another file's keys or to dedupe, and a second
ingest of the folder adds nothing."""
from __future__ import annotations

from collections import Counter

import orjson

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.formats import anthropic, claude_code, codex, gemini_cli, openai, opencode, trace_events
from stores.log.lookup import export_events
from stores.store import Store
from tests.formats.real_files import records

_MODULES = {"claude_code": claude_code, "claude-code": claude_code, "codex": codex, "openai_chat": openai,
            "openai": openai, "anthropic_messages": anthropic, "anthropic": anthropic, "trace": trace_events,
            "gemini-cli": gemini_cli, "opencode": opencode}
_KINDS = ("user", "tool_call", "tool_result")


def _parsed(path) -> Counter:
    module = _MODULES[path.parent.name]
    recs = [(1, orjson.loads(path.read_bytes()))] if path.suffix == ".json" else records(path)
    items = module.parse(recs, ParseContext(path=str(path), source_id=str(path.resolve())))
    return Counter((d.kind, d.tool and d.tool.get("call_id")) for d in items
                   if isinstance(d, Draft) and not isinstance(d, BadRecord) and d.kind in _KINDS)


def _stored(store: Store) -> dict[str, Counter]:
    out: dict[str, Counter] = {}
    for e in export_events(store, with_artifacts=False):
        if e["kind"] in _KINDS:
            out.setdefault(e["source"]["path"], Counter())[(e["kind"], (e.get("tool") or {}).get("call_id"))] += 1
    return out


def _source_path(path) -> str:
    """Where a file's events say they come from: the file, or for our own
    export format the transcript the exporting store read."""
    if path.parent.name != "trace":
        return str(path)
    (origin,) = {orjson.loads(line)["source"]["path"] for line in path.read_bytes().splitlines()}
    return origin


def _check_folder(root, tmp_path):
    store = Store(tmp_path / "store")
    results = list(store.ingest([str(root)], embed=False, on_error=lambda msg: None))
    assert not [r.error for r in results if r.error]          # bad lines (a fixture of edge cases) only
    stored = _stored(store)
    files = sorted(p for p in root.rglob("*") if p.suffix in (".json", ".jsonl"))
    assert files and {r.source for r in results} == {str(p) for p in files}
    for path in files:
        assert stored.get(_source_path(path), Counter()) == _parsed(path), path.name
    again = list(store.ingest([str(root)], embed=False))
    assert sum(r.added for r in again) == 0


def test_the_shared_transcripts_folder_reaches_the_log_whole(shared_transcripts, tmp_path):
    _check_folder(shared_transcripts, tmp_path)


def test_the_sample_sessions_folder_reaches_the_log_whole(samples, tmp_path):
    _check_folder(samples, tmp_path)
