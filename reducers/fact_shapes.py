"""The words fact rules are written in: regex pieces for how people name a
setting, a value, the value it replaces, a change verb; the sentence shapes
that state no fact (questions, hedges, plans, negations); and the lazily
compiled pattern every rule holds (reducers/fact_rules.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

# Tokens start at a word start and never give characters back (possessive):
# a failed match costs one pass, not a backtrack through every split.
TOKEN = r"(?:`[^`]{1,60}`|\"[^\"]{1,60}\"|(?<![\w./@:#+-])[\w./@#+-]++(?::[\w./@#+-]++)*+)"
SUBJ = rf"(?P<subj>{TOKEN}(?:\s+{TOKEN}){{0,5}}?)"
SUBJ_BEFORE = rf"(?P<subj>{TOKEN}(?:\s+{TOKEN}){{0,4}})"
# A value's word may hold a colon inside it (a URL, 02:30, host:port); a
# colon before a space ends it ("set X to Y: because …").
WORD = r"(?:[^\s,;:]|:(?=[^\s,;:]))++"
VAL = rf"(?P<val>`[^`]{{1,100}}`|\"[^\"]{{1,100}}\"|'[^']{{1,100}}'|{WORD}(?:\s+{WORD}){{0,9}})"
OLD_TO_END = r"(?P<old>`[^`]{1,100}`|\"[^\"]{1,100}\"|[^,;.!?()]{1,60})"     # "instead of B", to the clause's end
OLD = rf"(?P<old>`[^`]{{1,100}}`|\"[^\"]{{1,100}}\"|'[^']{{1,100}}'|{WORD}(?:\s+{WORD}){{0,4}}?)"
CHANGE_VERB = (r"(?:set|sets|setting|change[ds]?|changing|switch(?:ed|es|ing)?|updated?|updating|bump(?:ed|s)?|"
                r"raised?|raising|lower(?:ed|s)?|increased?|decreased?|reduced?|mov(?:e|ed|es|ing)|"
                r"migrat(?:e|ed|es|ing)|upgraded?|downgraded?|pinn?(?:ed)?|configured?|revert(?:ed|s|ing)?|"
                r"put|puts|drop(?:ped|s)?|cut|cuts|push(?:ed|es)?|shift(?:ed|s)?|postponed?|extend(?:ed|s)?|"
                r"restored?|shorten(?:ed|s)?|lengthen(?:ed|s)?|tighten(?:ed|s)?|loosen(?:ed|s)?|relax(?:ed|es)?|"
                r"double[ds]?|halve[ds]?)")
PAST_CHANGE_WORDS = ("set", "changed", "switched", "updated", "bumped", "raised", "lowered", "increased",
                      "decreased", "reduced", "moved", "upgraded", "downgraded", "pinned", "configured",
                      "pushed", "shifted", "postponed", "extended", "dropped", "cut", "restored", "reverted",
                      "shortened", "lengthened", "tightened", "loosened", "relaxed", "doubled", "halved")
PAST_CHANGE = rf"(?:{'|'.join(PAST_CHANGE_WORDS)})"
# Words that may close a sentence after its subject: "use NATS for the queue after all".
TAIL = r"(?:,?\s+(?:after all|from now on|going forward|for now|for good|instead|then|too|as well|now|again))?"
# "X goes back to A", "the temperature's back to B": a return to an earlier value.
# "X went up to C", "Sprint length back to 2 weeks": a change said as a direction.
BACK = r"(?:(?:'s|\s+(?:is|are|goes|go|went|gets|got|comes|came))?\s+back|\s+(?:goes|go|went|has gone|have gone)\s+(?:up|down))"
# A time of day: 9:30, 02:00 UTC, 9am.
CLOCK = r"(?P<val>\d{1,2}(?::\d{2})?\s*(?:am|pm)?(?:\s+utc)?)(?![\w:])"
# Where a sentence may end after its fact: at its end, or at a comma that
# starts an aside ("use X for embeddings, it's cheap"; "the port is 6379, the standard one").
END = rf"{TAIL}(?:,\s.*)?$"
# What a setting's value may be said to hold for ("300s for product pages", "7 days on the cluster").
QUALIFIER = r"(?:\s+(?:for|on|in|across|at|per)\s+[^,]{1,40}?)?"
# A value that looks like a setting's: quoted, Capitalised words (a product),
# code-like, or a number with its unit; not a state word ("empty", "stale").
SETTING_VAL = (r"(?P<val>`[^`]{1,100}`|\"[^\"]{1,100}\"|(?-i:[A-Z][\w.+-]*(?:\s+(?:[A-Z][\w.+-]*|[\w.+-]*\d[\w.+-]*)){0,3})|"
                r"[\w.+-]*\d[\w.+%-]*(?:\s+(?-i:[a-z]+))?|(?=\S*(?:(?-i:[A-Z])|[._:/-]\w))[^\s,;]+)")
WE = r"(?:let'?s|let us|we(?:'ll| will| should| are going to|'re going to| can|'re| are|'ve| have)?|i(?:'ll| will)?)"
COMPONENT = (r"(?:backend|back end|frontend|front end|api|server|service|services|app|application|database|db|"
              r"cache|caching|queue|auth|authentication|storage|client|system|stack|project|pipeline|deployment|"
              r"infra|infrastructure|architecture|worker|workers|scheduler|gateway|proxy|cli|ui|site|website)")

# Clause words that end a value: "switch the DB to Postgres for JSON support" -> "Postgres".
VALUE_END = re.compile(r"(?<!\s)\s+(?:and|so|because|since|which|that|for|instead|when|if|but|in order|to make|"
                        r"to avoid|to fix|to get|before|after|while|until|unless|as well|now|again|too|"
                        r"here|there|then|so that|across|throughout|everywhere|going forward|from now on|"
                        r"via|with|by|in|on|at|of|yesterday|today|tonight|tomorrow|earlier|last (?:night|week|month)|"
                        r"this (?:morning|afternoon|evening|week))\b.*$", re.I)
SUBJECT_START = re.compile(r"^.*\b(?:and|but|so|then|now|also|after|since|because|when|once|that|which|where|"
                            r"while|if|though|although|here|finally|first|next|ok|okay)\s+", re.I)

QUESTION_START = re.compile(r"^(?:if|when|whenever|whether|unless|once|before|should|could|would|can|do|does|did|"
                             r"is|are|was|were|shall|may|might|how|why|what|which|who|where)\b", re.I)
HEDGE = re.compile(r"\b(?:maybe|perhaps|might|could|consider|considering|suggest|suggests|suggested|propose|"
                    r"proposed|wonder|possibly|probably|alternatively|e\.g|for example|such as|try|trying|"
                    r"would|whether|unless|if)\b", re.I)
PLAN = re.compile(r"\b(?:let me|i'll|i will|i'm going to|i am going to|going to|want to|wants to|need to|"
                   r"needs to|'d like|would like|hoping to|planning|plan to|about to|how to|you can|you could|"
                   r"you should|you may|you might|we could|to be able)\b", re.I)
IMPERATIVE = re.compile(r"^(?:please\s+)?(?:set|change|switch|update|bump|raise|lower|increase|decrease|reduce|move|"
                         r"migrate|upgrade|downgrade|pin|configure|replace|use|add|remove|make|put|drop|cut|push|"
                         r"shift|postpone|extend|restore|revert|point)\b", re.I)
# Words that open a sentence without being part of its fact: "Actually, revert X
# to A", "Going forward use B", "FYI the staging URL is C", "Anyway the D changed to E".
LEAD_IN = re.compile(r"^(?:(?:ok(?:ay)?|so|also|and|actually|anyway|anyhow|fyi|btw|alright|right|well|plus|heads up|"
                     r"note|update|going forward|from now on|henceforth|from today|in the end|after all)\b[,:!.—–-]*\s+)+",
                     re.I)
NEGATED = re.compile(r"\b(?:not|never|no longer|cannot|without)\b|n[’']t\b", re.I)     # "don't": no \b inside a word


class LazyPattern:
    """A rule's pattern, compiled the first time a sentence holds its
    trigger words: compiling all ~40 up front costs ~40 ms of every hook
    call and cold command that imports the rules (working state reads
    decisions from each user message), and most texts need none of them."""
    __slots__ = ("source", "_compiled")

    def __init__(self, source: str):
        self.source = source
        self._compiled: re.Pattern | None = None

    def search(self, text: str) -> re.Match | None:
        if self._compiled is None:
            self._compiled = re.compile(self.source, re.I)
        return self._compiled.search(text)


def rx(pattern: str) -> LazyPattern:
    return LazyPattern(pattern)


@dataclass(frozen=True)
class Rule:
    name: str
    type: str
    pattern: LazyPattern
    build: Callable[[re.Match, str], tuple] | None = None   # -> (key, value, replaces, delete) or None
    allow_plan: bool = False      # a "we'll …" is the decision itself
    allow_hedge: bool = False     # "I'd prefer" says "would"
    allow_negation: bool = False
    max_value_words: int = 6
    setting: bool = False         # a setting: its subject must be specific, its value plain
    said_by: tuple[str, ...] = ()  # only these speakers (a listing's "Label: value" lines are data)
    retract: bool = False         # takes back what was just said about its subject
