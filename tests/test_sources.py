"""Reading a JSONL transcript: every record once, with its own line number,
whatever the line endings, blank lines, a last line without its newline or
where the read chunks happen to cut; a bad line is an error at its line."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import stores.ingest.sources as sources
from stores.ingest.big_lines import SpillRegistry
from stores.ingest.sources import Source, SourceError, read_records, sniff

LINES = [b'{"n": 1}', b"", b"   ", b'{"n": 2}\r', b"not json", b'{"n": "three \xc3\xa9"}', b"", b'[4]']


def _read(path, spills):
    out = []
    for item in read_records(Source(str(path), path, str(path)), spills):
        out.append(("error", item.line) if isinstance(item, SourceError) else item)
    return out


@pytest.mark.parametrize("chunk", [3, 7, 64, 1 << 20])
@pytest.mark.parametrize("final_newline", [True, False])
def test_records_keep_their_line_numbers_wherever_chunks_cut(tmp_path, monkeypatch, chunk, final_newline):
    monkeypatch.setattr(sources, "_READ_CHUNK", chunk)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join(LINES) + (b"\n" if final_newline else b""))
    spills = SpillRegistry()
    try:
        assert _read(path, spills) == [(1, {"n": 1}), (4, {"n": 2}), ("error", 5), (6, {"n": "three é"}), (8, [4])]
    finally:
        spills.cleanup()


def test_detection_reads_the_file_once_and_parsing_goes_on_from_what_it_read(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "SNIFF_RECORDS", 2)
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps({"n": i}) if i != 1 else "oops" for i in range(5)) + "\n")
    records = read_records(Source(str(path), path, str(path)), SpillRegistry())
    samples, head = sniff(records)
    assert samples == [{"n": 0}, {"n": 2}]
    assert [h if not isinstance(h, SourceError) else ("error", h.line) for h in head] == \
        [(1, {"n": 0}), ("error", 2), (3, {"n": 2})]
    assert list(records) == [(4, {"n": 3}), (5, {"n": 4})]


def test_a_directory_gives_each_file_its_real_absolute_path_as_source_id(tmp_path, monkeypatch):
    """The source id feeds derived session ids: it must be the file's real
    path however the directory was named (relative, through a symlink) and
    whether the file itself is a symlink."""
    real = tmp_path / "real"
    (real / "b").mkdir(parents=True)
    (real / "a.jsonl").write_text("{}\n")
    (real / "b" / "c.jsonl").write_text("{}\n")
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text("{}\n")
    (real / "b" / "link.jsonl").symlink_to(elsewhere)
    (tmp_path / "alias").symlink_to(real)
    monkeypatch.chdir(tmp_path)
    for arg in ("real", "alias", str(tmp_path / "alias"), "alias/b/../"):
        found = [(s.display, s.source_id) for s in sources.expand_inputs([arg])]
        assert [sid for _, sid in found] == [str(Path(d).resolve()) for d, _ in found]
        assert sorted(sid for _, sid in found) == sorted([str(real / "a.jsonl"), str(real / "b" / "c.jsonl"),
                                                          str(elsewhere)])


def test_a_directory_walk_reports_a_dangling_link_and_passes_over_a_fifo(tmp_path):
    import os
    (tmp_path / "a.jsonl").write_text("{}\n")
    (tmp_path / "dangling.jsonl").symlink_to(tmp_path / "gone.jsonl")
    os.mkfifo(tmp_path / "pipe.jsonl")                 # opening it would block the run (and the lock) forever
    found = list(sources.expand_inputs([str(tmp_path)]))
    assert [s.display for s in found if isinstance(s, Source)] == [str(tmp_path / "a.jsonl")]
    assert [str(s) for s in found if isinstance(s, sources.MissingSource)] == [
        f"{tmp_path / 'dangling.jsonl'}: a link to a file that is not there"]


def test_a_symlinked_folder_is_walked_once_and_a_link_back_up_the_tree_is_no_loop(tmp_path):
    tree, moved = tmp_path / "projects", tmp_path / "other-disk" / "proj-b"
    (tree / "proj-a").mkdir(parents=True)
    moved.mkdir(parents=True)
    (tree / "proj-a" / "s1.jsonl").write_text("{}\n")
    (moved / "s2.jsonl").write_text("{}\n")
    (tree / "proj-b").symlink_to(moved)                # a session folder moved to another disk
    (tree / "proj-b-again").symlink_to(moved)          # a second way to the same folder
    (tree / "proj-a" / "up").symlink_to(tree)          # a cycle
    found = list(sources.expand_inputs([str(tree)]))
    assert all(isinstance(s, Source) for s in found)
    assert [(s.display, s.source_id) for s in found] == [
        (str(tree / "proj-a" / "s1.jsonl"), str(tree / "proj-a" / "s1.jsonl")),
        (str(tree / "proj-b" / "s2.jsonl"), str(moved / "s2.jsonl"))]


@pytest.mark.parametrize("name, body", [("bom.jsonl", b'{"role": "user", "content": "hi"}\n'),
                                        ("bom.json", b'[{"role": "user", "content": "hi"}]')])
def test_a_utf8_byte_order_mark_is_not_part_of_the_first_record(tmp_path, name, body):
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + body)
    items = list(read_records(Source(str(path), path, str(path)), SpillRegistry()))
    assert items == [(1, {"role": "user", "content": "hi"}) if name.endswith("l") else
                     (1, [{"role": "user", "content": "hi"}])]


def test_pretty_printed_documents_written_one_after_another_are_records_at_their_first_lines(tmp_path):
    first = {"messages": [{"role": "user", "content": "one"}]}
    second = {"messages": [{"role": "user", "content": "tab\there"}]}
    body = json.dumps(first, indent=2) + "\n" + json.dumps(second, indent=2).replace("\\t", "\t") + "\n"
    path = tmp_path / "pretty.jsonl"
    path.write_text(body)          # the second holds a raw tab inside a string, as some tools write it
    assert _read(path, SpillRegistry()) == [(1, first), (len(json.dumps(first, indent=2).splitlines()) + 1, second)]


def test_a_document_with_garbage_after_it_is_still_one_error(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{\n  "messages": []\n}\nthis is not json\n')
    assert _read(path, SpillRegistry()) == [("error", 1)]
