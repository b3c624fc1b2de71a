"""hnsw.bin is checked before hnswlib loads it: hnswlib trusts the file, and
a neighbour id the disk changed (size and time kept, so no stat check sees
it) sends its graph walk outside its arrays, a segmentation fault. A writer
rebuilds such a graph from the log; a reader answers by an exact scan."""
from __future__ import annotations

import json
import os
import random

from stores.index.hnsw_file import HEADER, hnsw_problem
from stores.index.vectors import VectorIndex
from stores.store import Store
from tests.helpers import cli
from trace_cli.bench.needles import build_session


def _store(tmp_path, trace_home):
    s = build_session(turns=200, needles=6, seed=5, tag="g")
    path = tmp_path / "g.json"
    path.write_text(json.dumps(s.messages))
    assert cli("ingest", str(path), "--session", "g").code == 0
    assert cli("index").code == 0
    return s, trace_home / "vectors" / "hnsw.bin"


def _rot_links(path, element: int = 3) -> None:
    """Element `element`'s level-0 links point past the last element, as
    flipped bits would; the file keeps its size and mtime."""
    data = bytearray(path.read_bytes())
    _, _, _, size, *_, max_m0, _m, _mult, _ef = HEADER.unpack_from(data, 0)
    at = HEADER.size + element * size
    data[at:at + 2] = max_m0.to_bytes(2, "little")
    data[at + 4:at + 4 + 4 * max_m0] = b"\xff\xff\xff\x7f" * max_m0
    st = os.stat(path)
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_sound_graph_passes_and_rotted_links_are_named(tmp_path, trace_home):
    _, path = _store(tmp_path, trace_home)
    dim = json.loads((path.parent / "meta.json").read_text())["dim"]
    assert hnsw_problem(path, dim) is None
    whole = path.read_bytes()
    _rot_links(path)
    assert "link" in hnsw_problem(path, dim)
    path.write_bytes(whole[:40])                                 # shorter than its header
    assert "cannot be read" in hnsw_problem(path, dim)
    path.write_bytes(whole[:-8])                                 # cut inside its upper levels
    assert "ends part-way" in hnsw_problem(path, dim)
    path.write_bytes(whole + b"\0" * 8)                          # something written after it
    assert "after its last element" in hnsw_problem(path, dim)
    assert "header" in hnsw_problem(path, dim + 1)               # not the layout this dimension gives


def test_a_file_cut_inside_an_element_s_upper_levels_is_named_as_cut_short(tmp_path, trace_home):
    """Which elements reach the upper levels varies from build to build (the
    graph is built by threads): the cut lands inside one that does."""
    import numpy as np
    _, path = _store(tmp_path, trace_home)
    dim = json.loads((path.parent / "meta.json").read_text())["dim"]
    data = path.read_bytes()
    _, _, count, size, *_ = HEADER.unpack_from(data, 0)
    start = HEADER.size + count * size
    words = np.frombuffer(data[start:], dtype=np.uint32).tolist()
    at, inside = 0, None
    for _ in range(count):
        n_bytes = words[at]
        if n_bytes:
            inside = start + 4 * (at + 1) + 4           # past its size and its first link count
        at += 1 + n_bytes // 4
    assert inside is not None, "no element reached an upper level"
    path.write_bytes(data[:inside])
    assert "ends part-way" in hnsw_problem(path, dim)


def test_random_rot_is_either_named_or_harmless_to_the_check(tmp_path, trace_home):
    _, path = _store(tmp_path, trace_home)
    dim = json.loads((path.parent / "meta.json").read_text())["dim"]
    data, rng, named = path.read_bytes(), random.Random(9), 0
    for _ in range(40):
        b = bytearray(data)
        start = rng.randrange(len(b) - 64)
        for i in range(start, start + 64):
            b[i] ^= 0x5A
        path.write_bytes(bytes(b))
        named += hnsw_problem(path, dim) is not None     # never raises, whatever the bytes
    assert named > 0


def test_a_writer_rebuilds_rotted_links_from_the_log_before_adding(tmp_path, trace_home):
    s, path = _store(tmp_path, trace_home)
    _rot_links(path)
    more = build_session(turns=20, needles=1, seed=6, tag="h")
    extra = tmp_path / "h.json"
    extra.write_text(json.dumps(more.messages))
    run = cli("ingest", str(extra), "--session", "h")
    assert run.code == 0, run.err
    assert "vectors/hnsw.bin" in run.err and "rebuilt" in run.err
    dim = json.loads((path.parent / "meta.json").read_text())["dim"]
    assert hnsw_problem(path, dim) is None
    assert cli("recall", s.needles[0].query, "--mode", "vector").code == 0
    clean = tmp_path / "clean"                  # the rebuilt index holds each event once, as a fresh store does
    for name, f in (("g", tmp_path / "g.json"), ("h", extra)):
        assert cli("--store", str(clean), "ingest", str(f), "--session", name).code == 0
    assert VectorIndex(Store().dir).count == VectorIndex(clean).count > 0


def test_a_reader_searching_twice_scans_instead_of_loading_rotted_links(tmp_path, trace_home):
    _, path = _store(tmp_path, trace_home)
    sound = VectorIndex(Store().dir)
    query = sound.embedder().embed_query("payroll sync port")
    want = sound.search(query, 10)
    _rot_links(path)
    rotted = VectorIndex(Store().dir)
    first = rotted.search(query, 10)           # a process's first search scans
    second = rotted.search(query, 10)          # the second would load the graph: it scans again
    assert [s for s, _ in first] == [s for s, _ in second] == [s for s, _ in want]
