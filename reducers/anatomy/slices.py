"""The slices of a context and how text is told apart into them.

Every byte a call sends lands in exactly one slice, so slices add up to
the whole (a stacked chart of them is honest):

  system        the system prompt (Anthropic `system`, OpenAI system /
                developer messages, Responses `instructions`), less what
                the heuristics below carve out of it
  workspace     workspace files the harness injects (CLAUDE.md, AGENTS.md)
  skills        skill definitions
  reminders     harness reminders (`<system-reminder>` blocks)
  tools         tool schemas (the request's `tools` / `functions`, as JSON)
  markers       TRACE pointer markers ([Events A–B (...) evicted: ...])
  recalled      TRACE's `<recalled-context>` blocks
  history       earlier user and assistant messages, tool calls
  tool_results  tool output sent back to the model
  user          the current user message
  unlogged      (transcript records only) tokens the provider counted
                that the transcript does not show: the harness's system
                prompt and tool schemas

What is recognised inside any text (system prompt or message), first
match wins where spans overlap, in this order:
  workspace  a line `Contents of <path>/CLAUDE.md (...):` (also
             CLAUDE.local.md, AGENTS.md, GEMINI.md), as Claude Code
             writes it, up to the next `Contents of ` line, the end of
             the enclosing <system-reminder> or the end of the text;
             Codex's `# AGENTS.md instructions for <dir>` with its
             <INSTRUCTIONS>...</INSTRUCTIONS>, and `<user_instructions>`
             blocks (older Codex)
  skills     `<skill>...</skill>` sections (with or without attributes),
             `<skills_instructions>` blocks, and a message that begins
             `Base directory for this skill:` (a Claude Code skill body)
  markers    TRACE markers, and the `## Evicted history (recallable)`
             heading `trace context` puts above them
  recalled   `<recalled-context ...>...</recalled-context>`
  reminders  `<system-reminder>...</system-reminder>`
An unclosed block runs to the end of the text."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from reducers.tokens import count_tokens

SLICES = ("system", "workspace", "skills", "reminders", "tools", "markers", "recalled",
          "history", "tool_results", "user", "unlogged")
CARVED = ("workspace", "skills", "markers", "recalled", "reminders")     # priority order

# text -> (UTF-8 bytes, tokens); stores/ passes one that knows spilled strings
Measure = Callable[[str], tuple[int, int]]


def measure_text(text: str) -> tuple[int, int]:
    nbytes = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    return nbytes, count_tokens(text)


# Substrings one of the patterns below needs: most texts hold none, and a
# few `in` scans cost far less than one regex search over a long text.
_TRIGGERS = ("<system-reminder", "Contents of ", "AGENTS.md instructions", "<user_instructions", "<skill",
             "Base directory for this skill", "[Events ", "<recalled-context", "## Evicted history")
_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.DOTALL)
_WORKSPACE_FILE = re.compile(
    r"^Contents of (?P<path>[^\n]*?(?:CLAUDE|CLAUDE\.local|AGENTS|GEMINI)\.md)\b[^\n]*:[ \t]*$"
    r".*?(?=^Contents of |</system-reminder>|\Z)", re.DOTALL | re.MULTILINE)
_AGENTS_MD = re.compile(r"^# AGENTS\.md instructions for (?P<path>[^\n]*)\n.*?(?:</INSTRUCTIONS>|\Z)",
                        re.DOTALL | re.MULTILINE)
_USER_INSTRUCTIONS = re.compile(r"<user_instructions>.*?(?:</user_instructions>|\Z)", re.DOTALL)
_SKILL = re.compile(r"<skill(?:\s[^>]*)?>.*?(?:</skill>|\Z)|<skills_instructions>.*?(?:</skills_instructions>|\Z)",
                    re.DOTALL)
_SKILL_NAME = re.compile(r"<name>\s*([^<\n]{1,80}?)\s*</name>|<skill\s+name=\"([^\"]{1,80})\"")
_SKILL_BODY = re.compile(r"\ABase directory for this skill: (?P<path>[^\n]*)\n.*\Z", re.DOTALL)
MARKER_PATTERN = re.compile(r"\[Events \d+[–-]\d+ \([^)\n]*\) evicted: \d+ events\.[^\n]*?"
                            r"trace show \d+\.\.\d+(?: --session \S+?)?\.\]")
_MARKER_HEADING = re.compile(r"^## Evicted history \(recallable\)\n", re.MULTILINE)
_RECALLED = re.compile(r"<recalled-context[^>]*>.*?(?:</recalled-context>|\Z)", re.DOTALL)


def recognisable(text: str) -> bool:
    """Whether any heuristic could match (most texts: no)."""
    for t in _TRIGGERS:
        if t in text:
            return True
    return False


@dataclass(slots=True)
class Carved:
    """One text told apart: bytes and tokens per slice, and what was found."""
    bytes: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    found: list[dict] = field(default_factory=list)       # {slice, what, bytes[, path]}

    def add(self, slice_: str, nbytes: int, ntokens: int) -> None:
        if nbytes or ntokens:
            self.bytes[slice_] = self.bytes.get(slice_, 0) + nbytes
            self.tokens[slice_] = self.tokens.get(slice_, 0) + ntokens

    def merge(self, other: "Carved") -> None:
        for s, b in other.bytes.items():
            self.add(s, b, other.tokens.get(s, 0))
        self.found.extend(other.found)


def _spans(text: str) -> list[tuple[int, int, str, dict]]:
    """(start, end, slice, what) of everything recognised, any order."""
    out: list[tuple[int, int, str, dict]] = []
    for m in _WORKSPACE_FILE.finditer(text):
        out.append((m.start(), m.end(), "workspace", {"what": m.group("path").rsplit("/", 1)[-1], "path": m.group("path")}))
    for m in _AGENTS_MD.finditer(text):
        out.append((m.start(), m.end(), "workspace", {"what": "AGENTS.md", "path": m.group("path").strip()}))
    for m in _USER_INSTRUCTIONS.finditer(text):
        out.append((m.start(), m.end(), "workspace", {"what": "user_instructions"}))
    for m in _SKILL.finditer(text):
        name = _SKILL_NAME.search(m.group(0)[:2000])
        out.append((m.start(), m.end(), "skills", {"what": "skill", **({"name": name.group(1) or name.group(2)} if name else {})}))
    m = _SKILL_BODY.match(text)
    if m:
        out.append((0, len(text), "skills", {"what": "skill", "path": m.group("path").strip()}))
    for m in MARKER_PATTERN.finditer(text):
        out.append((m.start(), m.end(), "markers", {"what": "marker"}))
    for m in _MARKER_HEADING.finditer(text):
        out.append((m.start(), m.end(), "markers", {"what": "marker heading"}))
    for m in _RECALLED.finditer(text):
        out.append((m.start(), m.end(), "recalled", {"what": "recalled-context"}))
    for m in _REMINDER.finditer(text):
        out.append((m.start(), m.end(), "reminders", {"what": "system-reminder"}))
    return out


def carve(text: str, container: str, measure: Measure = measure_text) -> Carved:
    """`text`, sent as part of `container` (a slice), told apart into the
    slices the heuristics recognise; the rest stays in `container`."""
    out = Carved()
    if not text:
        return out
    spans = _spans(text) if recognisable(text) else []
    if not spans:
        out.add(container, *measure(text))
        return out
    rank = {s: i for i, s in enumerate(CARVED)}
    cuts = sorted({0, len(text), *(a for a, _, _, _ in spans), *(b for _, b, _, _ in spans)})
    pieces: dict[str, list[str]] = {}
    for a, b in zip(cuts, cuts[1:]):
        covering = [s for s in spans if s[0] <= a and b <= s[1]]
        slice_ = min((s[2] for s in covering), key=rank.__getitem__) if covering else container
        pieces.setdefault(slice_, []).append(text[a:b])
    for slice_, parts in pieces.items():
        for part in parts:
            out.add(slice_, *measure(part))
    # what was found, by the slice that won its bytes
    for a, b, slice_, what in sorted(spans, key=lambda s: (s[0], rank[s[2]])):
        if slice_ in pieces and not any(o[0] <= a and b <= o[1] and rank[o[2]] < rank[slice_] for o in spans):
            out.found.append({"slice": slice_, **what, "bytes": len(text[a:b].encode("utf-8", "surrogatepass"))})
    return out


def add_slices(total: dict[str, dict[str, int]], carved: Carved) -> None:
    for s, b in carved.bytes.items():
        cell = total.setdefault(s, {"bytes": 0, "tokens": 0})
        cell["bytes"] += b
        cell["tokens"] += carved.tokens.get(s, 0)


def ordered(slices: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Slices in the canonical order (stable output, stable charts)."""
    return {s: slices[s] for s in SLICES if s in slices}
