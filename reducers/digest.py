"""The bounded digest (paper 8.5): a pure writer.

    render_digest(facts, episodes, max_lines, link) -> Digest(text, details, demoted)

Facts (live ones: a superseded or tombstoned value never reaches here) and
episode summaries in; a Markdown page of at most `max_lines` lines out,
one line per entry with its latest value and a pointer to its source
(`trace show SEQ`). When everything does not fit, the lowest-importance
entries are demoted — moved, whole, to one detail page per topic
(`digest.d/<topic>.md`, linked from the last line) — never dropped. The
text holds no clock: the same facts always give the same bytes, which is
how a page edited by hand is told from one TRACE wrote.

The page is meant to be pasted into CLAUDE.md or AGENTS.md, or written
beside them and included."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable

from reducers.fact_keys import clip
from reducers.prose_secrets import mask_said_secrets

SECTIONS = (("personal", "About the user"), ("decision", "Decisions"), ("preference", "Preferences"), ("config", "Settings"),
            ("architecture", "Architecture"), ("implementation", "Implementation"), ("issue", "Issues"),
            ("task_state", "Tasks"), ("episodes", "Recent episodes"))
_ORDER = {topic: i for i, (topic, _) in enumerate(SECTIONS)}
HEAD_LINES = 2
MIN_LINES = HEAD_LINES + 3                     # a heading, one entry and the link line
MAX_VALUE = 120


@dataclass
class Entry:
    topic: str
    importance: float
    sort_key: str
    line: str
    detail: str | None = None          # an extra line on the detail page (the sentence a fact came from)


@dataclass
class Digest:
    text: str
    details: dict[str, str] = field(default_factory=dict)      # topic -> detail page text
    demoted: list[dict] = field(default_factory=list)          # [{topic, key, importance}]
    facts: int = 0
    episodes: int = 0

    @property
    def lines(self) -> int:
        return self.text.count("\n")


def fact_entry(fact: dict) -> Entry:
    seq = next((s.get("seq") for s in reversed(fact.get("sources") or []) if isinstance(s.get("seq"), int)), None)
    pointer = f" (`trace show {seq}`)" if seq is not None else ""
    label = fact.get("label") or fact["key"]
    line = f"- **{_inline(label)}**: {_inline(clip(str(fact['value']), MAX_VALUE))}{pointer}"
    text = fact.get("text")
    return Entry(topic=fact.get("type") or "config", importance=float(fact.get("importance") or 0.0),
                 sort_key=fact["key"], line=line,
                 detail=f"  - {_inline(clip(mask_said_secrets(text), 200))}" if text else None)


def episode_entry(ep: dict) -> Entry:
    when = (ep.get("start_ts") or "")[:16].replace("T", " ")
    span = f"{ep['start_seq']}..{ep['end_seq']}" if ep.get("end_seq") != ep.get("start_seq") else str(ep["start_seq"])
    topics = ", ".join(ep.get("topics") or [])
    summary = mask_said_secrets(ep.get("summary") or "")      # "my password is …" as an episode's first line
    line = f"- {when + ' · ' if when else ''}{_inline(clip(summary, 200))} (`trace show {span}`)"
    importance = min(0.6, 0.2 + 0.05 * math.log2(1 + int(ep.get("events") or 0)))
    return Entry(topic="episodes", importance=importance, sort_key=f"{ep.get('start_seq', 0):012d}", line=line,
                 detail=f"  - topics: {topics}" if topics else None)


def render_digest(facts: list[dict], episodes: list[dict], max_lines: int,
                  link: Callable[[str], str] = lambda topic: f"digest.d/{topic}.md") -> Digest:
    if max_lines < MIN_LINES:
        raise ValueError(f"a digest needs at least {MIN_LINES} lines "
                         f"(a title, a note, a heading, one entry and a link line)")
    stale = _stale_values(facts)
    entries = [fact_entry(f) for f in facts]
    demoted: list[Entry] = []
    for ep in episodes:
        # An episode that quotes a value since replaced would put it back on
        # the page: it goes to the detail page (history), not the digest.
        (demoted if stale and stale.search(ep.get("summary") or "") else entries).append(episode_entry(ep))
    entries.sort(key=lambda e: (-e.importance, _ORDER.get(e.topic, 99), e.sort_key))
    room = max_lines - HEAD_LINES
    needed = len(entries) + len({e.topic for e in entries})
    kept: list[Entry] = []
    if needed <= room and not demoted:
        kept = entries
    else:
        room -= 1                                       # the line that links the detail pages
        opened: set[str] = set()
        for e in entries:
            cost = 1 if e.topic in opened else 2
            if cost <= room:
                kept.append(e)
                opened.add(e.topic)
                room -= cost
            else:
                demoted.append(e)
    lines = ["# Memory digest (TRACE)",
             f"<!-- trace digest: {len(facts)} facts, {len(episodes)} episodes, latest values only; "
             f"`trace show SEQ` opens a source. Edit freely: TRACE proposes changes instead of overwriting. -->"]
    for topic, title in SECTIONS:
        mine = [e for e in kept if e.topic == topic]
        if mine:
            lines.append(f"## {title}")
            lines.extend(e.line for e in _in_section_order(mine, topic))
    details: dict[str, str] = {}
    if demoted:
        links = []
        for topic, title in SECTIONS:
            mine = [e for e in demoted if e.topic == topic]
            if not mine:
                continue
            links.append(f"[{title}]({link(topic)}) ({len(mine)})")
            page = [f"# {title}: more from the TRACE digest", ""]
            for e in _in_section_order(mine, topic):
                page.append(e.line)
                if e.detail:
                    page.append(e.detail)
            details[topic] = "\n".join(page) + "\n"
        lines.append("More, less important: " + " · ".join(links))
    return Digest(text="\n".join(lines) + "\n", details=details,
                  demoted=[{"topic": e.topic, "key": e.sort_key, "importance": round(e.importance, 3)} for e in demoted],
                  facts=len(facts), episodes=len(episodes))


def _stale_values(facts: list[dict]):
    """A pattern matching the values facts held before their current one
    (one-character values are too common to tell apart), or None."""
    current = {str(f.get("value") or "").lower() for f in facts}
    old = {str(h.get("value") or "") for f in facts for h in f.get("history") or ()}
    old = sorted((v for v in old if len(v) >= 2 and v.lower() not in current), key=len, reverse=True)
    if not old:
        return None
    return re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(v) for v in old) + r")(?![\w-])", re.I)


def _in_section_order(entries: list[Entry], topic: str) -> list[Entry]:
    if topic == "episodes":                              # newest first
        return sorted(entries, key=lambda e: e.sort_key, reverse=True)
    return sorted(entries, key=lambda e: (-e.importance, e.sort_key))


def _inline(text: str) -> str:
    """One line, whatever the value held."""
    return " ".join(str(text).split())
