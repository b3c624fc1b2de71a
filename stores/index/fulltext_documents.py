"""What the full-text index holds of an event: the row a writer hands
over (`index_rows`), the Tantivy document built from it and the schema it
fits (stores/index/fulltext.py has the fields' reasons and keeps the index).
Pure building: nothing here opens or writes an index."""
from __future__ import annotations

from datetime import datetime
from functools import lru_cache

from reducers.blake2 import blake2b
from reducers.cjk import spaced
from reducers.folding import fold
from reducers.logged_time import read_ts
from reducers.recall_block import strip_recalled
from reducers.terms import exact_text
from reducers.turn_traits import line_traits
from stores.index.fulltext_search import KIND_CODES


def ts_millis(ts: str | None) -> int:
    """Epoch milliseconds of a log timestamp ("...:SS.mmmZ"), 0 when unreadable.
    Events arrive in runs from the same minute: the minute's start is
    cached, so most calls only add the seconds."""
    if not ts:
        return 0
    if len(ts) == 24 and ts[16] == ":" and ts[19] == "." and ts[23] == "Z":
        millis = ts[17:19] + ts[20:23]                    # "SSmmm" is the milliseconds in the minute
        if millis.isdigit() and millis < "60000":
            minute = _minute_ms(ts[:16])
            return minute + int(millis) if minute is not None else 0
    dt = read_ts(ts)
    return int(dt.timestamp() * 1000) if dt is not None else 0


@lru_cache(maxsize=256)
def _minute_ms(minute: str) -> int | None:
    try:
        return int(datetime.fromisoformat(minute + "+00:00").timestamp()) * 1000
    except ValueError:
        return None


def tool_body(tool_name: str | None, text: str) -> str:
    """What `body` indexes: the tool's name, then the text."""
    return f"{tool_name} {text}" if tool_name else text


def index_rows(events: list[dict], locations: list[tuple[int, int]], full_texts: dict[int, str]) -> list[list]:
    """What the index takes of each event: [seq, segment, offset, session,
    kind, ts, tool name, searchable text] (the artifact's content for an
    artifact-backed event, its text otherwise). Small, so a writer hands
    rows to the indexer child instead of the child parsing log lines again.
    A `<recalled-context>` block in the text is left out: it was recalled
    once, it must not be found again as if it were new (the log keeps it)."""
    rows = []
    for event, (seg, off) in zip(events, locations):
        seq = event["seq"]
        text = full_texts.get(seq) if full_texts else None
        tool = event.get("tool")
        rows.append([seq, seg, off, event["session_id"], event["kind"], event.get("ts") or event.get("ingested_at"),
                     tool.get("name") if tool else None, strip_recalled(text or event.get("text") or "")])
    return rows


def key63(text: str) -> int:
    """A stable 63-bit key of a session id or speaker label (0 for none),
    for the index's numeric columns."""
    if not text:
        return 0
    return int.from_bytes(blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                          "little") >> 1 or 1


@lru_cache(maxsize=1)
def _document_class():
    from tantivy import Document       # imported once, when the first document is built
    return Document


def document(entry: dict, body: str, after: list[str]):
    doc = _document_class()()
    doc.add_unsigned("seq", entry["seq"])
    doc.add_unsigned("seg", entry["seg"])
    doc.add_unsigned("off", entry["off"])
    doc.add_unsigned("pos", entry["pos"])
    doc.add_text("session", entry["session"])
    doc.add_unsigned("gp", entry["ord"] << 32 | entry["pos"])
    doc.add_text("kind", entry["kind"])
    doc.add_unsigned("kno", KIND_CODES.get(entry["kind"], len(KIND_CODES)))
    doc.add_integer("ts", entry["ts"])
    speaker = entry.get("speaker")
    if speaker:
        doc.add_text("speaker", speaker)
    doc.add_unsigned("spk", key63(speaker))
    doc.add_unsigned("chars", len(body))
    doc.add_unsigned("traits", line_traits(body, entry["kind"]))
    # CJK runs as their character pairs (reducers/cjk.py), accents and case
    # folded (reducers/folding.py): a query is folded the same way
    doc.add_text("body", fold(spaced(body)))
    ctx = entry["before"] + after
    if ctx:
        doc.add_text("ctx", fold(spaced(" ".join(ctx))))
    doc.add_text("exact", fold(exact_text(body)))
    return doc


def schema():
    import tantivy
    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("seq", indexed=True, fast=True)
    sb.add_unsigned_field("seg", fast=True)
    sb.add_unsigned_field("off", fast=True)
    sb.add_unsigned_field("pos", indexed=True, fast=True)
    sb.add_text_field("session", tokenizer_name="raw", index_option="basic")
    sb.add_unsigned_field("gp", indexed=True, fast=True)
    sb.add_text_field("kind", tokenizer_name="raw", index_option="basic")
    sb.add_unsigned_field("kno", fast=True)
    sb.add_integer_field("ts", indexed=True, fast=True)
    sb.add_text_field("speaker", tokenizer_name="raw", index_option="basic")
    sb.add_unsigned_field("spk", fast=True)
    sb.add_unsigned_field("chars", fast=True)
    sb.add_unsigned_field("traits", fast=True)     # what a dialogue line says (reducers/turn_traits.py)
    # No positions: every query is terms, never phrases (positions cost
    # indexing time and a third of the index).
    # Not stemmed: stemming every token cost a third of Tantivy's indexing CPU
    # (and 27-42% more for ctx, which holds 4 neighbours' text). Queries stem
    # instead: a word matches the spellings in the index that share its stem.
    sb.add_text_field("body", tokenizer_name="default", index_option="freq")
    # ctx without term frequencies: a neighbour's word counts once (10% less
    # of ctx's indexing work; LoCoMo dev 0.699 against 0.700 with them).
    sb.add_text_field("ctx", tokenizer_name="default", index_option="basic")
    sb.add_text_field("exact", tokenizer_name="exact", index_option="basic")
    return sb.build()


def exact_analyzer():
    import tantivy
    return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).filter(tantivy.Filter.lowercase()).build()
