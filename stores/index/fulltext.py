"""The full-text index (Tantivy, `fulltext/`): derived from the log,
rebuilt from it whenever it is missing, corrupt or of an older schema.

Fields: `body` (the event's text, as written: a query looks for every
spelling in the index that stems like its words), `ctx` (the two events
before and the two after it in its session, not stemmed, weighted lower: a tool
result is found by the question that prompted it, a question by its answer;
+0.03 recall@10 on LoCoMo dev over query-time smoothing alone; recall also
asks how much of a query a line's window, body or ctx, holds), `exact` (hashes,
paths, addresses, identifiers kept whole, plus their parts; see
reducers/terms.py), `speaker` (the label a "Name: words" turn opens with, see
reducers/speakers.py), and `session`, `kind`, `ts`, `seq` so filters run
inside the index. Nothing is stored: what recall needs of a hit without
reading it lives in fast (columnar) fields read in one batch per query —
where the event is in the log (`seg`, `off`), its place in its session
(`pos`, and `gp` = the session's ordinal in this index << 32 | pos, so the
events around one are a range of one column), its kind (`kno`), speaker
(`spk`, a 63-bit key of the label), time, length (`chars`) and what a dialogue line says (`traits`: a time, a
number, a question, quoted text; reducers/turn_traits.py). A stored-document fetch cost ~4 µs a hit and a Python
object per field; a column read is ~0.1 µs a hit, plus a fixed cost of
~70 µs a column at 1M events (Tantivy opens the column in every
segment), so recall reads the `seq` column and takes the rest from the
hit records (`hits.bin`, stores/hit_records), written after each commit.

Bookkeeping lives in `fulltext/positions.db` (SQLite): the watermark (last
seq indexed) and, per session, the next position and the recent texts that
feed `ctx`. It is committed only after Tantivy commits, in one transaction,
so the watermark never runs ahead of the index; documents past the
watermark (a crash between the two commits) are deleted before catch-up
re-adds them, so nothing is indexed twice."""
from __future__ import annotations

import shutil
import sqlite3
from collections import OrderedDict, deque
from pathlib import Path

import orjson

from reducers.speakers import speaker_of
from stores.index.fulltext_documents import document, exact_analyzer, schema, tool_body, ts_millis
from stores.index.fulltext_search import FulltextSearch
from stores.hit_records import FILE as HIT_RECORDS_FILE
from stores.hit_records import HitRecords
from stores.sql_in import select_in

# 13: CJK runs as character pairs; 14: the traits column; 15: body, ctx and exact
# folded (reducers/folding.py); 16: Thai, Lao, Khmer, Myanmar runs as letter pairs, words over 40
# bytes, pictographs and the short prefixes of 8-15 hex ids in exact; Hebrew points and
# Arabic harakat folded
SCHEMA_VERSION = 16
INDEX_MAX_CHARS = 2_000_000          # how much of a huge artifact is searchable
CTX_EVENTS = 2
CTX_CHARS = 300                      # of each neighbour (with stemmed ctx, 600 cost 4.5% more CPU for LoCoMo dev 0.698 vs 0.703)
REINDEX_MAX_CHARS = 16_384           # bigger events are indexed at once, with the context before them only
OPEN_SESSIONS = 256                  # sessions whose recent events are held in memory during an ingest
_HEAP = 64 * 1024 * 1024       # the writer flushes a segment when it fills: memory stays bounded



def _persisted(entry: dict) -> dict:
    return {k: v for k, v in entry.items() if k != "body"}



