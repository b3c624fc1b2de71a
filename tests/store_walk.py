"""Walking a whole store for strings: every file's bytes, every string in
every JSON line, every cell of every SQLite table (and the JSON kept in a
cell), every term and stored field of the Tantivy index, and the text a
base64 data: URL of a text type carries. `leaks` names where planted
secrets turn up (tests/test_redaction_everywhere.py)."""
from __future__ import annotations

import base64
import binascii
import gzip
import json
import re
import sqlite3
from pathlib import Path

import orjson
from ahocorasick_rs import AhoCorasick

_DATA_URL = re.compile(r"data:[\w.+-]+/[\w.+-]+(?:;[\w=.-]+)*;base64,([A-Za-z0-9+/=]+)")


def _decoded(text: str) -> list[str]:
    """The text each base64 data: URL in `text` carries (an attachment's)."""
    out = []
    for m in _DATA_URL.finditer(text):
        try:
            out.append(base64.b64decode(m.group(1)).decode("utf-8", "replace"))
        except (binascii.Error, ValueError):
            pass
    return out


def _strings(value, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            out.append(str(k))
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def _json_lines(data: bytes, where: str, out: list[tuple[str, str]]) -> None:
    for i, line in enumerate(data.splitlines()):
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            out.append((f"{where}:{i + 1}", line.decode("utf-8", "replace")))
            continue
        found: list[str] = []
        _strings(value, found)
        out.extend((f"{where}:{i + 1}", s) for s in found)


def _sqlite(path: Path, where: str, out: list[tuple[str, str]]) -> None:
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in db.execute(f'SELECT * FROM "{table}"'):
                for cell in row:
                    if isinstance(cell, bytes):
                        cell = cell.decode("utf-8", "replace")
                    if isinstance(cell, str):
                        out.append((f"{where}:{table}", cell))
                        if cell[:1] in "[{":                  # JSON kept in a column
                            try:
                                found: list[str] = []
                                _strings(json.loads(cell), found)
                                out.extend((f"{where}:{table}", s) for s in found)
                            except ValueError:
                                pass
    finally:
        db.close()


def _tantivy(index_dir: Path, out: list[tuple[str, str]]) -> None:
    import tantivy
    index = tantivy.Index.open(str(index_dir))
    searcher = index.searcher()
    schema = json.loads((index_dir / "meta.json").read_text())["schema"]
    for field in schema:
        if field["type"] == "text":
            for term, _ in searcher.terms_with_prefix(field["name"], ""):
                out.append((f"tantivy term {field['name']}", term))
    hits = searcher.search(tantivy.Query.all_query(), limit=max(searcher.num_docs, 1)).hits
    for _, address in hits:
        for name, values in searcher.doc(address).to_dict().items():
            out.extend((f"tantivy stored {name}", str(v)) for v in values)


def store_strings(root: Path) -> list[tuple[str, str]]:
    """(where, text) for every string the store holds, file by file, in
    the form a reader would see it."""
    out: list[tuple[str, str]] = []
    tantivy_dirs = {m.parent for m in root.rglob("meta.json") if (m.parent / ".managed.json").exists()}
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        where = str(path.relative_to(root))
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        if data[:16] == b"SQLite format 3\x00":
            _sqlite(path, where, out)
        elif path.suffix in (".jsonl", ".json") or path.name in ("retrievals.jsonl", "lost-events.log"):
            _json_lines(data, where, out)
        # every file's raw text too (index segments, quarantined torn lines, anything new)
        text = data.decode("utf-8", "replace")
        out.append((where, text))
        out.extend((f"{where} (base64 data: URL)", t) for t in _decoded(text))
    for index_dir in tantivy_dirs:
        _tantivy(index_dir, out)
    return out


_RUN = re.compile(r"[A-Za-z0-9]{12,}")


def leaks(root: Path, planted: dict[str, list[str]]) -> dict[str, list[str]]:
    """placement -> where its secrets were found. A secret counts as found
    in the text when it is there whole (as is or JSON-escaped, as a raw
    line holds it), and in an index term when one of its runs of 12+
    letters and digits is (terms are lowercased parts)."""
    strings = store_strings(root)
    texts = "\n".join(s for where, s in strings if not where.startswith("tantivy term"))
    terms = "\n".join(s for where, s in strings if where.startswith("tantivy term"))
    whole, runs = [], []                             # (needle, placement, part)
    for placement, parts in planted.items():
        for part in parts:
            for form in {part, json.dumps(part)[1:-1]}:
                whole.append((form, placement, part))
            runs.extend((r.lower(), placement, part) for r in _RUN.findall(part))
    found: dict[tuple[str, str], set[str]] = {}
    for needles, haystack, label in ((whole, texts, "text"), (runs, terms, "index term")):
        if not needles or not haystack:
            continue
        automaton = AhoCorasick([n for n, _, _ in needles])
        for i, _, _ in automaton.find_matches_as_indexes(haystack, overlapping=True):
            _, placement, part = needles[i]
            found.setdefault((placement, part), set()).add(label)
    out: dict[str, list[str]] = {}
    for (placement, part), where in sorted(found.items()):
        out.setdefault(placement, []).append(f"{part[:24]}… in {', '.join(sorted(where))}")
    return out


