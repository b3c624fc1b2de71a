"""Reading an artifact checks it: the id is the sha256 of the original bytes,
so altered content or a damaged gzip is an integrity failure (exit 5, one
line naming the artifact and `trace verify`), never bytes served as if whole.
Reading streams in bounded pieces however well the content compressed."""
from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path

import pytest

from stores.log.artifacts import ArtifactDamaged, ArtifactStore
from tests.helpers import cli

OUTPUT = "".join(f"line {i}: build step ok\n" for i in range(3000))


def _with_artifact(tmp_path, trace_home) -> tuple[str, Path]:
    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps({"messages": [
        {"role": "user", "content": "run it"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                              "function": {"name": "sh", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": OUTPUT},
        {"role": "assistant", "content": "done"}]}) + "\n")
    assert cli("ingest", str(src)).code == 0
    (event,) = [e for e in cli("export", "--no-artifacts").lines() if e.get("artifact")]
    path = ArtifactStore(trace_home).path_for(event["artifact"]["id"])
    path.chmod(0o600)
    return str(event["seq"]), path


def _altered(path):
    path.write_bytes(gzip.compress(OUTPUT.replace("line 7:", "LINE 7:").encode()))


def _bit_flipped(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _cut_short(path):
    path.write_bytes(path.read_bytes()[:-40])


def _trailing_bytes(path):
    path.write_bytes(path.read_bytes() + b"extra")


def _deleted(path):
    path.unlink()


DAMAGE = {"altered": (_altered, "sha256"), "corrupt": (_bit_flipped, "corrupt"),
          "cut short": (_cut_short, "cut short"), "trailing": (_trailing_bytes, "after the end"),
          "missing": (_deleted, "is missing")}


def test_an_intact_artifact_is_shown_byte_exact(tmp_path, trace_home):
    seq, _ = _with_artifact(tmp_path, trace_home)
    run = cli("show", seq, "--full")
    assert run.code == 0 and run.out == OUTPUT


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("command", [("show", "{seq}", "--full"), ("show", "{seq}", "--full", "--json"), ("export",)])
def test_reading_a_damaged_artifact_in_full_exits_5_naming_it(tmp_path, trace_home, damage, command):
    seq, path = _with_artifact(tmp_path, trace_home)
    spoil, why = DAMAGE[damage]
    spoil(path)
    run = cli(*(arg.format(seq=seq) for arg in command))
    assert run.code == 5, run.err
    assert path.name[:-3] in run.err and why in run.err and "trace verify" in run.err
    assert run.err.count("\n") == 1 and "report it" not in run.err
    assert OUTPUT.replace("line 7:", "LINE 7:") not in run.out      # never the whole altered copy


@pytest.mark.parametrize("damage", DAMAGE)
def test_verify_names_what_is_wrong_with_an_artifact(tmp_path, trace_home, damage):
    seq, path = _with_artifact(tmp_path, trace_home)
    spoil, why = DAMAGE[damage]
    spoil(path)
    run = cli("verify")
    assert run.code == 5 and path.name[:16] in run.err and why in run.err


@pytest.mark.parametrize("size", [0, 1, (1 << 20) - 1, 1 << 20, 3 * (1 << 20) + 7])
def test_any_content_reads_back_exactly(tmp_path, size):
    arts = ArtifactStore(tmp_path)
    data = os.urandom(size)
    artifact_id, _ = arts.put_chunks([data[:size // 2], data[size // 2:]])
    assert artifact_id == hashlib.sha256(data).hexdigest()
    assert arts.read(artifact_id) == data and arts.check(artifact_id) is None


def test_reading_streams_in_pieces_of_at_most_a_mebibyte_however_well_it_compressed(tmp_path):
    arts = ArtifactStore(tmp_path)
    artifact_id, _ = arts.put_chunks(b"\0" * (1 << 20) for _ in range(16))   # 16 MiB, ~16 KB of gzip
    pieces = [len(p) for p in arts.iter_bytes(artifact_id)]
    assert sum(pieces) == 16 << 20 and max(pieces) <= 1 << 20


def test_the_last_piece_waits_for_the_check(tmp_path):
    arts = ArtifactStore(tmp_path)
    data = os.urandom(3 << 20)
    artifact_id, _ = arts.put(data)
    path = arts.path_for(artifact_id)
    path.write_bytes(gzip.compress(data[:-1] + b"!"))
    got = []
    with pytest.raises(ArtifactDamaged):
        for piece in arts.iter_bytes(artifact_id):
            got.append(piece)
    assert 0 < sum(map(len, got)) < len(data)


def test_reading_only_a_prefix_is_not_an_error(tmp_path):
    arts = ArtifactStore(tmp_path)
    artifact_id, _ = arts.put(os.urandom(3 << 20))
    first = next(iter(arts.iter_bytes(artifact_id)))        # how the index reads a searchable prefix
    assert 0 < len(first) <= 1 << 20
