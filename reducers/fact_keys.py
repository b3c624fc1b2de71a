"""Fact keys and values: what a fact is about, spelled one way.

A key names the thing a fact describes — a setting, the thing a decision
chose for, a file — so that a later value for the same thing is recognised
whatever the phrasing: `DATABASE_URL`, "the database URL" and
`database-url` are one key (`database url`). Values compare the same way
(case, quotes, backticks and spacing do not matter), but keep the spelling
they were written with for display."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

FACT_TYPES = ("decision", "config", "implementation", "issue", "task_state", "architecture", "preference",
              "personal")
MAX_KEY_WORDS = 6
MAX_VALUE_CHARS = 120

_SEP = re.compile(r"[\s_\-]+")
_ANY_QUOTE = re.compile(r"[`'\"“”‘’*]")
_QUOTES = "`'\"*“”‘’"
_LEADING = re.compile(r"^(?:(?:the|a|an|our|my|your|its|their|this|that|these|those|new|current|default|"
                      r"whole|entire)\s+)+", re.I)
_TRAILING = re.compile(r"(?<!\s)\s+(?:setting|settings|value|values|config|configuration|option|variable|env var|"
                       r"parameter|param|field)$", re.I)
# Head nouns of things that are configured or chosen in software work: a
# "set X to Y" about one of these is a setting; about anything else ("the
# flight", "the code") it is usually an action on the day's object.
SETTING_NOUNS = frozenset("""
port host hostname url uri endpoint domain address path dir directory root base prefix suffix
period retention window duration deadline date eta cutoff time frequency rate expiry expiration lifetime
timeout timeouts ttl interval delay retries retry attempts backoff limit limits quota cap threshold max min
size length width height count number concurrency parallelism workers worker threads pool replicas instances
memory cpu disk ram heap cache caching queue broker bus database db datastore store storage bucket persistence
schema table index region zone cluster namespace environment env stage tier plan
branch remote tag release version versions runtime engine interpreter compiler toolchain sdk
framework library lib orm client driver adapter provider backend frontend server service api gateway proxy
cdn dns hosting deployment deploy target platform infra infrastructure stack architecture
language lang linter formatter formatting style styling theme font color colour palette layout indentation
indent tabs spaces quotes semicolons naming convention conventions lint eslint prettier ruff black
bundler builder build test tests testing runner ci pipeline workflow job cron schedule scheduler
manager package packages dependency dependencies registry mirror auth authentication authorization login
sso oauth session sessions cookie cookies token tokens key keys secret certificate cert tls ssl encryption
logging log logs level verbosity monitoring metrics tracing alerting analytics telemetry
tracker tracking vendor tool tooling
model models temperature embedding embeddings tokenizer prompt context budget
variant variants email mail smtp sms notifications payments payment billing currency locale language timezone tz
search indexer index ranking feature flag flags toggle mode option setting config configuration
strategy policy approach method algorithm protocol format encoding charset serialization
editor shell terminal os image container dockerfile compose helm chart manifest
""".split())
GENERIC_SUBJECTS = frozenset("""
option options one ones thing things stuff way ways case cases part parts step steps time moment reason
purpose example instance rest remainder change changes update updates request question answer result
results code file files work task fix issue problem error everything anything something nothing this that
""".split())
_PREPOSITIONS = frozenset("to from for on at in with by of into onto over about as via than".split())
_QUANTIFIERS = frozenset("each every any all some different other both either several".split())
_WITH_ID = re.compile(r"(?<!\s)\s+with\s+(?:the\s+)?(?:id|code|number|no\.?|name|key|ref(?:erence)?)\s+", re.I)
_PARTICLES = frozenset("over up out back down off around away".split())
# A value that opens with one of these is a purpose ("update X to use Y"),
# a reference ("to my card"), or a state ("is now ready"), not a setting.
VERB_STARTS = frozenset("""
use using display show include handle support reflect remove add be make get let allow avoid ensure keep
call run fetch load read write render return accept match fit follow point pass take give put set prevent
""".split())
REFERENTS = frozenset("it it's its my your our their his her this that these those them me him".split())
STATES = frozenset("""
ready done complete completed working available live finished pushed fixed installed running scheduled
visible correct good fine set up in place merged deployed broken failing enabled disabled active inactive
""".split())
PRONOUNS = frozenset("i me we you he him she her it they them this that these those which what who "
                     "everything something anything nothing one here there".split())


@dataclass(slots=True)
class FactCandidate:
    """One fact as an extractor found it, before reconciliation."""
    type: str                     # one of FACT_TYPES
    key: str                      # normalised subject (norm_key)
    value: str                    # display spelling
    text: str                     # the sentence or line it came from (clipped)
    importance: float             # 0..1
    label: str = ""               # the subject as written
    replaces: str | None = None   # a value this one says it replaces ("instead of B", "from B to A")
    delete: bool = False          # the source explicitly removes or reverts the key
    prefix: bool = False          # with delete: every key under this one (an entity cancelled)
    retract: bool = False         # takes back the key's latest value ("never mind, don't change X")
    rule: str = ""                # which rule found it
    source: dict = field(default_factory=dict)    # {id, seq, session_id, ts, kind}

    def as_state(self) -> dict:
        """Everything, to be restored by `from_state` (a pending call's facts
        wait across sweeps)."""
        return {"type": self.type, "key": self.key, "value": self.value, "text": self.text,
                "importance": self.importance, "label": self.label, "replaces": self.replaces,
                "delete": self.delete, "prefix": self.prefix, "retract": self.retract, "rule": self.rule,
                "source": self.source}

    @classmethod
    def from_state(cls, d: dict) -> "FactCandidate":
        return cls(**{k: d[k] for k in ("type", "key", "value", "text", "importance", "label", "replaces",
                                         "delete", "prefix", "retract", "rule", "source") if k in d})

    def as_json(self) -> dict:
        out = {"type": self.type, "key": self.key, "label": self.label or self.key, "value": self.value,
               "importance": round(self.importance, 3), "rule": self.rule, "text": self.text}
        if self.replaces:
            out["replaces"] = self.replaces
        if self.delete:
            out["delete"] = True
            if self.prefix:
                out["prefix"] = True
        return out


def clean(text: str) -> str:
    """Strip markdown emphasis, quotes and edge punctuation; collapse spaces."""
    text = " ".join(text.split())
    text = text.strip(_QUOTES + " .,;:!)(")
    return text.replace("**", "").replace("`", "")


# One spelling per word people shorten: "the DB host", "database hostname"
# and DB_HOST are one key ("database host").
_SAME_WORD = {"db": "database", "hostname": "host", "dir": "directory", "tz": "timezone", "repo": "repository",
              "maximum": "max", "minimum": "min", "authentication": "auth", "config": "configuration"}
_TWO_WORDS = re.compile(r"\btime zone\b")
# A subject's qualifier that names the whole context, not a part of it:
# "the Python version for this project" is the Python version.
_CONTEXT = re.compile(r"(?<!\s)\s+(?:for|in|on|across|of)\s+(?:this|the|our|all|every)\s+(?:project|repo|repository|app|"
                      r"codebase|cluster|team|services?|environments?|everything)$", re.I)


_OWNED = re.compile(r"^([\w-]+(?:\s+[\w-]+)?)\s+(?:for|of)\s+((?:the\s+|our\s+)?[\w-]+(?:\s+[\w-]+)?)$", re.I)


def norm_key(subject: str) -> str:
    """`DATABASE_URL`, "the database URL", `database-url` -> "database url";
    "the DB hostname" -> "database host"."""
    s = _ANY_QUOTE.sub("", clean(subject))
    s = _CONTEXT.sub("", s)
    s = _LEADING.sub("", s)
    owned = _OWNED.match(s)
    if owned and owned.group(1).lower().split()[-1] in SETTING_NOUNS:      # "the deadline for the migration"
        s = f"{_LEADING.sub('', owned.group(2))} {owned.group(1)}"
    s = _TRAILING.sub("", s)
    s = _TWO_WORDS.sub("timezone", _SEP.sub(" ", s.lower()).strip(" .:"))
    return " ".join(_SAME_WORD.get(w, w) for w in s.split(" "))


# Trailing words that do not change what a key is about when matching keys
# said differently ("retention period" is the retention, "auth provider" the auth).
_LOOSE_TAIL = frozenset({"period", "provider", "service", "tool", "engine", "vendor", "platform", "system", "model",
                         "time", "solution", "path", "location"})


def key_core(key: str) -> tuple[str, ...]:
    """A key's words without a trailing `_LOOSE_TAIL` word (kept when alone)."""
    words = tuple(key.split())
    return words[:-1] if len(words) > 1 and words[-1] in _LOOSE_TAIL else words


