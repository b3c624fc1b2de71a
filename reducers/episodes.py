"""Episodes: a session cut where its topic shifts, each with an extractive
summary and its seq range (paper 3.2, Layer 3; Membox-style topic
continuity). Derived data beside the log: `Segmenter` is fed a window of
events in seq order and resumes from its saved open episodes.

A new episode starts at a user request when
- the session was cleared (`/clear`, `/new`) or resumed after a gap of
  GAP_HOURS or more, or
- the request opens with a change of subject ("new task", "moving on",
  "unrelated:", "next, let's …") or shares almost no content words with the
  episode so far (overlap below SHIFT_OVERLAP with its top terms),
and the episode so far has at least MIN_EVENTS events.

The summary is extractive: the episode's first request and its most
representative later sentence (the one whose words the episode uses most),
or for an episode of notes alone its first note; never generated text. Open episodes are bounded (MAX_OPEN sessions, the
least recently active closed first), so memory stays flat."""
from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from dataclasses import dataclass, field

from reducers.logged_time import read_ts
from reducers.prose import sentences
from reducers.terms import STOPWORDS, words
from reducers.working_state import request_text

MIN_EVENTS = 6
GAP_HOURS = 2.0
SHIFT_OVERLAP = 0.12
TOP_TERMS = 40
MAX_TERMS = 150
MAX_CANDIDATES = 6
MAX_OPEN = 256
SUMMARY_CHARS = 240
_CLEARED = re.compile(r"<command-name>/(?:clear|new|reset)</command-name>")
_SHIFT_CUE = re.compile(r"^(?:ok(?:ay)?[,.!]?\s+)?(?:new task|next task|moving on|let'?s move on|switching (?:to|gears)|"
                        r"another thing|unrelated|separately|different (?:topic|question|task)|now,? (?:let'?s|can you)|"
                        r"next,? (?:let'?s|can you|please))\b", re.I)


@dataclass
class OpenEpisode:
    session_id: str
    start_seq: int
    end_seq: int
    start_ts: str | None = None
    end_ts: str | None = None
    events: int = 0
    terms: dict[str, int] = field(default_factory=dict)
    request: str | None = None                 # the first request: what the episode is about
    candidates: list[list] = field(default_factory=list)   # [[score, seq, sentence]], best first
    note: str | None = None                    # the first note: the summary of an episode with no other prose

    def as_json(self) -> dict:
        return {"session_id": self.session_id, "start_seq": self.start_seq, "end_seq": self.end_seq,
                "start_ts": self.start_ts, "end_ts": self.end_ts, "events": self.events, "terms": self.terms,
                "request": self.request, "candidates": self.candidates, "note": self.note}

    @classmethod
    def from_json(cls, d: dict) -> "OpenEpisode":
        return cls(session_id=d["session_id"], start_seq=d["start_seq"], end_seq=d["end_seq"],
                   start_ts=d.get("start_ts"), end_ts=d.get("end_ts"), events=int(d.get("events") or 0),
                   terms=dict(d.get("terms") or {}), request=d.get("request"),
                   candidates=[list(c) for c in d.get("candidates") or ()], note=d.get("note"))


def content_words(text: str) -> list[str]:
    return [w for w in words(text[:4000]) if len(w) > 2 and w not in STOPWORDS and not w.isdigit()]


def episode_row(ep: OpenEpisode, closed: bool) -> dict:
    """An episode as episodes.jsonl keeps it."""
    top = sorted(ep.terms.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    return {"id": "E" + hashlib.blake2b(f"{ep.session_id}\0{ep.start_seq}".encode("utf-8", "surrogatepass"),
                                        digest_size=6).hexdigest(),
            "session_id": ep.session_id, "start_seq": ep.start_seq, "end_seq": ep.end_seq,
            "start_ts": ep.start_ts, "end_ts": ep.end_ts, "events": ep.events,
            "topics": [t for t, _ in top], "summary": summary(ep), "closed": closed}


def summary(ep: OpenEpisode) -> str:
    parts = [ep.request] if ep.request else []
    best = _best_sentence(ep)
    if best and best not in parts:
        parts.append(best)
    if not parts and ep.note:                   # only notes (the global notes session): what they say
        parts.append(ep.note)
    text = " — ".join(parts) or "(no prose)"
    return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS - 1].rstrip() + "…"


