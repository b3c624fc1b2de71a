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


def test_a_text_documents_data_is_text_and_its_secrets_are_redacted():
    from reducers.media import redact_block
    env = "DB_HOST=db.internal\nDB_PASSWORD=correcthorse\nSTRIPE_KEY=sk_live_" + "4eC3" * 8 + "\n" + "# pad\n" * 60
    for block in ({"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": env}},
                  {"type": "file", "file": {"file_data": "data:text/plain," + env, "filename": "x.env"}}):
        out, n = redact_block(block)
        assert n == 2 and "correcthorse" not in str(out) and "4eC3" not in str(out)
    # a base64 payload, in a data: URL or under data, is bytes: untouched
    b64 = PNG[:40] + "AKIAIOSFODNN7EXAMPLE" + PNG[40:]
    for block in ({"type": "image_url", "image_url": {"url": "data:image/png;base64," + b64}},
                  {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}}):
        assert redact_block(block) == (block, 0)


def test_a_text_document_sent_as_base64_has_its_secrets_redacted_inside_and_stays_base64():
    """An .env attached as data:text/plain;base64,… (OpenCode's file parts)
    or as an Anthropic base64 document of a text type holds its keys in
    the encoded bytes: decoded, redacted, encoded again. Binary payloads
    without a secret in their bytes (above) are kept byte for byte."""
    from reducers.media import redact_block
    env = "DB_HOST=db.internal\nDB_PASSWORD=correcthorse\nSTRIPE_KEY=sk_live_" + "4eC3" * 8 + "\n"
    b64 = base64.b64encode(env.encode()).decode()
    for block in ({"type": "file", "mime": "text/plain", "filename": ".env", "url": "data:text/plain;base64," + b64},
                  {"type": "document", "source": {"type": "base64", "media_type": "text/plain", "data": b64}},
                  {"type": "document", "source": {"type": "base64", "media_type": "application/json",
                                                  "data": base64.b64encode(b'{"token": "' + b"9x" * 20 + b'"}').decode()}}):
        out, n = redact_block(block)
        encoded = out.get("url") or out["source"]["data"]
        decoded = base64.b64decode(encoded.split(",", 1)[-1]).decode()
        assert n >= 1 and "REDACTED" in decoded and "correcthorse" not in decoded and "4eC3" * 8 not in decoded
        assert "9x9x9x" not in decoded


def test_a_text_document_too_big_for_memory_is_redacted_as_it_streams_into_its_attachment(tmp_path, monkeypatch):
    """A spilled string inside a block (a log attached whole) is streamed
    through the redactor; a spilled image (above) is kept byte for byte."""
    import stores.ingest.big_lines
    import stores.ingest.sources
    monkeypatch.setattr(stores.ingest.sources, "_READ_CHUNK", 8192)
    monkeypatch.setattr(stores.ingest.sources, "BIG_LINE_BYTES", 20_000)
    monkeypatch.setattr(stores.ingest.big_lines, "SPILL_CHARS", 5_000)
    monkeypatch.setattr(stores.ingest.big_lines, "_CHUNK", 4096)
    keys = [f"ghp_{i:02d}" + "Ab3" * 12 for i in range(8)]
    log = "".join(f"line {i}: all good\n" + (f"export GITHUB_TOKEN={keys[i // 500]}\n" if i % 500 == 250 else "")
                  for i in range(4000))
    block = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": log}}
    path = _write(tmp_path / "oa.jsonl", [{"messages": [{"role": "user", "content": [
        {"type": "text", "text": "read the log"}, block]}]}])
    assert cli("ingest", str(path)).code == 0
    (event,) = cli("export").lines()
    (stored,) = event["attachments_content"]
    data = stored["source"]["data"]
    assert [k for k in keys if k in data] == [] and data.count("[REDACTED:") == len(keys)
    assert data.replace("[REDACTED:github_token]", "K") == "".join(
        f"line {i}: all good\n" + ("export GITHUB_TOKEN=K\n" if i % 500 == 250 else "") for i in range(4000))


