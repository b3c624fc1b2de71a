"""Defect 6: one bad line never costs another line, and one bad path never
another path. Each case below lost a whole file or a whole run before."""
from __future__ import annotations

import json
import os

from stores.store import Store
from tests.helpers import cli, openai_conversations


def _chat(path, *texts, first: str | None = None):
    lines = [first] if first is not None else []
    lines += [json.dumps({"messages": [{"role": "user", "content": t}, {"role": "assistant", "content": f"re {t}"}]})
              for t in texts]
    path.write_text("\n".join(lines) + "\n")
    return path


def _texts(home) -> list[str]:
    return [e["text"] for e in Store(home).events()]


def test_a_bad_first_line_costs_that_line_only_with_or_without_format(tmp_path, trace_home):
    src = _chat(tmp_path / "chat.jsonl", "alpha", "beta", first='{"messages": [ this is not json')
    for args in (["--format", "openai"], []):
        run = cli("ingest", "--no-embed", *args, str(src))
        assert run.code == 1 and f"{src}:1: not valid JSON" in run.err
        assert run.lines()[0]["errors"] == 1
    assert _texts(trace_home) == ["alpha", "re alpha", "beta", "re beta"]


def test_a_5000_digit_number_costs_nothing_else_in_any_layout(tmp_path, trace_home):
    huge = "9" * 5000
    line = _chat(tmp_path / "n.jsonl", "before", "after",
                 first='{"messages": [{"role": "user", "content": "big", "n": ' + huge + '}]}')
    doc = tmp_path / "doc.json"
    doc.write_text('{"messages": [{"role": "user", "content": "in a document", "n": ' + huge + '}]}')
    pretty = tmp_path / "pretty.json"          # documents one after another, the second holding the number
    pretty.write_text(json.dumps({"messages": [{"role": "user", "content": "first doc"}]}, indent=1) + "\n"
                      + '{"messages": [{"role": "user", "content": "second doc", "n": ' + huge + '}]}\n')
    other = openai_conversations(tmp_path / "other.jsonl", 2)
    run = cli("ingest", "--no-embed", str(line), str(doc), str(pretty), str(other))
    assert run.code == 0, run.err
    assert [r["errors"] for r in run.lines()] == [0, 0, 0, 0]
    texts = _texts(trace_home)
    for text in ("big", "before", "after", "in a document", "first doc", "second doc"):
        assert text in texts
    assert sum(1 for r in run.lines() if r["added"]) == 4


def test_json_nested_1000_deep_keeps_the_rest_of_the_file_and_itself(tmp_path, trace_home):
    deep = '{"messages": [{"role": "user", "content": "deep one", "x": ' + "[" * 1000 + "]" * 1000 + "}]}"
    src = _chat(tmp_path / "deep.jsonl", "one", "two", "three")
    lines = src.read_text().splitlines()
    src.write_text("\n".join([lines[0], deep, *lines[1:]]) + "\n")
    run = cli("ingest", "--no-embed", str(src))
    assert run.code == 0, run.err
    assert _texts(trace_home) == ["one", "re one", "deep one", "two", "re two", "three", "re three"]
    assert Store(trace_home).verify(check_indexes=False).ok


def test_a_record_the_parser_fails_on_costs_that_record_only(tmp_path, trace_home, monkeypatch):
    import reducers.formats.openai as openai
    real = openai.parse

    def failing(records, ctx):
        def watched():
            for line, rec in records:
                if "poison" in json.dumps(rec):
                    raise RuntimeError("a parser bug")
                yield line, rec
        yield from real(watched(), ctx)
    monkeypatch.setattr(openai, "parse", failing)
    src = _chat(tmp_path / "chat.jsonl", "one", "two", "poison", "four", "five")
    run = cli("ingest", "--no-embed", "--format", "openai", str(src))
    assert run.code == 1
    assert f"{src}:3: could not read this record (RuntimeError: a parser bug)" in run.err
    (result,) = run.lines()
    assert result["added"] == 8 and result["skipped"] == 0 and result["errors"] == 1
    assert _texts(trace_home) == ["one", "re one", "two", "re two", "four", "re four", "five", "re five"]
    again = cli("ingest", "--no-embed", "--recheck", "--format", "openai", str(src)).lines()[0]
    assert again["added"] == 0 and again["skipped"] == 8              # nothing doubled


