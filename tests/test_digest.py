"""`trace digest`: a pure, bounded writer; what does not fit is demoted to
linked detail pages, never dropped; a page edited by hand is never
overwritten (PAGE.proposed and a unified diff instead)."""
from __future__ import annotations

import os

import pytest

from reducers.digest import MIN_LINES, render_digest
from tests.helpers import cli
from tests.sessions import ClaudeSession


def _fact(key: str, value: str, importance: float, kind: str = "config", seq: int = 1) -> dict:
    return {"key": key, "label": key, "type": kind, "value": value, "importance": importance,
            "sources": [{"id": "e", "seq": seq}], "text": f"the {key} is {value}"}


def test_the_digest_keeps_its_bound_and_demotes_the_least_important_to_detail_pages():
    facts = [_fact(f"setting {i:02d}", str(i), i / 100, seq=i) for i in range(1, 41)]
    facts.append(_fact("database", "SQLite", 0.95, "decision", seq=99))
    episodes = [{"session_id": "s", "start_seq": 1, "end_seq": 9, "start_ts": "2026-05-01T09:00:00Z",
                 "events": 9, "topics": ["billing"], "summary": "set up billing"}]
    d = render_digest(facts, episodes, max_lines=12)
    lines = d.text.splitlines()
    assert len(lines) <= 12 and d.lines == len(lines)
    assert "- **database**: SQLite (`trace show 99`)" in lines
    assert lines[-1].startswith("More, less important: [Settings](digest.d/config.md)")
    shown = {ln.split("**")[1] for ln in lines if ln.startswith("- **")}
    demoted = {x["key"] for x in d.demoted}
    assert shown.isdisjoint(demoted) and len(shown) + len(demoted) == 41 + 0 or "episodes" in d.details
    assert min(f["importance"] for f in facts if f["key"] in shown) >= \
        max(f["importance"] for f in facts if f["key"] in demoted)           # lowest importance goes first
    for key in demoted - {"000000000001"}:
        assert f"**{key}**" in "".join(d.details.values())                    # moved, never dropped
    assert render_digest(facts, episodes, max_lines=12).text == d.text       # pure: same in, same out
    everything = render_digest(facts, episodes, max_lines=500)
    assert not everything.demoted and not everything.details and "More," not in everything.text
    with pytest.raises(ValueError):
        render_digest(facts, episodes, max_lines=MIN_LINES - 1)


def _swept_store(tmp_path):
    for day, said in (("2026-05-01", "We decided to use PostgreSQL for the database. Set the API timeout to 30s."),
                      ("2026-05-02", "Actually, use SQLite instead of PostgreSQL. The API timeout is now 45s.")):
        s = ClaudeSession(f"d-{day}", day=day).user(said).assistant("Noted.")
        cli("ingest", "--no-embed", str(s.write(tmp_path / f"{day}.jsonl")))
    assert cli("sweep").code == 0