def _best_sentence(ep: OpenEpisode) -> str | None:
    """The candidate whose words the episode uses most (re-scored against
    the whole episode's terms, not just those seen when it was noted);
    ties go to the earlier sentence."""
    scored = []
    for _, seq, sentence in ep.candidates:
        ws = set(content_words(sentence))
        if ws:
            scored.append((sum(ep.terms.get(w, 0) for w in ws) / (len(ws) ** 0.5), -seq, sentence))
    return max(scored)[2] if scored else None


class Segmenter:
    """Feed events in seq order; each episode that closes is handed to
    `on_close` (or kept in `closed`); `open_rows()` and `state()` at the end."""

    def __init__(self, saved: dict | None = None, on_close=None):
        self.on_close = on_close
        self.open: OrderedDict[str, OpenEpisode] = OrderedDict()
        for d in (saved or {}).get("open") or ():
            ep = OpenEpisode.from_json(d)
            self.open[ep.session_id] = ep
        self.closed: list[dict] = []
        self.closed_count = 0

    def feed(self, event: dict) -> None:
        kind = event.get("kind")
        if kind not in ("user", "assistant", "tool_call", "tool_result", "note"):
            return
        meta = event.get("meta") or {}
        if meta.get("sidechain") or meta.get("inherited") or meta.get("thinking"):
            return
        sid = event["session_id"]
        text = event.get("text") or ""
        ts = event.get("ts")
        ep = self.open.get(sid)
        request = request_text(text) if kind == "user" and not meta.get("injected") else None
        if ep is not None and (self._boundary(ep, kind, text, request, ts)):
            self._close(sid)
            ep = None
        if ep is None:
            if kind == "user" and _CLEARED.search(text[:500]):
                return                                   # the clear itself starts nothing
            ep = OpenEpisode(sid, event["seq"], event["seq"], start_ts=ts)
            self.open[sid] = ep
            while len(self.open) > MAX_OPEN:
                self._close(next(iter(self.open)))
        self.open.move_to_end(sid)
        ep.end_seq, ep.events = event["seq"], ep.events + 1
        ep.end_ts = ts or ep.end_ts
        if request and ep.request is None:
            ep.request = request
        if kind == "note" and ep.note is None and text.strip():
            ep.note = " ".join(text.split())[:SUMMARY_CHARS]
        if kind in ("user", "assistant", "note"):
            self._take_words(ep, text, event["seq"], kind)

    def _boundary(self, ep: OpenEpisode, kind: str, text: str, request: str | None, ts: str | None) -> bool:
        if kind == "user" and _CLEARED.search(text[:500]):
            return True
        if _hours_between(ep.end_ts, ts) >= GAP_HOURS:
            return True
        if request is None or ep.events < MIN_EVENTS:
            return False
        if _SHIFT_CUE.match(request):
            return True
        ws = set(content_words(request))
        if len(ws) < 3:
            return False
        top = {t for t, _ in sorted(ep.terms.items(), key=lambda kv: -kv[1])[:TOP_TERMS]}
        return len(ws & top) / len(ws) < SHIFT_OVERLAP

    def _take_words(self, ep: OpenEpisode, text: str, seq: int, kind: str) -> None:
        for w in content_words(text):
            ep.terms[w] = ep.terms.get(w, 0) + 1
        if len(ep.terms) > MAX_TERMS:              # keep the frequent ones
            keep = sorted(ep.terms.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_TERMS // 2]
            ep.terms = dict(keep)
        if kind != "assistant":
            return
        for sentence in sentences(text[:4000])[:20]:
            ws = set(content_words(sentence))
            if len(ws) < 4 or len(sentence) > 200:
                continue
            score = sum(ep.terms.get(w, 0) for w in ws) / (len(ws) ** 0.5)
            ep.candidates.append([round(score, 4), seq, sentence])
        ep.candidates.sort(key=lambda c: (-c[0], c[1]))
        del ep.candidates[MAX_CANDIDATES:]

    def _close(self, sid: str) -> None:
        ep = self.open.pop(sid)
        if ep.events:
            self.closed_count += 1
            row = episode_row(ep, closed=True)
            if self.on_close is not None:
                self.on_close(row)
            else:
                self.closed.append(row)

    def open_rows(self) -> list[dict]:
        return [episode_row(ep, closed=False) for ep in self.open.values()]

    def state(self) -> dict:
        return {"open": [ep.as_json() for ep in self.open.values()]}


def _hours_between(a: str | None, b: str | None) -> float:
    if not a or not b:
        return 0.0
    ta, tb = read_ts(a), read_ts(b)
    if ta is None or tb is None:
        return 0.0
    return (tb - ta).total_seconds() / 3600.0