def test_an_unreadable_directory_is_reported_and_the_other_paths_ingest(tmp_path, trace_home, monkeypatch):
    tree = tmp_path / "tree"
    (tree / "locked").mkdir(parents=True)
    _chat(tree / "locked" / "a.jsonl", "hidden")
    _chat(tree / "open.jsonl", "visible")
    other = _chat(tmp_path / "other.jsonl", "elsewhere")
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("locked"):          # what a directory without r/x permission does
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)
    monkeypatch.setattr(os, "scandir", scandir)
    run = cli("ingest", "--no-embed", str(tree), str(other))
    assert run.code == 1
    assert f"{tree / 'locked'}: cannot read this directory (Permission denied)" in run.err
    assert _texts(trace_home) == ["visible", "re visible", "elsewhere", "re elsewhere"]


def test_a_path_inside_an_unsearchable_directory_costs_only_that_path(tmp_path, trace_home, monkeypatch):
    other = _chat(tmp_path / "other.jsonl", "elsewhere")
    hidden = tmp_path / "shut" / "x.jsonl"
    real_stat = os.stat

    def stat(path, *a, **k):
        if "shut" in os.fspath(path):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_stat(path, *a, **k)
    monkeypatch.setattr(os, "stat", stat)
    run = cli("ingest", "--no-embed", str(hidden), str(other))
    assert run.code == 1 and f"{hidden}: cannot look at it (Permission denied)" in run.err
    assert _texts(trace_home) == ["elsewhere", "re elsewhere"]


def test_a_wrong_typed_meta_source_or_artifact_content_costs_its_line_only(tmp_path, trace_home):
    from tests.helpers import trace_events
    from tests.reliability.poison import trace_line
    src = trace_events(tmp_path / "t.jsonl", [trace_line(1), trace_line(2, meta=5), trace_line(3, source="s"),
                                              trace_line(4, artifact_content=7), trace_line(5)])
    run = cli("ingest", "--no-embed", str(src))
    assert run.code == 1 and run.lines()[0]["added"] == 2
    for n, why in ((2, "meta is not an object"), (3, "source is not an object"),
                   (4, "artifact_content is not a string")):
        assert f"{src}:{n}: {why}" in run.err


def _opencode_session(path, bad_time):
    def message(i, role, text, time):
        return {"info": {"id": f"msg_{i}", "sessionID": "ses_x", "role": role, "time": time},
                "parts": [{"id": f"prt_{i}", "type": "text", "text": text}]}
    path.write_text(json.dumps({"info": {"id": "ses_x", "title": "t", "time": {"created": 1781430000000}},
                                "messages": [message(0, "user", "first question", {"created": 1781430001000}),
                                             message(1, "assistant", "broken answer", bad_time),
                                             message(2, "user", "second question", {"created": 1781430003000})]}))
    return path


def _anthropic_request(path, bad_block):
    path.write_text(json.dumps({"model": "claude", "messages": [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": [{"type": "text", "text": "broken answer"}, bad_block]},
        {"role": "user", "content": [{"type": "text", "text": "second question"}]}]}))
    return path


def _openai_conversation(path, bad_block):
    path.write_text(json.dumps({"messages": [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": [{"type": "text", "text": "broken answer"}, bad_block]},
        {"role": "user", "content": "second question"}]}) + "\n")
    return path