@pytest.mark.parametrize("raw", [
    "café=1\nDB_PASSWORD=correcthorse\nSTRIPE_KEY=sk_live_".encode("latin-1") + b"4eC3" * 8 + b"\n",   # latin-1
    b"\xff\xfe" + b"DB_PASSWORD=correcthorse\nSTRIPE_KEY=sk_live_" + b"4eC3" * 8,                     # a stray BOM
    b"\x89PNG\r\n" + bytes(range(256)) * 4 + b"tEXt\x00token=sk_live_" + b"4eC3" * 8 + b"\x00" + bytes(300),
    b"\x7fELF" + bytes(200) + b"\x00DB_PASSWORD=correcthorse\x00" + bytes(range(128, 256)),         # a binary
])
@pytest.mark.parametrize("mime", ["text/plain", "image/png", "application/octet-stream"])
def test_a_payload_whose_bytes_are_not_utf8_has_its_ascii_secrets_redacted_and_every_other_byte_kept(raw, mime):
    """Whatever the declared type and encoding, the ASCII secrets in a
    base64 payload's bytes go; every byte outside them is kept."""
    from reducers.media import redact_block
    b64 = base64.b64encode(raw).decode()
    for block in ({"type": "image", "source": {"type": "base64", "media_type": mime, "data": b64}},
                  {"type": "file", "url": f"data:{mime};base64,{b64}"}):
        out, n = redact_block(block)
        encoded = out.get("url") or out["source"]["data"]
        stored = base64.b64decode(encoded.split(",", 1)[-1])
        assert n >= 1 and b"correcthorse" not in stored and b"4eC3" * 8 not in stored
        kept = stored.replace(b"[REDACTED:stripe_key]", b"").replace(b"[REDACTED:secret_value]", b"")
        assert kept == raw.replace(b"sk_live_" + b"4eC3" * 8, b"").replace(b"correcthorse", b"")


def test_a_payload_declared_base64_that_is_not_base64_is_redacted_as_text():
    from reducers.media import redact_block
    block = {"type": "document", "source": {"type": "base64", "media_type": "text/plain",
                                            "data": "DB_PASSWORD=correcthorse and more words"}}
    out, n = redact_block(block)
    assert n == 1 and "correcthorse" not in out["source"]["data"]


@pytest.mark.parametrize("mime", ["text/plain", "image/png"])
def test_a_payload_too_big_for_memory_has_the_secrets_in_its_bytes_redacted_as_it_streams(tmp_path, monkeypatch, mime):
    """A base64 payload spilled to disk (over SPILL_CHARS) is decoded and
    scanned as it streams; one with a secret is streamed again, encoded
    with the secret replaced; one without stays byte for byte."""
    import stores.ingest.big_lines
    import stores.ingest.sources
    monkeypatch.setattr(stores.ingest.sources, "_READ_CHUNK", 8192)
    monkeypatch.setattr(stores.ingest.sources, "BIG_LINE_BYTES", 20_000)
    monkeypatch.setattr(stores.ingest.big_lines, "SPILL_CHARS", 5_000)
    monkeypatch.setattr(stores.ingest.big_lines, "_CHUNK", 4096)
    keys = [f"ghp_{i:02d}" + "Ab3" * 12 for i in range(4)]
    raw = b"".join(b"\xe9t\xe9 line %d\n" % i + (f"export GITHUB_TOKEN={keys[i // 1000]}\n".encode()
                                                   if i % 1000 == 500 else b"") for i in range(4000))
    clean = bytes(range(256)) * 200
    blocks = [{"type": "image", "source": {"type": "base64", "media_type": mime,
                                           "data": base64.b64encode(raw).decode()}},
              {"type": "file", "url": f"data:{mime};base64," + base64.b64encode(clean).decode()}]
    path = _write(tmp_path / "oa.jsonl", [{"messages": [{"role": "user", "content": [
        {"type": "text", "text": "read the log"}, *blocks]}]}])
    assert cli("ingest", str(path)).code == 0
    (event,) = cli("export").lines()
    secret, untouched = event["attachments_content"]
    stored = base64.b64decode(secret["source"]["data"])
    assert [k for k in keys if k.encode() in stored] == [] and stored.count(b"[REDACTED:github_token]") == 4
    assert stored.replace(b"[REDACTED:github_token]", b"K") == b"".join(
        b"\xe9t\xe9 line %d\n" % i + (b"export GITHUB_TOKEN=K\n" if i % 1000 == 500 else b"") for i in range(4000))
    assert untouched == blocks[1]
