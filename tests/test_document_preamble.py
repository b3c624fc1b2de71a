"""A JSON document written after a few lines of a command's own text
(`opencode export > f` prints "Exporting session: ses_…" on stdout, on some
systems with no newline before the `{`, and plugins add log lines of their
own): the document is read, the text reported once and counted as ignored,
never an error; a JSONL file whose first line is bad stays an error at it."""
from __future__ import annotations

import json

import pytest

from stores.log.lookup import export_events
from stores.store import Store

EXPORT = {"info": {"id": "ses_p1", "title": "preamble", "time": {"created": 1781430000000}},
          "messages": [
              {"info": {"id": "msg_1", "sessionID": "ses_p1", "role": "user", "time": {"created": 1781430001000}},
               "parts": [{"id": "prt_1", "type": "text", "text": "run the tests"}]},
              {"info": {"id": "msg_2", "sessionID": "ses_p1", "role": "assistant", "time": {"created": 1781430002000}},
               "parts": [{"id": "prt_2", "type": "tool", "callID": "call_1", "tool": "bash",
                          "state": {"status": "completed", "input": {"command": "pytest -q"},
                                    "output": "7 passed in 0.31s (needle-4411)", "title": "pytest"}}]}]}
PRETTY = json.dumps(EXPORT, indent=2)


def _ingest(tmp_path, body: str):
    tmp_path.mkdir(parents=True, exist_ok=True)
    src = tmp_path / "export.json"
    src.write_text(body)
    said: list[str] = []
    store = Store(tmp_path / "store")
    (result,) = store.ingest([str(src)], on_error=said.append)
    return result, said, [e for e in export_events(store) if e["kind"] != "task_state"]


@pytest.mark.parametrize("before", [
    "Exporting session: ses_p1\n",
    "Exporting session: ses_p1",                                 # no newline before the document
    "[plugin] binary ready.\n[other] registered 5 tools: a, b\nExporting session: ses_p1\n",
])
def test_a_document_after_a_commands_text_is_read(tmp_path, before):
    result, said, events = _ingest(tmp_path, before + PRETTY + "\n")
    plain, _, want = _ingest(tmp_path / "plain", PRETTY)
    assert result.format == "opencode" and result.errors == 0 and result.ignored == 1
    assert [(e["kind"], e["text"]) for e in events] == [(e["kind"], e["text"]) for e in want]
    assert any("needle-4411" in e["text"] for e in events if e["kind"] == "tool_result")
    assert len(said) == 1 and "Exporting session: ses_p1" in said[0] and said[0].startswith(str(tmp_path))
    assert plain.ignored == 0


def test_text_then_jsonl_is_still_jsonl_with_a_bad_first_line(tmp_path):
    lines = ['{"role": "user", "content": "hi"}', '{"role": "assistant", "content": "hello"}']
    result, said, events = _ingest(tmp_path, "Exporting session: x\n" + "\n".join(lines) + "\n")
    assert result.errors == 1 and result.ignored == 0 and len(events) == 2
    assert said and ":1: not valid JSON" in said[0]


def test_text_then_a_broken_document_is_an_error(tmp_path):
    result, said, events = _ingest(tmp_path, "Exporting session: x\n" + PRETTY[:-40])
    assert result.errors >= 1 and events == []
