"""Topic detection for `topicLabel` / `topicTransition`: lightweight and
deterministic (no model, no randomness, no clock).

A user message's terms are its content words (stopwords and chat filler
dropped; words of 3-24 letters, no digits, so ids and secrets never become
a label; tags, URLs, paths and file names left out), redacted first,
ranked by count then first appearance; the top TERMS count. A session carries a topic profile, term -> weight:

- a call whose current user message is the one the previous call had (an
  agent loop working through one request) changes nothing;
- a new message with no content terms ("ok", "go on") changes nothing;
- a new message sharing no term with the profile, with at least two terms
  of its own, is a transition: the profile becomes its terms (weight 1);
- otherwise the profile decays (x DECAY, terms under FLOOR dropped) and the
  message's terms each add 1.

`topicLabel` is the profile's top LABEL_TERMS terms (weight, then age);
the first topic of a session is no transition."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from reducers.redact import redact
from reducers.terms import STOPWORDS

TERMS = 8
LABEL_TERMS = 3
DECAY = 0.5
FLOOR = 0.1
_MAX_TEXT = 20_000
_WORD = re.compile(r"[^\W\d_]{3,24}")
# what a user message holds beside its words: tags the harness wrapped it in,
# URLs, paths and file names (their parts say where, not what about). A path
# is tried only where a token starts: tried inside one too, a long run with no
# slash (20k CJK characters, a base64 blob) was scanned from every position
# (5.7 s); the matches are the same. A file name's stem is at most 120
# characters for the same reason (every word start of "a-a-a-..." scanned on).
_NOT_PROSE = re.compile(r"<[^<>\n]{1,80}>|https?://\S+|(?<![^\s>])\S*[/\\]\S*|\b[\w-]{1,120}\.[A-Za-z]\w{0,4}\b")
_FILLER = frozenset("""
please thanks thank okay also now just like want need let make sure could would should can will one
get got use using used know think see look looks good great fine yes yeah yep hey hello well really
still again first next last way thing things something anything everything lot bit try tried done
going want wants wanted help give take tell said say says maybe sorry actually instead already
two three four five six seven eight nine ten
""".split())


@dataclass
class TopicState:
    profile: dict[str, float] = field(default_factory=dict)     # insertion order: age
    user_digest: str | None = None

    def as_json(self) -> dict:
        return {"profile": {t: round(w, 4) for t, w in self.profile.items()}, "userDigest": self.user_digest}

    @classmethod
    def from_json(cls, data: dict | None) -> "TopicState":
        if not isinstance(data, dict):
            return cls()
        profile = data.get("profile") if isinstance(data.get("profile"), dict) else {}
        return cls({str(t): float(w) for t, w in profile.items() if isinstance(w, (int, float))},
                   data.get("userDigest") if isinstance(data.get("userDigest"), str) else None)


def message_terms(text: str) -> list[str]:
    clean, _ = redact(text[:_MAX_TEXT])
    clean = _NOT_PROSE.sub(" ", clean)
    counts: dict[str, int] = {}
    for w in _WORD.findall(clean.lower()):
        if w not in STOPWORDS and w not in _FILLER:
            counts[w] = counts.get(w, 0) + 1
    order = {w: i for i, w in enumerate(counts)}
    return sorted(counts, key=lambda w: (-counts[w], order[w]))[:TERMS]


def label(profile: dict[str, float]) -> str | None:
    order = {t: i for i, t in enumerate(profile)}
    top = sorted(profile, key=lambda t: (-profile[t], order[t]))[:LABEL_TERMS]
    return " ".join(top) or None


def next_topic(state: TopicState | None, user_text: str | None, user_digest: str | None
               ) -> tuple[str | None, bool, TopicState]:
    """(topicLabel, topicTransition, the state for the next call)."""
    state = state or TopicState()
    if not user_text or (user_digest is not None and user_digest == state.user_digest):
        return label(state.profile), False, state
    terms = message_terms(user_text)
    if not terms:
        return label(state.profile), False, TopicState(dict(state.profile), user_digest)
    transition = bool(state.profile) and len(terms) >= 2 and not any(t in state.profile for t in terms)
    if transition or not state.profile:
        profile = {t: 1.0 for t in terms}
    else:
        profile = {t: w * DECAY for t, w in state.profile.items() if w * DECAY >= FLOOR}
        for t in terms:
            profile[t] = profile.get(t, 0.0) + 1.0
    return label(profile), transition, TopicState(profile, user_digest)