class FulltextIndex(FulltextSearch):
    def __init__(self, store: Path, name: str = "fulltext"):
        self.dir = store / name            # another name: a rebuild beside the index in use
        self._index = None
        self._writer = None
        self._db: sqlite3.Connection | None = None
        # session -> [next pos, last CTX_EVENTS entries], an LRU of OPEN_SESSIONS
        self._ctx: OrderedDict[str, list] = OrderedDict()
        # Within one add(): rows fetched for the batch's sessions, and the
        # state of sessions closed since (written at the end of the batch).
        self._fetched: dict[str, tuple | None] = {}
        self._closed: dict[str, tuple[int, str, int]] = {}
        self._ordinals: int | None = None     # sessions numbered so far (their ordinals are 1, 2, ...)
        self._records: HitRecords | None = None

    # -- bookkeeping ---------------------------------------------------------

    def _positions(self) -> sqlite3.Connection | None:
        if self._db is None:
            path = self.dir / "positions.db"
            if (not path.exists() and not self.dir.is_dir()) or self.dir.is_symlink():
                return None                     # (a link is never written through: rebuilt as a folder)
            self._db = sqlite3.connect(path, isolation_level=None)
            self._db.executescript("""
                CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS sessions (session_id TEXT PRIMARY KEY, next_pos INTEGER, recent TEXT,
                    ordinal INTEGER) WITHOUT ROWID;""")
        return self._db

    def _meta(self, name: str) -> str | None:
        try:
            db = self._positions()
            if db is None:
                return None
            row = db.execute("SELECT value FROM meta WHERE name=?", (name,)).fetchone()
        except sqlite3.DatabaseError:           # damaged: the index counts as missing (rebuilt from the log)
            return None
        return row[0] if row else None

    def built_schema(self) -> str | None:
        """The schema version the index was built with (None: no index)."""
        return self._meta("schema")

    @property
    def watermark(self) -> int:
        """Last seq indexed, or -1 when the index is missing, foreign or of
        an older schema (it must be rebuilt)."""
        if self._meta("schema") != str(SCHEMA_VERSION):
            return -1
        return int(self._meta("seq") or 0)

    def usable(self) -> bool:
        return self.watermark >= 0

    def open(self):
        """The Tantivy index for reading (None when missing or unusable)."""
        if self._index is None:
            if not self.usable():
                return None
            import tantivy
            try:
                index = tantivy.Index.open(str(self.dir))
            except Exception:
                return None
            except BaseException as exc:   # an engine panic on damaged files (pyo3's PanicException)
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                return None
            index.register_tokenizer("exact", exact_analyzer())
            self._index = index
        return self._index

    # -- writing (the caller holds the store's writer lock) -----------------------

    def reset(self) -> None:
        """Start an empty index (rebuild from the log follows)."""
        self.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        import tantivy
        index = tantivy.Index(schema(), path=str(self.dir))
        index.register_tokenizer("exact", exact_analyzer())
        self._index = index
        db = self._positions()
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?), ('seq', '0')", (str(SCHEMA_VERSION),))

    def drop_after(self, seq: int) -> None:
        """Delete documents past the watermark (left by a crash between the
        Tantivy commit and the bookkeeping commit)."""
        import tantivy
        writer = self._writer_for()
        index = self._index
        writer.delete_documents_by_query(tantivy.Query.range_query(
            index.schema, "seq", tantivy.FieldType.Unsigned, seq + 1, None))

    def _writer_for(self):
        if self._writer is None:
            if self.open() is None:
                self.reset()
            self._writer = self._index.writer(heap_size=_HEAP, num_threads=1)
        return self._writer

    def _session_state(self, sid: str) -> list:
        """[next position, deque of the last CTX_EVENTS entries] of a session."""
        state = self._ctx.get(sid)
        if state is not None:
            self._ctx.move_to_end(sid)
            return state
        if sid in self._closed:
            row = self._closed.pop(sid)
        elif sid in self._fetched:
            row = self._fetched.pop(sid)
        else:
            row = self._positions().execute(
                "SELECT next_pos, recent, ordinal FROM sessions WHERE session_id=?", (sid,)).fetchone()
        recent = orjson.loads(row[1]) if row else []
        ordinal = row[2] if row else self._new_ordinal()
        state = self._ctx[sid] = [row[0] if row else 0, deque(recent, maxlen=CTX_EVENTS), ordinal]
        if len(self._ctx) > OPEN_SESSIONS:
            self._close_session(next(iter(self._ctx)))
        return state

    def _new_ordinal(self) -> int:
        """The next session's number, for the `gp` column (committed with the watermark)."""
        if self._ordinals is None:
            self._ordinals = int(self._meta("sessions") or 0)
        self._ordinals += 1
        return self._ordinals

    def _fetch_sessions(self, rows: list[list]) -> None:
        """The stored state of a batch's sessions that are not in memory, in
        one query per 500 (a query per session cost more than indexing a
        short session's events)."""
        wanted = list({row[3]: None for row in rows if row[3] not in self._ctx})
        for sid, pos, recent, ordinal in select_in(self._positions(), "SELECT session_id, next_pos, recent, ordinal "
                                                                     "FROM sessions WHERE session_id IN ({})", wanted):
            self._fetched[sid] = (pos, recent, ordinal)
        for sid in wanted:
            self._fetched.setdefault(sid, None)

    def add(self, rows: list[list]) -> None:
        """Index sealed events, as `index_rows` gives them.

        An event's document waits until the two events after it in its
        session have arrived (its `ctx` is then complete) or until commit.
        Re-indexing only happens for the few events still waiting at a
        commit: Tantivy keeps deleted documents in its BM25 statistics until
        segments merge, so churn would skew scores."""
        writer = self._writer_for()
        self._fetch_sessions(rows)
        last_sid, state = None, None
        for seq, seg, off, sid, kind, ts, tool_name, text in rows:
            if sid != last_sid:                           # events come in runs of one session
                state, last_sid = self._session_state(sid), sid
            recent = state[1]
            body = tool_body(tool_name, text[:INDEX_MAX_CHARS])
            head = body[:CTX_CHARS]
            entry = {"seq": seq, "seg": seg, "off": off, "pos": state[0], "ord": state[2], "session": sid,
                     "kind": kind, "ts": ts_millis(ts), "speaker": "" if tool_name else speaker_of(text),
                     "head": head, "before": [e["head"] for e in recent], "indexed": False, "body": body}
            if len(recent) == CTX_EVENTS:                 # the oldest now has both successors
                self._index_entry(writer, recent[0], [recent[1]["head"], head])
            if len(body) > REINDEX_MAX_CHARS:             # too big to hold: index now, never again
                self._index_entry(writer, entry, [])
                entry["final"] = True
                entry.pop("body", None)
            recent.append(entry)
            state[0] += 1
        self._fetched.clear()
        self._store_closed()

    def _index_entry(self, writer, entry: dict, after: list[str]) -> None:
        if entry.get("final"):
            return
        if entry["indexed"]:                              # indexed early: replace it
            # (delete_documents_by_term cannot match a u64 field from Python; a query can)
            import tantivy
            writer.delete_documents_by_query(tantivy.Query.term_query(self._index.schema, "seq", entry["seq"]))
        body = entry.get("body")
        if body is None:
            body = self._reload_body(entry)
        writer.add_document(document(entry, body, after))
        entry["indexed"] = True
        entry["ctx_after"] = len(after)                   # successors in its ctx so far
        entry["final"] = len(after) >= CTX_EVENTS
        if entry["final"]:
            entry.pop("body", None)

    def _reload_body(self, entry: dict) -> str:
        """An entry kept without its text (its session left memory) is
        re-read from the log when it must be indexed again."""
        from stores.log.artifacts import ArtifactStore
        from stores.log.segments import read_event_at
        store = self.dir.parent
        event = read_event_at(store / "segments", entry["seg"], entry["off"]) or {}
        text = event.get("text") or ""
        art = event.get("artifact")
        if art:
            try:
                text = ArtifactStore(store).read(art["id"])[:INDEX_MAX_CHARS].decode("utf-8", "ignore")
            except Exception:
                pass
        return tool_body((event.get("tool") or {}).get("name"), text[:INDEX_MAX_CHARS]) if event else entry["head"]

    def _close_session(self, sid: str) -> None:
        """Memory stays flat however many sessions an ingest touches: the
        least recently used session's waiting events are indexed with the
        context they have, and its state goes to positions.db inside the
        transaction that commit() closes (a crash rolls it back with the
        rest)."""
        pos, recent, ordinal = self._ctx.pop(sid)
        self._index_waiting(recent)
        items = list(recent)
        for entry in items:
            entry.pop("body", None)
        self._closed[sid] = (pos, orjson.dumps(items).decode(), ordinal)

    def _store_closed(self) -> None:
        """Write the closed sessions' state, inside the transaction commit() closes."""
        if not self._closed:
            return
        db = self._positions()
        if not db.in_transaction:
            db.execute("BEGIN")
        db.executemany("INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?)",
                       ((sid, pos, recent, ordinal) for sid, (pos, recent, ordinal) in self._closed.items()))
        self._closed.clear()

    def _index_waiting(self, recent) -> None:
        """Index a session's events still waiting for successors, with the
        context they have so far (at commit, or when the session leaves
        memory). One indexed early is indexed again if successors arrived
        since (its session left memory and came back)."""
        items = list(recent)
        for i, entry in enumerate(items):
            after = items[i + 1:]
            if entry.get("final") or (entry["indexed"] and len(after) <= entry.get("ctx_after", 0)):
                continue
            self._index_entry(self._writer_for(), entry, [e["head"] for e in after])

    def _flush_waiting(self) -> None:
        for _, recent, _ in self._ctx.values():
            self._index_waiting(recent)

    def commit(self, seq: int) -> None:
        """Make everything added searchable, then move the watermark."""
        self._flush_waiting()
        self._store_closed()
        if self._writer is not None:
            self._writer.commit()
            self._writer.wait_merging_threads()
            self._writer = None
            self._index.reload()
        db = self._positions()
        if db is None:
            return
        self._write_hit_records(seq)
        if not db.in_transaction:
            db.execute("BEGIN")
        db.executemany("INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?)",
                       ((sid, pos, orjson.dumps([_persisted(e) for e in recent]).decode(), ordinal)
                        for sid, (pos, recent, ordinal) in self._ctx.items()))
        if self._ordinals is not None:
            db.execute("INSERT OR REPLACE INTO meta VALUES ('sessions', ?)", (str(self._ordinals),))
        db.execute("INSERT OR REPLACE INTO meta VALUES ('seq', ?)", (str(seq),))
        db.execute("COMMIT")
        self._ctx.clear()

    def _write_hit_records(self, seq: int) -> None:
        """Bring the hit records (stores/hit_records) up to the committed
        index, before the watermark moves. They only ever spare column
        reads: a failure here leaves readers on the columns, never fails
        the commit."""
        from stores.integrity.derived import changed_since_sealed
        index = self.open()
        if index is None:
            return
        try:
            if changed_since_sealed(self.dir, HIT_RECORDS_FILE):
                (self.dir / HIT_RECORDS_FILE).unlink()        # written to since its seal: all written afresh
            HitRecords(self.dir).catch_up(index, seq, max(self.watermark, 0))
        except (OSError, ValueError, RuntimeError):
            pass
        if self._records is not None:
            self._records.close()         # re-read: what it mapped is out of date

    def close(self) -> None:
        if self._records is not None:
            self._records.close()
            self._records = None
        self._fetched.clear()
        self._closed.clear()
        self._ordinals = None
        self._writer = None
        self._index = None
        if self._db is not None:
            self._db.close()
            self._db = None