_UNITS = ((re.compile(r"^(\d+(?:\.\d+)?)\s*(?:ms|msecs?|millis|milliseconds?)$"), "ms"),
          (re.compile(r"^(\d+(?:\.\d+)?)\s*(?:s|secs?|seconds?)$"), "s"),
          (re.compile(r"^(\d+(?:\.\d+)?)\s*(?:m|mins?|minutes?)$"), "m"),
          (re.compile(r"^(\d+(?:\.\d+)?)\s*(?:h|hrs?|hours?)$"), "h"),
          (re.compile(r"^(\d+(?:\.\d+)?)\s*(?:d|days?)$"), "d"),
          (re.compile(r"^(\d+(?:\.\d+)?)\s*(?:kb|kib|kilobytes?)$"), "kb"),
          (re.compile(r"^(\d+(?:\.\d+)?)\s*(?:mb|mib|megabytes?)$"), "mb"),
          (re.compile(r"^(\d+(?:\.\d+)?)\s*(?:gb|gib|gigabytes?)$"), "gb"))


def norm_value(value: str) -> str:
    """Values compare without case, quotes or spacing, and with one spelling
    per unit: "60 seconds" is "60s", "512 MB" is "512mb"."""
    v = _SEP.sub(" ", clean(value).lower()).strip()
    if v[:1].isdigit():
        for pattern, unit in _UNITS:
            m = pattern.match(v)
            if m:
                return m.group(1) + unit
    return v


