"""Images, documents and audio in transcripts are kept whole: the event's
text holds a placeholder where the block was, and the block itself, exactly
as the source gave it, is an attachment in the artifact store — exported,
re-imported and verified like everything else."""
from __future__ import annotations

import base64
import gzip
import json

import orjson
import pytest

from reducers.media import block_bytes
from stores.store import Store
from tests.helpers import cli

PNG = base64.b64encode(b"\x89PNG\r\n" + bytes(range(256)) * 8).decode()
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
OPENAI_IMAGE = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def claude_code(tmp_path):
    base = {"sessionId": "s1", "timestamp": "2026-01-01T00:00:00Z"}
    return _write(tmp_path / "cc.jsonl", [
        {**base, "type": "user", "uuid": "u1", "message": {"role": "user", "content": [
            {"type": "text", "text": "look at this"}, IMAGE]}},
        {**base, "type": "assistant", "uuid": "a1", "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Screenshot", "input": {}}]}},
        {**base, "type": "user", "uuid": "u2", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "shot"}, IMAGE]}]}}])


def openai(tmp_path):
    return _write(tmp_path / "oa.jsonl", [{"messages": [
        {"role": "user", "content": [{"type": "text", "text": "look at this"}, OPENAI_IMAGE]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "screenshot", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "t1", "content": [{"type": "text", "text": "shot"}, OPENAI_IMAGE]}]}])


