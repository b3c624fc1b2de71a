"""Defect 4: every derived file (under fulltext/, vectors/, cache/, and
state.db) damaged every way: verify names it apart from the log (exit 6),
recall answers as before without a traceback or an engine panic, ingest
goes on, and `verify --repair` leaves a store that verifies clean.

`make test` runs a seeded slice of the files, each damaged one way;
`make soak` runs every file with every kind."""
from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import cli, openai_conversations
from tests.reliability.damage import KINDS, damage

SESSION = "5b1f0c2e-8d4a-4e6b-9c3f-2a7d1e9b4c60"       # the Claude Code sample session
QUERY = ["recall", "which port does the gateway listener use", "-k", "3"]
_INERT = (".tantivy-meta.lock", ".tantivy-writer.lock")   # Tantivy's lock files: empty, content never read
_REBUILT_WHEN_GONE = ("checksums.json", "state.db", ".managed.json")   # a missing one is no damage


def _pristine(root: Path, samples: Path) -> tuple[Path, list[str], list[int]]:
    store = root / "pristine"
    assert cli("--store", str(store), "ingest", str(samples)).code == 0
    assert cli("--store", str(store), "compact", "--session", SESSION, "--budget", "600", "--hot-tail", "1").code == 0
    expected = [h["seq"] for h in cli("--store", str(store), *QUERY).lines()]
    files = sorted(str(p.relative_to(store)) for p in store.rglob("*") if p.is_file()
                   and (p.relative_to(store).parts[0] in ("fulltext", "vectors", "cache") or p.name == "state.db"))
    return store, files, expected


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    from tests.conftest import SAMPLES
    return _pristine(tmp_path_factory.mktemp("damage"), SAMPLES)


SLICE = 10          # files damaged in `make test` (a seeded draw, each one way); `make soak` does them all
_ALWAYS = ("state.db", "positions.db", ".idx", "vectors/hnsw.bin", "fulltext/meta.json", "cache/")   # in every slice


def _cases(files: list[str], kind: str, every: bool) -> list[str]:
    """The files damaged `kind`'s way: in `make test` a seeded slice of
    files, each one way; in `make soak` every file every way."""
    if every:
        return files
    rng = random.Random(24)
    key = [next(f for f in files if part in f) for part in _ALWAYS if any(part in f for f in files)]
    others = [f for f in files if f not in key]
    chosen = key + rng.sample(others, max(min(SLICE - len(key), len(others)), 0))
    return [rel for rel in chosen if rng.choice(KINDS) == kind]


def _run_case(pristine, tmp_path: Path, rel: str, kind: str) -> None:
    store_src, _, expected = pristine
    store = tmp_path / "store"
    shutil.rmtree(store, ignore_errors=True)
    shutil.copytree(store_src, store, symlinks=True)
    damage(store / rel, kind, random.Random(rel))
    name = Path(rel).name
    inert = name in _INERT or (kind == "delete" and (name in _REBUILT_WHEN_GONE or rel.startswith("cache/")))

    def trace(*args):
        run = cli("--store", str(store), *args)
        for sign in ("Traceback", "panicked", "please report", "PanicException"):
            assert sign not in run.err, (rel, kind, args, run.err)
        return run

    verify = trace("verify")
    if kind == "bitrot" and name == "state.db":
        assert verify.code in (0, 6)                   # damage in pages nothing reads is not damage
    else:
        assert verify.code == (0 if inert else 6), (rel, kind, verify.err)
    if verify.code:
        assert rel.split("/")[0] in verify.err                 # named, and not as damage to the log
        assert "segments/" not in verify.err
    recall = trace(*QUERY)
    assert recall.code == 0, (rel, kind, recall.err)
    if kind != "bitrot":     # bytes changed without a write are verify's to find: recall only stays up
        assert [h["seq"] for h in recall.lines()] == expected, (rel, kind, recall.err)
    assert trace("context", "--session", SESSION, "--format", "text").code == 0
    assert trace("stats").code == 0
    new = openai_conversations(tmp_path / "new.jsonl", 1, prefix="later")
    assert trace("ingest", str(new)).code == 0
    repaired = trace("verify", "--repair")
    assert repaired.code == 0, (rel, kind, repaired.err)
    assert trace("verify").code == 0


@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_derived_file_is_named_rebuilt_and_never_crashes(pristine, tmp_path, kind):
    for rel in _cases(pristine[1], kind, every=False):
        _run_case(pristine, tmp_path, rel, kind)


