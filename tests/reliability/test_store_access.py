"""A store the user cannot write is not a damaged store. TRACE writes to its
store even to read it (the writer lock, SQLite's shared memory beside a
WAL database, Tantivy's locks), so SQLite's "attempt to write a readonly
database" must never be reported as state.db damage (exit 6), nor make a
writer discard and rebuild anything: every command says the store is not
writable and how to fix it, exits 1, and leaves every file as it was."""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import orjson
import pytest

from stores.integrity.access import unwritable
from tests.helpers import cli

WRITERS = (["ingest"], ["index"], ["reindex"], ["note", "add", "-c", "decision", "keep it"], ["verify"],
           ["verify", "--repair"])


@pytest.fixture
def store(trace_home, samples) -> Path:
    assert cli("ingest", "--no-embed", str(samples / "claude-code")).code == 0
    return trace_home


def _fingerprint(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


def _deny(monkeypatch, denied: Path) -> None:
    """access(2) as a user who may not write `denied` (a folder: nor
    anything in it) sees it; root passes every permission bit, so the
    real refusal is tested below by a process that is not root."""
    real = os.access

    def access(path, mode, *args, **kwargs):
        p = Path(os.fsdecode(path))
        if mode & os.W_OK and (p == denied or denied in p.parents):
            return False
        return real(path, mode, *args, **kwargs)
    monkeypatch.setattr(os, "access", access)


@pytest.mark.parametrize("what", ["the store folder", "state.db"])
@pytest.mark.parametrize("argv", WRITERS, ids=" ".join)
def test_a_store_you_cannot_write_is_one_line_naming_the_fix_not_damage(store, samples, monkeypatch, argv, what):
    denied = store if what == "the store folder" else store / "state.db"
    before = _fingerprint(store)
    _deny(monkeypatch, denied)
    extra = [str(samples / "codex")] if argv == ["ingest"] else []
    run = cli(*argv, *extra)
    assert run.code == 1, (run.code, run.err)
    lines = run.err.strip().splitlines()
    assert len(lines) == 1 and "not writable" in lines[0] and str(denied) in lines[0]
    assert f"chmod -R u+w {store}" in lines[0]
    assert "Traceback" not in run.err and "damage" not in run.err and "rebuil" not in run.err
    assert run.out == ""
    assert _fingerprint(store) == before


def test_readers_that_can_answer_from_the_log_say_why_state_db_was_not_read(store, monkeypatch):
    """stats (and sessions) count from the log when state.db cannot be read;
    when SQLite refused because the store is not writable, the warning says
    so instead of blaming state.db."""
    import sqlite3

    import stores.stats as stats_module
    _deny(monkeypatch, store)

    def refuse(*args, **kwargs):
        raise sqlite3.OperationalError("attempt to write a readonly database")
    monkeypatch.setattr(stats_module, "_recorded_counts", refuse)
    run = cli("stats", "--json")
    assert run.code == 0
    assert run.lines()[0]["events"] > 0
    assert "not writable" in run.err and f"chmod -R u+w {store}" in run.err
    assert "rebuilds it" not in run.err


def test_a_store_not_made_yet_needs_a_parent_you_can_write(tmp_path, monkeypatch):
    parent = tmp_path / "locked"
    parent.mkdir()
    _deny(monkeypatch, parent)
    assert unwritable(parent / "a" / "store") == f"{parent} is not writable by you to create the store in"
    assert unwritable(tmp_path / "free" / "store") is None


def test_a_user_who_is_not_the_owner_gets_the_line_and_the_store_is_untouched(samples):
    """The real refusal: a process that is not root (root's own one, when
    the tests run as root, turned into `nobody` after a fork) runs the
    commands on a store it may read but not write."""
    root = Path(tempfile.mkdtemp(prefix="trace-access-"))
    try:
        os.chmod(root, 0o755)
        store = root / "store"
        assert cli("--store", str(store), "ingest", "--no-embed", str(samples / "claude-code")).code == 0
        assert cli("--store", str(store), "verify").code == 0           # loads every module verify needs
        for p in [store, *store.rglob("*")]:
            os.chmod(p, 0o555 if p.is_dir() else 0o444)
        before = _fingerprint(store)
        results = _as_another_user(store, [["verify"], ["ingest", str(samples / "codex")], ["stats", "--json"]])
        for p in [store, *store.rglob("*")]:
            os.chmod(p, 0o700 if p.is_dir() else 0o600)
        verify, ingest, stats = results
        for run in (verify, ingest):
            assert run["code"] == 1, run
            assert "not writable" in run["err"] and "state.db" not in run["err"].split("(")[0], run
        assert stats["code"] == 0, stats                     # reading what it can still works
        assert _fingerprint(store) == before
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _as_another_user(store: Path, commands: list[list[str]]) -> list[dict]:
    """Each command's {code, err}, run by a process that does not own the
    store: this user when not root, else `nobody` (after a fork, so the
    modules already loaded serve it)."""
    if os.geteuid() != 0:
        return [{"code": (r := cli("--store", str(store), *argv)).code, "err": r.err} for argv in commands]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                                       # the child: never returns into pytest
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            out = [{"code": (r := cli("--store", str(store), *argv)).code, "err": r.err} for argv in commands]
            os.write(write, orjson.dumps(out))
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    if not data:
        pytest.fail("the child running as nobody reported nothing")
    return orjson.loads(data)


def test_a_file_someone_else_left_in_the_store_does_not_stop_the_writers(store, samples, monkeypatch):
    (store / "README.txt").write_text("notes a user keeps here\n")
    _deny(monkeypatch, store / "README.txt")
    assert unwritable(store) is None
    assert cli("ingest", "--no-embed", str(samples / "codex")).code == 0