def anthropic(tmp_path):
    path = tmp_path / "an.json"
    path.write_text(json.dumps({"model": "claude", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "look at this"}, IMAGE]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "screenshot", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": [{"type": "text", "text": "shot"}, IMAGE]}]}]}))
    return path


def codex(tmp_path):
    codex_image = {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"}
    line = lambda t, p: {"timestamp": "2026-01-01T00:00:00Z", "type": t, "payload": p}
    return _write(tmp_path / "rollout.jsonl", [
        line("session_meta", {"id": "cx1", "cwd": "/tmp"}),
        line("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "look at this"}, codex_image]}),
        line("response_item", {"type": "function_call", "name": "view_image", "arguments": "{}", "call_id": "t1"}),
        line("response_item", {"type": "function_call_output", "call_id": "t1", "output": [
            {"type": "input_text", "text": "shot"}, codex_image]})])


@pytest.mark.parametrize("make", [claude_code, openai, anthropic, codex])
def test_an_image_is_kept_whole_as_an_attachment_in_every_format(tmp_path, trace_home, make):
    assert cli("ingest", str(make(tmp_path))).code == 0
    events = cli("export").lines()
    with_media = [e for e in events if (e.get("meta") or {}).get("attachments")]
    assert [e["kind"] for e in with_media] == ["user", "tool_result"]
    store = Store(trace_home)
    for e in with_media:
        # the placeholder stays in the text (Codex, like its UI, counts images beside typed text)
        assert "[image]" in e["text"] or e["meta"].get("images") == 1
        (att,) = e["meta"]["attachments"]
        block = orjson.loads(store.artifacts.read(att["id"]))
        assert PNG in json.dumps(block) and att["media_type"] == "image/png"
        assert e["attachments_content"] == [block]            # export carries them
        assert store.artifacts.read(att["id"]) == block_bytes(block)


def test_export_then_import_into_an_empty_store_keeps_the_attachments(tmp_path, monkeypatch):
    cli("ingest", str(claude_code(tmp_path)))
    exported = cli("export").out
    (tmp_path / "export.jsonl").write_text(exported)
    monkeypatch.setenv("TRACE_HOME", str(tmp_path / "copy"))
    assert cli("ingest", "--format", "trace", str(tmp_path / "export.jsonl")).code == 0
    assert _stable(cli("export").out) == _stable(exported)   # the same events, the same attachment bytes
    assert cli("verify").code == 0


def _stable(jsonl: str) -> list[dict]:
    """Events without what the append itself stamps (wall time, chain)."""
    return [{k: v for k, v in json.loads(line).items() if k not in ("ingested_at", "hash", "prev")}
            for line in jsonl.splitlines()]


def test_verify_notices_an_altered_attachment(tmp_path, trace_home):
    cli("ingest", str(claude_code(tmp_path)))
    att = next(e for e in cli("export").lines() if (e.get("meta") or {}).get("attachments"))["meta"]["attachments"][0]
    path = Store(trace_home).artifacts.path_for(att["id"])
    path.chmod(0o600)
    path.write_bytes(gzip.compress(b'{"type":"image","source":"swapped"}'))
    result = cli("verify")
    assert result.code == 5 and att["id"][:16] in result.err + result.out


def test_secrets_in_a_caption_are_redacted_but_the_payload_is_untouched(tmp_path):
    payload = PNG[:40] + "AKIAIOSFODNN7EXAMPLE" + PNG[40:]          # a key-shaped run inside base64
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": payload},
             "alt": "token=ghp_abcdefghijklmnopqrstuvwxyz0123456789"}
    path = _write(tmp_path / "oa.jsonl", [{"messages": [{"role": "user", "content": [
        {"type": "text", "text": "see"}, block]}]}])
    cli("ingest", str(path))
    (event,) = cli("export").lines()
    (stored,) = event["attachments_content"]
    assert stored["source"]["data"] == payload
    assert "ghp_" not in stored["alt"] and "REDACTED" in stored["alt"]


def test_an_image_too_big_for_memory_streams_into_its_attachment(tmp_path):
    big = base64.b64encode(bytes(range(256)) * 40_000).decode()      # ~13.6 MB: the line is decoded in chunks
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": big}}
    path = _write(tmp_path / "oa.jsonl", [{"messages": [{"role": "user", "content": [
        {"type": "text", "text": "huge"}, block]}]}])
    assert cli("ingest", str(path)).code == 0
    (event,) = cli("export").lines()
    assert event["attachments_content"] == [block]


@pytest.mark.parametrize("block, expected", [
    (IMAGE, "image/png"),                                                        # Anthropic / Claude Code
    (OPENAI_IMAGE, "image/png"),                                                 # a data: URL
    ({"type": "input_image", "image_url": "data:image/jpeg;base64,AAAA"}, "image/jpeg"),   # Codex
    ({"type": "image_url", "image_url": {"url": "https://example.org/cat.png"}}, None),    # a link says nothing
    ({"type": "file", "file": {"filename": "q3.pdf", "file_data": "data:application/pdf;base64,JVBE"}},
     "application/pdf"),
])
def test_the_media_type_is_read_from_any_layout(block, expected):
    from reducers.media import media_type
    assert media_type(block) == expected


def test_a_link_with_a_token_in_it_is_redacted():
    from reducers.media import redact_block
    block = {"type": "image_url", "image_url": {"url": "https://x.invalid/cat.png?token=ghp_" + "a1" * 18}}
    out, n = redact_block(block)
    assert n == 1 and "ghp_" not in json.dumps(out) and block["image_url"]["url"].startswith("https://")


def test_an_imported_event_whose_attachments_are_elsewhere_is_kept_with_a_warning(tmp_path):
    cli("ingest", str(claude_code(tmp_path)))
    lines = [json.loads(line) for line in cli("export").out.splitlines()]
    for e in lines:
        e.pop("attachments_content", None)                   # exported without its blobs
    (tmp_path / "bare.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    result = cli("--store", str(tmp_path / "other"), "ingest", "--format", "trace", str(tmp_path / "bare.jsonl"))
    assert result.code == 0 and result.lines()[0]["added"] == len(lines)
    assert result.err.count("which this store does not hold") == 2      # two real ids


def test_an_imported_event_naming_an_attachment_that_is_no_id_is_a_bad_line(tmp_path):
    cli("ingest", str(claude_code(tmp_path)))
    lines = [json.loads(line) for line in cli("export").out.splitlines()]
    holder = next(i for i, e in enumerate(lines) if (e.get("meta") or {}).get("attachments"))
    lines[holder]["meta"]["attachments"].append({"id": "../../etc/passwd"})
    (tmp_path / "bare.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    result = cli("--store", str(tmp_path / "other"), "ingest", "--format", "trace", str(tmp_path / "bare.jsonl"))
    assert result.code == 1 and result.lines()[0]["added"] == len(lines) - 1
    assert f"bare.jsonl:{holder + 1}: meta.attachments is not a list of {{id: <64 hex>, ...}}" in result.err
    assert cli("--store", str(tmp_path / "other"), "verify").code == 0