@pytest.mark.soak
@pytest.mark.parametrize("kind", KINDS)
def test_every_derived_file_every_damage_soak(pristine, tmp_path, kind):
    for rel in _cases(pristine[1], kind, every=True):
        _run_case(pristine, tmp_path, rel, kind)


def test_the_sample_store_has_a_file_of_every_derived_kind(pristine):
    _, files, _ = pristine
    for prefix in ("fulltext/", "vectors/hnsw.bin", "vectors/meta.json", "state.db", "cache/"):
        assert any(f.startswith(prefix) for f in files), prefix


def test_reindex_keeps_the_old_index_until_the_new_one_is_ready(tmp_path, trace_home, monkeypatch):
    """A rebuild that fails half-way leaves the index it was replacing:
    recall still answers from it."""
    import stores.index.indexes
    src = openai_conversations(tmp_path / "c.jsonl", 30, tool_every=2)
    assert cli("ingest", str(src)).code == 0
    before = [h["seq"] for h in cli("recall", "config_7_1.yaml", "--mode", "fulltext").lines()]
    assert before

    def broken(self, ft, start_seq):
        raise OSError(28, "No space left on device")
    with monkeypatch.context() as m:
        m.setattr(stores.index.indexes.DerivedIndexes, "_index_from", broken)
        failed = cli("reindex")
    assert failed.code == 1 and "No space left on device" in failed.err
    from stores.log.lock import WriterLock
    lock = WriterLock(trace_home).acquire()          # as while a rebuild still runs: recall may not write
    try:
        during = cli("recall", "config_7_1.yaml", "--mode", "fulltext")
    finally:
        lock.release()
    assert during.code == 0 and [h["seq"] for h in during.lines()] == before
    assert cli("verify").code == 0


def test_recall_during_a_rebuild_is_an_error_never_an_empty_answer(tmp_path, trace_home):
    """The index is damaged and another process holds the store (rebuilding
    it): recall says so with exit 4 instead of returning nothing with exit 0."""
    from stores.log.lock import WriterLock
    src = openai_conversations(tmp_path / "c.jsonl", 5)
    assert cli("ingest", str(src)).code == 0
    seg = next(p for p in (trace_home / "fulltext").iterdir() if p.suffix == ".idx")
    damage(seg, "garbage", random.Random(1))
    lock = WriterLock(trace_home).acquire()
    try:
        run = cli("recall", "config_3_1.yaml")
    finally:
        lock.release()
    assert run.code == 4 and "being built or rebuilt" in run.err and run.out == ""
    after = cli("recall", "config_3_1.yaml", "--mode", "fulltext")
    assert after.code == 0 and after.lines()


@pytest.mark.parametrize("kind", ["empty", "half", "garbage", "flip", "append"])
def test_a_damaged_overflow_record_is_named_and_the_tries_start_over(tmp_path, trace_home, kind):
    """The overflow recovery's tries (cache/*.overflow.json) are derived
    too: damaged, verify names them (exit 6), the next --overflow starts at
    the first try instead of failing, and --repair leaves a clean store."""
    src = openai_conversations(tmp_path / "c.jsonl", 6)
    assert cli("ingest", str(src), "--session", "o").code == 0
    args = ("context", "--session", "o", "--budget", "2000", "--no-recall", "--overflow")
    assert [cli(*args).lines()[0]["overflow"]["try"] for _ in range(2)] == [1, 2]
    tries = next((trace_home / "cache").glob("*.overflow.json"))
    assert cli("verify").code == 0                     # a record of tries as written is no damage
    damage(tries, kind, random.Random(kind))
    verify = cli("verify")
    assert verify.code == 6 and f"cache/{tries.name}" in verify.err and "Traceback" not in verify.err
    again = cli(*args)
    assert again.code == 0 and again.lines()[0]["overflow"]["try"] == 1, again.err
    assert cli("verify", "--repair").code == 0
    assert cli("verify").code == 0


def test_sessions_are_known_from_the_log_while_state_db_is_damaged(tmp_path, trace_home):
    """state.db is derived: a reader meeting it damaged (before any writer
    rebuilt it) finds the session, its size and its context from the log."""
    from stores.context.sessions import known_sessions, require_session, session_tokens
    from stores.store import Store
    src = openai_conversations(tmp_path / "c.jsonl", 3)
    assert cli("ingest", str(src), "--session", "abc-session").code == 0
    store = Store(trace_home)
    tokens = session_tokens(store, "abc-session")
    assert tokens > 0
    damage(trace_home / "state.db", "garbage", random.Random(3))
    assert known_sessions(store) == ["abc-session"]
    assert require_session(store, "abc") == "abc-session"
    assert session_tokens(store, "abc-session") == tokens
    assert cli("context", "--session", "abc", "--budget", "2000", "--no-recall").code == 0