def test_digest_prints_only_latest_values_and_writes_suggest_only(tmp_path, trace_home, monkeypatch):
    _swept_store(tmp_path)
    text = cli("digest").out
    assert "**database**: SQLite" in text and "**API timeout**: 45s" in text
    assert "PostgreSQL" not in text and "30s" not in text           # nor episodes that quote them: history
    history = (trace_home / "digest.d" / "episodes.md").read_text()
    assert "We decided to use PostgreSQL" in history and str(trace_home / "digest.d" / "episodes.md") in text
    target = tmp_path / "docs" / "MEMORY.md"
    missing = cli("digest", "--out", str(target))
    assert missing.code == 1 and "does not exist" in missing.err
    target.parent.mkdir()
    first = cli("digest", "--out", str(target))
    assert first.code == 0
    assert target.read_text().replace("digest.d/", str(trace_home / "digest.d") + "/") == text
    assert (target.parent / "digest.d" / "episodes.md").read_text() == history
    assert cli("digest", "--out", str(target)).lines()[0]["written"] == []     # unchanged: nothing to write
    monkeypatch.chdir(tmp_path)
    assert cli("digest", "--out", "-").out == text and not (tmp_path / "-").exists()   # - is stdout, not a file
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for device in ("/dev/null", fifo):          # nothing written beside them (no PAGE.proposed, no digest.d/)
        run = cli("digest", "--out", str(device))
        assert run.code == 1 and "not a regular file" in run.err and "--out -" in run.err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("pipe")) == ["pipe"]
    assert not os.path.exists("/dev/null.proposed")
    # a person edits the file; TRACE then proposes instead of overwriting
    edited = target.read_text() + "- our own note: deploys freeze on Fridays\n"
    target.write_text(edited)
    s = ClaudeSession("d-3", day="2026-05-03").user("The API timeout is now 60s.")
    cli("ingest", "--no-embed", str(s.write(tmp_path / "d3.jsonl")))
    cli("sweep")
    proposed = cli("digest", "--out", str(target))
    assert proposed.code == 0 and "edited by hand" in proposed.err
    assert target.read_text() == edited                                          # left as it is
    new = (tmp_path / "docs" / "MEMORY.md.proposed").read_text()
    assert "**API timeout**: 60s" in new
    assert proposed.out.startswith(f"--- {target}") and "-- **API timeout**: 45s" in proposed.out
    assert "+- **API timeout**: 60s" in proposed.out and "-- our own note" in proposed.out


def test_detail_pages_sit_beside_the_digest_and_are_linked(tmp_path, trace_home):
    _swept_store(tmp_path)
    target = tmp_path / "AGENTS-memory.md"
    r = cli("digest", "--out", str(target), "--max-lines", "5")
    assert r.code == 0 and "moved to detail pages" in r.err
    text = target.read_text()
    assert len(text.splitlines()) <= 5 and "digest.d/" in text
    pages = list((tmp_path / "digest.d").glob("*.md"))
    assert pages and all(p.read_text().startswith("# ") for p in pages)
    # with room again, the pages nobody edited and nothing links go away (history stays)
    cli("digest", "--out", str(target), "--max-lines", "80")
    assert [p.name for p in (tmp_path / "digest.d").glob("*.md")] == ["episodes.md"]
    assert cli("digest", "--max-lines", "2").code == 2


def test_the_smallest_digest_it_accepts_still_shows_an_entry_when_some_must_move():
    facts = [_fact(f"setting {i}", str(i), 0.5, seq=i) for i in range(1, 4)]
    smallest = render_digest(facts, [], max_lines=MIN_LINES)
    lines = smallest.text.splitlines()
    assert len(lines) <= MIN_LINES
    assert any(ln.startswith("- **") for ln in lines)        # a title, a note, a heading, one entry, the link line
    assert lines[-1].startswith("More, less important:")
    with pytest.raises(ValueError, match="heading"):
        render_digest(facts, [], max_lines=MIN_LINES - 1)


@pytest.mark.parametrize("said,secret", [
    ("my password is hunter2", "hunter2"),
    ("the db password is Tr0ub4dor&3 btw", "Tr0ub4dor&3"),
    ("My password for staging is \"open sesame\", ok?", "open sesame"),
    ("wifi pin: 4321.", "4321"),
])
def test_a_credential_said_in_an_episode_s_first_line_is_masked_on_the_page(said, secret, tmp_path, trace_home):
    # the redactor keeps short, word-like values said in prose (they read as
    # prose), so the log holds them; the page meant for CLAUDE.md must not
    said_ = ClaudeSession("creds", day="2026-05-10").user(said).assistant("Noted.")
    assert cli("ingest", "--no-embed", str(said_.write(tmp_path / "s.jsonl"))).code == 0
    assert cli("sweep").code == 0
    page = cli("digest").out
    assert "## Recent episodes" in page and "[redacted]" in page
    assert secret not in page


def test_a_state_said_of_a_secret_is_not_masked():
    episodes = [{"session_id": "s", "start_seq": 1, "end_seq": 2, "start_ts": "2026-05-01T09:00:00Z", "events": 2,
                 "summary": "The token is expired and the API key is in the vault"}]
    text = render_digest([], episodes, max_lines=12).text
    assert "The token is expired and the API key is in the vault" in text
