"""Cron works as written: the lines `trace cron` prints (and the README's)
run under cron's bare environment, and a second run with nothing new
prints nothing and exits 0."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.helpers import cli

BARE_PATH = "/usr/bin:/bin"


def _cron_shell(line: str, home: Path) -> subprocess.CompletedProcess:
    command = re.split(r"\s{2,}", line.strip(), maxsplit=1)[1]      # drop the five schedule fields
    # as cron reads it (crontab(5)): an unescaped % ends the command (the rest
    # is its stdin), and \% is a plain %
    command = re.split(r"(?<!\\)%", command, maxsplit=1)[0].replace("\\%", "%")
    return subprocess.run(["env", "-i", f"HOME={home}", f"PATH={BARE_PATH}", "sh", "-c", command],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def cron_home(tmp_path, samples):
    home = tmp_path / "home"
    projects = home / ".claude" / "projects" / "demo"
    projects.mkdir(parents=True)
    shutil.copy(samples / "claude-code" / "demo-session.jsonl", projects / "s.jsonl")
    (home / ".codex" / "sessions").mkdir(parents=True)
    shutil.copy(samples / "codex" / "rollout-demo.jsonl", home / ".codex" / "sessions" / "r.jsonl")
    return home


def _ingest_line(lines: list[str]) -> str:
    return next(l for l in lines if " ingest " in l)


def test_the_printed_line_runs_under_cron_twice_and_the_second_run_is_silent(cron_home, tmp_path, monkeypatch):
    store = tmp_path / "store"
    monkeypatch.setenv("HOME", str(cron_home))
    run = cli("--store", str(store), "cron")
    assert run.code == 0
    line = _ingest_line(run.out.splitlines())
    assert line.split()[5].startswith("mkdir") and str(store) in line
    log = cron_home / ".local" / "state" / "trace" / "cron.log"
    first = _cron_shell(line, cron_home)
    assert first.returncode == 0, first.stderr
    assert (store / "segments").is_dir()
    events = cli("--store", str(store), "stats").lines()[0]["events"]
    assert events > 0
    size = log.stat().st_size
    second = _cron_shell(line, cron_home)
    assert second.returncode == 0 and second.stdout == second.stderr == ""
    assert log.stat().st_size == size                         # nothing printed into the log
    assert cli("--store", str(store), "stats").lines()[0]["events"] == events


def test_the_readme_crontab_line_works_for_this_clone(cron_home, tmp_path):
    readme = (REPO / "README.md").read_text()
    block = re.search(r"```cron\n(.*?)```", readme, re.S).group(1)
    store = tmp_path / "readme-store"
    line = _ingest_line(block.splitlines())
    line = line.replace("/home/me/trace", str(REPO)).replace("/home/me/.local/share/trace", str(store))
    assert _cron_shell(line, cron_home).returncode == 0
    second = _cron_shell(line, cron_home)
    assert second.returncode == 0 and second.stdout == second.stderr == ""
    log = cron_home / ".local" / "state" / "trace" / "cron.log"
    assert log.read_text() == ""
    assert cli("--store", str(store), "stats").lines()[0]["events"] > 0


def test_cron_names_this_install_by_absolute_path(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    lines = cli("cron", "--every", "10").out.splitlines()
    binary = lines[0].split("&&")[1].split()[0]
    assert Path(binary).is_absolute() and Path(binary).parent == Path(sys.executable).parent
    assert lines[0].startswith("*/10 * * * *")


def test_cron_refuses_a_time_that_is_not_one():
    run = cli("cron", "--nightly", "25:61")
    assert run.code == 2 and "HH:MM" in run.err


def _bad_transcript(path: Path) -> Path:
    path.write_text('{"role": "user", "content": "deploy the payments service"}\n'
                    'this line is not json\n'
                    '{"role": "assistant", "content": "deployed"}\n')
    return path


def test_a_file_with_bad_lines_reports_them_once_then_is_skipped(tmp_path):
    src = _bad_transcript(tmp_path / "chat.jsonl")
    first = cli("ingest", str(src))
    assert first.code == 1 and "chat.jsonl:2:" in first.err
    second = cli("ingest", str(src))
    assert second.code == 0 and second.out == "" and "chat.jsonl:2:" not in second.err
    again = cli("ingest", "--recheck", str(src))
    assert again.code == 1 and "chat.jsonl:2:" in again.err
    assert again.lines()[0]["added"] == 0                    # reading it again adds nothing twice
    with src.open("a") as f:
        f.write('{"role": "user", "content": "and roll back if it fails"}\n')
    grown = cli("ingest", str(src))
    assert grown.lines()[0]["added"] == 1


def test_unchanged_files_print_nothing_unless_verbose(samples):
    assert cli("ingest", str(samples)).code == 0
    quiet = cli("ingest", str(samples))
    assert quiet.code == 0 and quiet.out == ""
    verbose = cli("ingest", "--verbose", str(samples))
    assert verbose.lines() and all(r["unchanged"] for r in verbose.lines())


def test_quiet_leaves_only_errors(tmp_path, samples):
    good = cli("-q", "ingest", str(samples / "openai"))
    assert good.code == 0 and good.out == "" and good.err == ""
    bad = cli("ingest", str(_bad_transcript(tmp_path / "b.jsonl")), "-q")
    assert bad.code == 1 and [r["errors"] for r in bad.lines()] == [1] and "b.jsonl:2:" in bad.err


def test_an_empty_folder_says_so_and_exits_3(tmp_path):
    (tmp_path / "empty").mkdir()
    run = cli("ingest", str(tmp_path / "empty"))
    assert run.code == 3 and "no transcript files found" in run.err


def test_a_wrong_format_is_refused_naming_the_right_one(samples):
    run = cli("ingest", "--format", "claude-code", str(samples / "codex" / "rollout-demo.jsonl"))
    assert run.code == 1
    assert "its records are codex, not claude-code" in run.err and "--format codex" in run.err
    assert run.lines()[0]["added"] == 0
    assert cli("stats").lines()[0]["events"] == 0             # nothing written: no junk session to live with
    assert cli("ingest", "--format", "codex", str(samples / "codex" / "rollout-demo.jsonl")).code == 0


def test_the_nightly_line_runs_under_cron_even_when_a_path_holds_a_percent_sign(cron_home, tmp_path, monkeypatch):
    store = tmp_path / "100%store"                         # cron turns a bare % into a line break
    monkeypatch.setenv("HOME", str(cron_home))
    watched = tmp_path / "50%logs"
    shutil.copytree(cron_home / ".claude" / "projects", watched)
    lines = cli("--store", str(store), "cron", str(watched)).out.splitlines()
    assert len(lines) == 2
    ingest, nightly = lines
    assert _cron_shell(ingest, cron_home).returncode == 0
    assert cli("--store", str(store), "stats").lines()[0]["events"] > 0
    done = _cron_shell(nightly, cron_home)
    assert done.returncode == 0 and done.stdout == done.stderr == ""
    assert (store / "knowledge.jsonl").is_file()
    assert "payments.timeout_ms" in (cron_home / ".local" / "state" / "trace" / "digest.md").read_text()


def test_a_path_or_store_that_would_fail_every_run_is_named_with_its_fix(tmp_path, monkeypatch):
    """The lines still print (a folder may be made later), but stderr names
    each thing that would make every cron run exit 1, and stdout stays the
    crontab lines alone."""
    missing, present = tmp_path / "no" / "such", tmp_path / "logs"
    present.mkdir()
    run = cli("--store", str(tmp_path / "store"), "cron", str(missing), str(present))
    assert run.code == 0
    assert run.err.splitlines() == [f"trace: warning: {missing} does not exist, so the ingest line would fail "
                                    f"(exit 1) on every run: check the path (or create it before cron's first run)"]
    assert all(line.split()[0].startswith(("*/", "17")) for line in run.out.splitlines())
    assert str(missing) in _ingest_line(run.out.splitlines())

    locked = tmp_path / "locked"
    locked.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, *a, **k: False if Path(os.fsdecode(p)) == locked and mode & os.W_OK
                        else real(p, mode, *a, **k))
    run = cli("--store", str(locked), "cron", str(present))
    assert run.code == 0
    assert run.err.startswith(f"trace: warning: {locked} is not writable by you: every cron run will fail")
    assert "--store you can write" in run.err


def test_no_agent_folder_yet_is_a_warning_not_a_note_quiet_hides(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    run = cli("-q", "cron")
    assert run.code == 0 and "fails (exit 1) on every run" in run.err


def test_a_path_with_a_line_break_is_refused(tmp_path):
    run = cli("cron", str(tmp_path / "a\nb"))
    assert run.code == 2 and "line break" in run.err and run.out == ""


def test_a_path_you_cannot_read_is_named_with_the_chmod_that_fixes_it(tmp_path, monkeypatch):
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, *a, **k: False if Path(os.fsdecode(p)) == hidden and mode & os.R_OK
                        else real(p, mode, *a, **k))
    run = cli("--store", str(tmp_path / "store"), "cron", str(hidden))
    assert run.code == 0 and run.err.startswith(f"trace: warning: {hidden} cannot be read by you")
    assert f"chmod -R u+rX {hidden}" in run.err