def _folder_in_place(path: Path) -> None:
    if path.exists():
        path.unlink()
    path.mkdir()


def _link_loop(path: Path) -> None:
    if path.exists():
        path.unlink()
    path.symlink_to(path.name)


def _file_in_place(path: Path) -> None:
    shutil.rmtree(path)
    path.write_bytes(b"not a folder")


@pytest.mark.parametrize("rel, make", [
    ("vectors", _file_in_place), ("fulltext", _file_in_place),
    ("state.db", _folder_in_place), ("state.db", _link_loop), ("state.db-shm", _folder_in_place),
    ("state.db-wal", _folder_in_place), ("fulltext/.tantivy-writer.lock", _folder_in_place),
    ("fulltext/.tantivy-writer.lock", _link_loop), ("fulltext/positions.db-journal", _folder_in_place),
])
def test_a_folder_or_a_link_loop_where_a_derived_file_belongs_is_derived_damage(pristine, tmp_path, rel, make):
    """Not a file at all where state.db, SQLite's side files or Tantivy's
    lock belong: verify names it (exit 6), writers rebuild past it, and
    `verify --repair` clears it -- never a generic I/O error."""
    store_src, _, expected = pristine
    store = tmp_path / "store"
    shutil.copytree(store_src, store, symlinks=True)
    make(store / rel)

    def trace(*args):
        run = cli("--store", str(store), *args)
        assert "Traceback" not in run.err and "please report" not in run.err, (rel, args, run.err)
        return run

    verify = trace("verify")
    assert verify.code == 6 and rel.split("-")[0].split("/")[0] in verify.err, (rel, verify.code, verify.err)
    assert [h["seq"] for h in trace(*QUERY).lines()] == expected
    assert trace("ingest", str(openai_conversations(tmp_path / "new.jsonl", 1, prefix="later"))).code == 0
    assert trace("verify", "--repair").code == 0
    assert trace("verify").code == 0


def test_a_file_or_a_dangling_link_where_the_logs_folders_belong_is_an_integrity_failure(pristine, tmp_path):
    """segments/ and artifacts/ hold the only copy of the history: anything
    else in their place is exit 5 naming it, in readers and writers alike,
    never "no store here" (which invites a fresh ingest)."""
    store_src, _, _ = pristine
    for folder, make in (("segments", _link_loop), ("artifacts", None)):
        store = tmp_path / folder
        shutil.copytree(store_src, store, symlinks=True)
        if make is None:
            shutil.rmtree(store / folder, ignore_errors=True)
            (store / folder).write_text("x")
        else:
            shutil.rmtree(store / folder)
            make(store / folder)
        for args in (QUERY, ["verify"], ["stats"], ["ingest", str(openai_conversations(tmp_path / "n.jsonl", 1))]):
            run = cli("--store", str(store), *args)
            assert run.code == 5 and f"not the store's {folder}/ folder" in run.err, (folder, args, run.code, run.err)


def test_a_folder_where_the_lock_file_belongs_is_one_clear_line(tmp_path, trace_home):
    assert cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "a.jsonl", 1))).code == 0
    (trace_home / "LOCK").unlink()
    (trace_home / "LOCK").mkdir()
    run = cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "b.jsonl", 1)))
    assert run.code == 1 and "is a folder, not TRACE's lock file" in run.err


@pytest.mark.parametrize("content", [b"[1, 2]", b"null", b'"text"', b"5"])
def test_a_derived_json_record_holding_json_of_the_wrong_type_is_derived_damage(pristine, tmp_path, content):
    """Valid JSON that is not the object a record holds (a list, null, a
    string, a number) in any derived JSON file -- the vector index's
    description, Tantivy's meta, a checksum list, a context cache -- is
    damage like any other: verify exits 0 or 6, never an internal error;
    recall answers as before; `verify --repair` leaves a clean store."""
    store_src, files, expected = pristine
    for rel in [f for f in files if f.endswith(".json")]:
        store = tmp_path / rel.replace("/", "_") / content.decode()[:4].strip('"[')
        shutil.copytree(store_src, store, symlinks=True)
        (store / rel).write_bytes(content)

        def trace(*args):
            run = cli("--store", str(store), *args)
            assert "Traceback" not in run.err and "please report" not in run.err, (rel, args, run.err)
            return run
        assert trace("verify").code in (0, 6), rel
        assert [h["seq"] for h in trace(*QUERY).lines()] == expected, rel
        assert trace("verify", "--repair").code == 0, rel
        assert trace("verify").code == 0, rel


