"""Reading one session through the full-text index, at a cost that follows
what is read, never the rest of the store.

Every query names the session and a seq range; the index stores where each
event lives (segment, offset), so an event is one seek away. Walking a
session backwards goes in growing seq windows (a narrow range query is
cheap, a whole-session sort is not), and events are read in batches, one
open per segment, in file order."""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterator

from reducers.event_schema import conform
from stores.index.fulltext_search import KIND_NAMES
from stores.log.segments import misplaced_event, sealed_event, segment_name

PAGE = 256
FIRST_WINDOW = 1024              # seqs in the first backward window; it doubles while it comes back thin


def _reopen(ft):
    """A second try at opening the index (a concurrent commit can make one
    open fail), then an error that says why."""
    from stores.errors import TraceError
    from stores.index.fulltext import FulltextIndex
    again = FulltextIndex(ft.dir.parent)
    index = again.open()
    if index is not None:
        return index
    reason = "it is missing or of an older schema" if not again.usable() else "it could not be opened"
    try:
        import tantivy
        tantivy.Index.open(str(again.dir))
    except Exception as exc:                           # the engine's own words, for the report
        reason = f"{reason} ({type(exc).__name__}: {str(exc)[:160]})"
    raise TraceError(f"the full-text index is not available: {reason}; run `trace reindex`")


@dataclass(slots=True)
class Location:
    seq: int
    segment: int
    offset: int
    kind: str


class SessionReader:
    def __init__(self, store, ft, session_id: str):
        self.store = store
        self.session_id = session_id
        self.index = ft.open() or _reopen(ft)
        self.searcher = self.index.searcher()
        self.schema = self.index.schema

    # -- queries -----------------------------------------------------------------

    def _query(self, lo: int | None = None, hi: int | None = None, kinds=None, words=None):
        import tantivy
        q = tantivy.Query
        parts = [(tantivy.Occur.Must, q.term_query(self.schema, "session", self.session_id))]
        if lo is not None or hi is not None:
            parts.append((tantivy.Occur.Must, q.range_query(self.schema, "seq", tantivy.FieldType.Unsigned,
                                                            lo, hi)))
        if kinds:
            parts.append((tantivy.Occur.Must, q.boolean_query(
                [(tantivy.Occur.Should, q.term_query(self.schema, "kind", k)) for k in kinds])))
        for w in words or ():
            parts.append((tantivy.Occur.Must, q.term_query(self.schema, "body", w)))
        return q.boolean_query(parts)

    def _search(self, query, limit: int, newest_first: bool) -> list[Location]:
        import tantivy
        order = tantivy.Order.Desc if newest_first else tantivy.Order.Asc
        hits = self.searcher.search(query, limit, order_by_field="seq", order=order).hits
        # The index's columns, read in one batch (it stores no documents).
        addrs = [addr for _, addr in hits]
        seqs, segs, offs, kinds = (self.searcher.fast_field_values(name, addrs)
                                   for name in ("seq", "seg", "off", "kno"))
        return [Location(seq, seg, off, KIND_NAMES.get(kno, "")) for seq, seg, off, kno in zip(seqs, segs, offs, kinds)]

    def of_kinds(self, kinds, limit: int = 10_000, newest_first: bool = False, words=None,
                 hi: int | None = None, lo: int | None = None) -> list[Location]:
        """The session's events of these kinds (from seq `lo`, up to seq `hi`)."""
        return self._search(self._query(lo, hi, kinds=kinds, words=words), limit, newest_first)

    def count(self, lo: int, hi: int) -> int:
        """How many of the session's events lie in [lo, hi] (counted in the index)."""
        return self.searcher.search(self._query(lo, hi), 1, count=True).count

    def edge(self, newest: bool) -> int | None:
        found = self._search(self._query(), 1, newest_first=newest)
        return found[0].seq if found else None

    def backwards(self, lo: int, hi: int) -> Iterator[list[Location]]:
        """The session's events in [lo, hi], newest first, page by page."""
        width, upper = FIRST_WINDOW, hi
        while upper >= lo:
            bottom = max(lo, upper - width + 1)
            page = self._search(self._query(bottom, upper), PAGE, newest_first=True)
            if page:
                yield page
            if len(page) == PAGE:
                upper = page[-1].seq - 1
            else:
                upper, width = bottom - 1, width * 2

    def forwards(self, lo: int, hi: int | None = None, page_size: int = 4096) -> Iterator[list[Location]]:
        """The session's events in [lo, hi], oldest first, page by page."""
        while True:
            page = self._search(self._query(lo, hi), page_size, newest_first=False)
            if page:
                yield page
            if len(page) < page_size:
                return
            lo = page[-1].seq + 1

    def protected_state(self, names) -> list[Location]:
        """Each protected tool's newest result and the call it answers (the
        body field starts with the tool's name, so the index finds them)."""
        out: list[Location] = []
        for name in names:
            words = re.findall(r"[a-z0-9]+", name.lower())
            if not words:
                continue
            for loc in self.of_kinds(["tool_result"], limit=16, newest_first=True, words=words):
                result = self.read([loc])[0]
                tool = result.get("tool") or {}
                if tool.get("name") != name:
                    continue
                for cloc in self.of_kinds(["tool_call"], limit=64, newest_first=True, words=words):
                    if cloc.seq < loc.seq:
                        call = self.read([cloc])[0]
                        if (call.get("tool") or {}).get("call_id") == tool.get("call_id"):
                            out += [cloc, loc]
                            break
                break
        return out

    # -- reading -------------------------------------------------------------------

    def read(self, locations: list[Location]) -> list[dict]:
        """The events at these locations, in the order given: each segment
        opened once, lines read in file order; conformed (a malformed line
        from before the schema check reads as neutral values)."""
        by_segment: dict[int, list[int]] = defaultdict(list)
        for i, loc in enumerate(locations):
            by_segment[loc.segment].append(i)
        out: list[dict | None] = [None] * len(locations)
        for segment, idxs in by_segment.items():
            path = self.store.segments_dir / segment_name(segment)
            with open(path, "rb") as f:
                for i in sorted(idxs, key=lambda i: locations[i].offset):
                    f.seek(locations[i].offset)
                    line = f.readline()
                    event = sealed_event(line) if line.endswith(b"\n") else None
                    if event is None or event["seq"] != locations[i].seq:
                        raise misplaced_event(path, locations[i].seq)
                    out[i] = conform(event)
        return out                                      # type: ignore[return-value]