def test_a_wrong_typed_field_in_one_message_of_a_whole_session_costs_that_message_only(tmp_path, trace_home):
    """A document that holds a whole session (OpenCode's export, an API
    request body) is one record: a message inside it whose fields the parser
    cannot read is reported as `file:1: message N: …`; the other messages
    are kept."""
    cases = [_opencode_session(tmp_path / "a.json", 5), _opencode_session(tmp_path / "b.json", "noon"),
             _anthropic_request(tmp_path / "c.json", {"type": {"nested": 1}, "text": 5}),
             _anthropic_request(tmp_path / "d.json", {"type": ["image"], "source": None}),
             _openai_conversation(tmp_path / "e.jsonl", {"type": {"x": 1}, "image_url": 7})]
    for src in cases:
        home = tmp_path / f"home-{src.stem}"
        os.environ["TRACE_HOME"] = str(home)
        run = cli("ingest", "--no-embed", str(src))
        assert "Traceback" not in run.err and "please report it" not in run.err, run.err
        texts = _texts(home)
        assert "first question" in texts and "second question" in texts, (src.name, texts, run.err)
        if not any("broken answer" in t for t in texts):
            assert run.code == 1 and f"{src}:1: message 1: could not read it" in run.err, run.err
        assert Store(home).verify(check_indexes=False).ok


def _trace_event(n: int, **fields) -> str:
    from tests.reliability.poison import trace_line
    return json.dumps(trace_line(n, **fields))      # "\ud800" stays a JSON escape: a lone surrogate once read


def test_an_identifier_that_is_not_valid_unicode_is_a_bad_line_and_the_store_stays_usable(tmp_path, trace_home):
    """A lone surrogate (a JSON "\\ud800" escape) in a session id, turn id,
    dedupe key or event id is a bad line with its reason: such text cannot
    go into SQLite or a JSON key. In a text it stands as U+FFFD."""
    lone = "x\ud800y"
    src = tmp_path / "t.jsonl"
    src.write_text("\n".join([
        _trace_event(1, session_id=lone), _trace_event(2, turn_id=lone),
        _trace_event(3, source={"format": "openai", "path": "p", "line": 3, "key": lone}),
        _trace_event(4, id="01J" + lone + "0" * 21), _trace_event(5, text="kept " + lone),
        _trace_event(6)]) + "\n")
    run = cli("ingest", "--no-embed", str(src))
    assert run.code == 1
    for line in (1, 2, 3, 4):
        assert f"{src}:{line}: " in run.err and "valid Unicode" in run.err
    assert [e["text"] for e in Store(trace_home).events()] == ["kept x\ufffdy", "marmalade question number 6"]
    assert cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "more.jsonl", 1))).code == 0
    assert cli("recall", "marmalade").code == 0
    assert cli("verify").code == 0


def test_an_imported_event_whose_own_id_is_no_ulid_leaves_the_store_writable(tmp_path, trace_home):
    """An imported event keeps its own id, which may be any short string;
    the next writer mints its ids without reading that one as a ULID."""
    src = tmp_path / "t.jsonl"
    src.write_text(_trace_event(1, id="my-own-event-id") + "\n" + _trace_event(2, id="Z" * 26) + "\n")
    assert cli("ingest", "--no-embed", str(src)).code == 0
    assert cli("ingest", "--no-embed", str(openai_conversations(tmp_path / "more.jsonl", 1))).code == 0
    assert cli("recall", "marmalade").code == 0
    assert cli("verify").code == 0


def test_a_session_id_that_is_not_valid_unicode_is_reported_in_a_result_that_is_valid_json(tmp_path, trace_home):
    """The whole-session document's id holds a lone surrogate: each event
    is a bad line with its reason, and the result line naming the session
    is still printed, as JSON any reader can parse."""
    src = _opencode_session(tmp_path / "s.json", {"created": 1781430002000})
    src.write_text(src.read_text().replace('"ses_x"', '"ses_\\ud800x"'))
    run = cli("ingest", "--no-embed", str(src))
    assert run.code == 1 and "please report it" not in run.err
    assert "session_id is not a non-empty string of valid Unicode" in run.err
    (result,) = run.lines()
    assert result["session_id"] == "ses_\ud800x" and result["added"] == 0 and result["errors"] >= 3
    assert cli("verify").code == 0