@pytest.fixture(scope="module")
def other_store(tmp_path_factory):
    """A second store of the same kind, with other sessions."""
    root = tmp_path_factory.mktemp("other")
    store = root / "other"
    from tests.conftest import SAMPLES
    assert cli("--store", str(store), "ingest", str(openai_conversations(root / "o.jsonl", 4, prefix="other"))).code == 0
    assert cli("--store", str(store), "ingest", str(SAMPLES / "codex")).code == 0
    return store


def test_a_foreign_hits_file_leaves_each_sessions_open_task_weighed_as_before(pristine, other_store, tmp_path):
    """The hit records of another store point the open-task lookup at other
    events: recall finds each session's task through the index's own
    columns instead, so every hit's task factor is what it was."""
    store_src, _, _ = pristine
    store = tmp_path / "store"
    shutil.copytree(store_src, store, symlinks=True)
    shutil.copy2(other_store / "fulltext/hits.bin", store / "fulltext/hits.bin")
    tasks = lambda s: {h["seq"]: h["scores"]["task"] for h in cli("--store", str(s), *QUERY, "--json").lines()}
    before = tasks(store_src)
    assert any(t > 1.0 for t in before.values())            # the query's hits sit in a session with an open task
    assert tasks(store) == before


@pytest.mark.parametrize("rel", ["fulltext/hits.bin", "fulltext/positions.db"])
def test_a_derived_file_copied_from_another_store_is_derived_damage_never_log_damage(pristine, other_store, tmp_path,
                                                                                      rel):
    """Its offsets point into this log where no line starts: that says the
    file is wrong, not the log. Readers and writers never exit 5 for it."""
    store_src, _, expected = pristine
    store = tmp_path / "store"
    shutil.copytree(store_src, store, symlinks=True)
    shutil.copy2(other_store / rel, store / rel)

    def trace(*args):
        run = cli("--store", str(store), *args)
        assert run.code != 5 and "Traceback" not in run.err and "please report" not in run.err, (args, run.err)
        return run

    assert trace("verify").code == 6
    assert trace("context", "--session", SESSION, "--format", "text").code == 0
    assert [h["seq"] for h in trace(*QUERY).lines()] == expected
    assert trace("ingest", str(openai_conversations(tmp_path / "new.jsonl", 1, prefix="later"))).code == 0
    assert trace("verify", "--repair").code == 0
    assert trace("verify").code == 0


_PIPES = ("fulltext/hits.bin", "fulltext/checksums.json", "fulltext/.managed.json", "fulltext/.tantivy-writer.lock",
          "fulltext/meta.json", "fulltext/positions.db", "vectors/checksums.json", "vectors/meta.json",
          "vectors/hnsw.bin", "state.db", "cache/")


@pytest.mark.parametrize("part", _PIPES)
def test_a_named_pipe_where_a_derived_file_belongs_is_derived_damage_and_nothing_waits_on_it(pristine, tmp_path,
                                                                                             part):
    """Opened to read, a named pipe waits for a writer that never comes:
    one standing in for hits.bin, a checksum list, Tantivy's file list or a
    context cache hung recall, context, ingest or verify for good (a cron
    job stuck forever). Each command runs as its own process with a
    deadline, so a regression fails here instead of stalling the suite."""
    import os
    store_src, files, expected = pristine
    rel = next(f for f in files if part in f) if not part.startswith("fulltext/.") else part
    store = tmp_path / "store"
    shutil.copytree(store_src, store, symlinks=True)
    (store / rel).unlink(missing_ok=True)
    os.mkfifo(store / rel)
    trace = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "trace"

    def run(*args) -> subprocess.CompletedProcess:
        done = subprocess.run([str(trace), "--store", str(store), *args], capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL, env={**os.environ, "TRACE_SERVE": "0"})
        assert "Traceback" not in done.stderr and "please report" not in done.stderr, (rel, args, done.stderr)
        return done

    verify = run("verify")
    assert verify.returncode == 6 and rel.split("/")[0] in verify.stderr, (rel, verify.stderr)
    assert [json.loads(line)["seq"] for line in run(*QUERY).stdout.splitlines()] == expected
    assert run("context", "--session", SESSION, "--format", "text").returncode == 0
    assert run("ingest", str(openai_conversations(tmp_path / "new.jsonl", 1, prefix="later"))).returncode == 0
    assert run("verify", "--repair").returncode == 0
    assert run("verify").returncode == 0
