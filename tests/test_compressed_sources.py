"""Codex compresses rollouts older than a week to `.jsonl.zst` (cli 0.152+),
so a cron job over ~/.codex/sessions meets them: they ingest exactly like
the plain file, are skipped unread while unchanged, and a damaged one is
one error that leaves the rest of the folder ingested."""
from __future__ import annotations

import glob
import tempfile

import zstandard

from stores.log.lookup import export_events
from stores.store import Store


def _compress(src, dest):
    dest.write_bytes(zstandard.ZstdCompressor().compress(src.read_bytes()))
    return dest


def _events(store: Store) -> list[tuple]:
    return [(e["session_id"], e["kind"], e["text"], (e.get("tool") or {}).get("call_id"), e["source"]["key"])
            for e in export_events(store, with_artifacts=False)]


def test_a_compressed_rollout_ingests_as_its_plain_copy_and_the_copy_adds_nothing(samples, tmp_path):
    plain = samples / "codex" / "rollout-paginated.jsonl"
    packed = _compress(plain, tmp_path / "rollout-2026-10-02T08-14-00-019c7e21.jsonl.zst")
    from_packed, from_plain = Store(tmp_path / "a"), Store(tmp_path / "b")
    [r] = list(from_packed.ingest([str(packed)], embed=False))
    [p] = list(from_plain.ingest([str(plain)], embed=False))
    assert (r.format, r.added, r.errors) == ("codex", p.added, 0) and r.added > 0
    assert _events(from_packed) == _events(from_plain)
    assert {e["source"]["path"] for e in export_events(from_packed, with_artifacts=False)} == {str(packed)}
    [again] = list(from_packed.ingest([str(plain)], embed=False))     # Codex writes it out plain again on append
    assert again.added == 0 and again.skipped == r.added


def test_an_unchanged_compressed_rollout_is_skipped_without_being_read_again(samples, tmp_path):
    (tmp_path / "sessions").mkdir()
    packed = _compress(samples / "codex" / "rollout-demo.jsonl", tmp_path / "sessions" / "r.jsonl.zst")
    store = Store(tmp_path / "s")
    [first] = list(store.ingest([str(tmp_path / "sessions")], embed=False))     # the folder walk finds it
    [second] = list(store.ingest([str(packed)], embed=False))
    assert first.added > 0 and second.unchanged and second.added == 0 and second.skipped == first.added


def test_a_damaged_compressed_file_is_one_error_and_the_rest_of_the_folder_ingests(samples, tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "a-broken.jsonl.zst").write_bytes(b"not zstd at all\n")
    _compress(samples / "codex" / "rollout-demo.jsonl", folder / "b-good.jsonl.zst")
    before = set(glob.glob(f"{tempfile.gettempdir()}/trace-zst-*"))
    broken, good = list(Store(tmp_path / "s").ingest([str(folder)], embed=False))
    assert broken.errors == 1 and broken.added == 0
    assert broken.error.startswith(f"{folder / 'a-broken.jsonl.zst'}: cannot read it (not readable zstd data")
    assert good.errors == 0 and good.added > 0
    assert set(glob.glob(f"{tempfile.gettempdir()}/trace-zst-*")) == before      # no decompressed copy left behind


def test_a_damaged_compressed_file_is_reported_once_until_it_changes(samples, tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    broken = folder / "broken.jsonl.zst"
    broken.write_bytes(b"not zstd at all\n")
    store = Store(tmp_path / "s")
    [first] = list(store.ingest([str(folder)], embed=False))
    [second] = list(store.ingest([str(folder)], embed=False))
    assert first.errors == 1 and second.unchanged and second.errors == 0
    _compress(samples / "codex" / "rollout-demo.jsonl", broken)         # replaced by a readable rollout
    [third] = list(store.ingest([str(folder)], embed=False))
    assert third.errors == 0 and third.added > 0


def test_a_compressed_rollout_cut_inside_its_frame_is_pending_until_it_is_whole(samples, tmp_path):
    whole = zstandard.ZstdCompressor().compress((samples / "codex" / "rollout-demo.jsonl").read_bytes())
    packed = tmp_path / "r.jsonl.zst"
    packed.write_bytes(whole[: len(whole) // 2])          # still being written (or cut short)
    store, notes = Store(tmp_path / "s"), []
    [cut] = list(store.ingest([str(packed)], embed=False, on_error=notes.append))
    assert cut.errors == 0 and cut.pending >= 1          # not "is it a transcript?": left for the next run
    assert any("zstd data ends inside a frame" in n for n in notes)
    packed.write_bytes(whole)
    [done] = list(store.ingest([str(packed)], embed=False))
    plain = Store(tmp_path / "plain")
    [p] = list(plain.ingest([str(samples / "codex" / "rollout-demo.jsonl")], embed=False))
    assert done.errors == 0 and done.pending == 0 and cut.added + done.added == p.added
    assert _events(store) == _events(plain)
