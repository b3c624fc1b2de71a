"""Text too big for an event goes to the artifact store; the event keeps a
head/tail preview. Text in memory and text streamed from spilled strings
must come out the same."""
from __future__ import annotations

import hashlib

import pytest

import stores.log.externalize
from reducers.tokens import count_tokens
from reducers.truncate import middle_stub
from stores.log.artifacts import ArtifactStore
from stores.ingest.big_lines import SpillRegistry
from stores.log.externalize import Externalizer

OUTPUT = "".join(f"row {i}: é 🙂 \"quoted\"\n" for i in range(4000)) + "last row, no newline"


@pytest.fixture
def spills():
    registry = SpillRegistry()
    yield registry
    registry.cleanup()


def _spilled(spills: SpillRegistry, before: str, body: str, after: str) -> str:
    """The text a parser hands on when the middle of a line was spilled."""
    marker, f = spills.new_file()
    with f:
        f.write(body.encode("utf-8"))
    return before + marker + after


@pytest.mark.parametrize("redact_secrets", [True, False])
def test_a_streamed_text_stores_the_same_bytes_and_preview_as_one_in_memory(tmp_path, spills, redact_secrets):
    artifacts = ArtifactStore(tmp_path)
    ext = Externalizer(artifacts, spills, redact_secrets=redact_secrets)
    before, after = "$ ./report\n", "\n[exit 0]"
    full = before + OUTPUT + after

    streamed, stream_preview, redacted = ext.stream(_spilled(spills, before, OUTPUT, after))
    in_memory, memory_preview = Externalizer(artifacts, None, redact_secrets=redact_secrets).text(full)

    assert redacted == 0
    assert streamed["id"] == in_memory["id"] == hashlib.sha256(full.encode()).hexdigest()
    assert artifacts.read(streamed["id"]) == full.encode()
    assert streamed["bytes"] == in_memory["bytes"] == len(full.encode())
    # Tokens are counted per streamed piece: a token across a join may count twice.
    assert 0 <= streamed["tokens"] - count_tokens(full) <= 2
    assert stream_preview.startswith(f"Total output lines: {full.count(chr(10)) + 1}\n")
    head, _, tail = stream_preview.partition("tokens truncated…")
    assert head.split("\n…")[0] == memory_preview.split("\n…")[0]
    assert tail == memory_preview.partition("tokens truncated…")[2]


def test_secrets_in_a_streamed_text_are_redacted_and_counted(tmp_path, spills):
    artifacts = ArtifactStore(tmp_path)
    secret = "sk-" + "Q7" * 20
    text = _spilled(spills, "env:\n", OUTPUT + f"\nOPENAI_API_KEY={secret}\n", "done")
    ref, preview, redacted = Externalizer(artifacts, spills, redact_secrets=True).stream(text)
    stored = artifacts.read(ref["id"]).decode()
    assert redacted == 1 and secret not in stored and secret not in preview
    assert "[REDACTED:" in stored and stored.endswith("done")


def test_without_redaction_a_streamed_text_is_stored_as_it_came(tmp_path, spills):
    artifacts = ArtifactStore(tmp_path)
    body = OUTPUT + "\nOPENAI_API_KEY=sk-" + "Q7" * 20 + "\n"
    ref, _, redacted = Externalizer(artifacts, spills, redact_secrets=False).stream(_spilled(spills, "", body, ""))
    assert redacted == 0 and artifacts.read(ref["id"]) == body.encode()


def test_an_output_seen_again_gets_its_first_preview_without_making_it_again(tmp_path, monkeypatch):
    made = []
    monkeypatch.setattr(stores.log.externalize, "middle_stub",
                        lambda *a, **kw: made.append(1) or middle_stub(*a, **kw))
    ext = Externalizer(ArtifactStore(tmp_path), None, redact_secrets=True)
    first_ref, first = ext.text(OUTPUT)
    again_ref, again = ext.text(OUTPUT)
    assert again_ref == first_ref and again == first and len(made) == 1
    assert "tokens truncated…" in first and first.endswith(f"(artifact {first_ref['id'][:12]})]")


def test_a_preview_the_event_already_has_is_kept(tmp_path):
    ext = Externalizer(ArtifactStore(tmp_path), None, redact_secrets=True)
    ref, preview = ext.text(OUTPUT, preview="an exported event's own preview")
    assert preview == "an exported event's own preview"
    assert ref["tokens"] == count_tokens(OUTPUT) and ref["sha256"] == ref["id"]


def test_the_preview_cache_stays_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(stores.log.externalize, "_PREVIEWS", 3)
    ext = Externalizer(ArtifactStore(tmp_path), None, redact_secrets=True)
    refs = [ext.text(f"{i}\n{OUTPUT}")[0]["id"] for i in range(5)]
    assert list(ext._previews) == refs[-3:]