def label_of(subject: str) -> str:
    """The subject as written, for display: no leading article or quotes."""
    return _LEADING.sub("", _ANY_QUOTE.sub("", clean(subject))).strip() or subject


def good_subject(key: str) -> bool:
    parts = key.split()
    if not parts or len(parts) > MAX_KEY_WORDS or len(key) > 80 or key in GENERIC_SUBJECTS or ": " in key:
        return False
    if any(p in PRONOUNS for p in parts) or not any(c.isalnum() for c in key):
        return False
    return not key.isdigit()


def specific_subject(key: str) -> bool:
    """A subject a setting can be about: named like code (dots, slashes,
    underscores, digits, CamelCase), or headed by a setting noun."""
    parts = key.split()
    if not parts or key in GENERIC_SUBJECTS:
        return False
    if any(c.isdigit() or c in "._/@:" for c in key):
        return True
    return headed_by_setting_noun(key)


def headed_by_setting_noun(key: str) -> bool:
    """Named in words as a setting ("max connections", "cache ttl"): one of
    its last two words is a setting noun."""
    return any(w in SETTING_NOUNS for w in key.split()[-2:])


def tidy_subject(subject: str) -> str | None:
    """A captured subject without a leading clause word or trailing
    particle; None when it is a prepositional phrase, not a thing."""
    subject = _WITH_ID.sub(" ", subject)                # "the order with ID 42" is "the order 42"
    words_ = subject.split()
    while words_ and words_[-1].lower() in _PARTICLES:
        words_.pop()
    if not words_ or words_[0].lower() in _PREPOSITIONS or any(w.lower() in ("from", "to") for w in words_):
        return None
    if words_[0].lower() in _QUANTIFIERS:                # "use X for each Y": distributive, not a thing chosen for
        return None
    return " ".join(words_)


def plain_value(value: str) -> bool:
    """A value a setting takes, not a purpose, a reference or a state."""
    first = clean(value).split()[:1]
    if first and first[0][:1].isupper() and first[0].lower() not in REFERENTS:
        return True                                  # a name ("Render", "Display Pro"), not a purpose
    first = [w.lower() for w in first]
    return bool(first) and first[0] not in VERB_STARTS and first[0] not in REFERENTS


def good_value(value: str) -> bool:
    v = norm_value(value)
    return bool(v) and v not in PRONOUNS and len(value) <= MAX_VALUE_CHARS and any(c.isalnum() for c in v) \
        and "[redacted" not in v


def source_time_known(event: dict) -> bool:
    """Whether an event's time is its source's own (not inferred from a
    neighbour or the file, not only when it was ingested): only such times
    can say which of two values came later."""
    return bool(event.get("ts")) and not (event.get("meta") or {}).get("ts_inferred")


def clip(text: str, limit: int = 240) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"
