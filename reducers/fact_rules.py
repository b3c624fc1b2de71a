"""Facts said in prose: the rule-based extractor for chat and notes.

Each sentence is tried against rules in order (first match wins); a rule
captures a subject (what the fact is about), a value, and sometimes the
value it replaces. The shapes are how people state settings and choices in
agent sessions, not one transcript's wording:

  config        set/change/switch/bump/raise X (from A) to B · X is now B ·
                X has been changed to B · X was moved/raised to B · X
                defaults to B · X should be B · the <setting> X is B (B a
                name, number or code, not a state) · KEY=value in prose
  decision      let's / we'll go with A (for X) · for X, we'll go with /
                use A · use A for X (after all) · use A
                instead of B · switch/migrate from B to A · we decided to
                use A (for X) · decided on A · chose / settled on A ·
                decision: …
  preference    I prefer A (over B) · always / never / don't … ·
                my preferred X is A
  architecture  X is built on / based on / runs on A · X uses A (X a
                component: backend, api, service, database …)
  implementation X endpoint/route is /path · X lives in / is defined in FILE
  issue         there is a bug in X · X is broken / failing · fixed X
  task_state    a "to do:" label · still need to … · X is not yet implemented

A sentence is passed over when it is a question, a condition ("if …"), a
hedge ("maybe", "could", "consider"), a plan not yet carried out ("let me",
"I'll", "want to"), or negated — they state no fact. Fenced code and quoted
lines are skipped: code is not prose (its settings come from fact_sources)."""
from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from reducers.fact_keys import (STATES, FactCandidate, clip, good_subject, good_value, label_of, norm_key, norm_value,
                                plain_value, specific_subject)
from reducers.fact_shapes import (CHANGE_VERB, COMPONENT, END, HEDGE, IMPERATIVE, LEAD_IN, LazyPattern, NEGATED, OLD,
                                  OLD_TO_END, BACK, CLOCK, PAST_CHANGE, PAST_CHANGE_WORDS, PLAN, QUALIFIER, QUESTION_START,
                                  Rule, SETTING_VAL, SUBJ, SUBJECT_START, SUBJ_BEFORE, VAL, WE, rx)
from reducers.fact_builders import (AUXILIARY, always_never, decided, fixed, issue, named_setting, not_done, preference,
                                    removed, retracted, subject_value, suffixed, todo, value_of,
                                    value_only)
from reducers.fact_personal import RULES as PERSONAL_RULES, TRIGGERS as PERSONAL_TRIGGERS, label_for, said_in_own_words
from reducers.prose import clauses, sentences
from reducers.secret_keys import names_something_else

SPEAKER_WEIGHT = {"user": 1.0, "note": 1.0, "assistant": 0.75, "tool": 0.8}
TYPE_WEIGHT = {"decision": 0.8, "preference": 0.8, "personal": 0.8, "config": 0.7, "architecture": 0.7, "issue": 0.6,
               "implementation": 0.5, "task_state": 0.4}
_CACHED_CHARS = 8192              # texts up to this long are remembered (memory stays bounded)



_RETRACT_LEAD = r"(?:never\s*mind|scratch\s+that|forget\s+(?:that|it)|ignore\s+that|on\s+second\s+thought)"
SUBJ2 = SUBJ.replace("?P<subj>", "?P<subj2>")

RULES: tuple[Rule, ...] = PERSONAL_RULES + (
    # -- preference (before the hedge filter bites "I'd prefer")
    Rule("prefer-over", "preference", rx(rf"\bi(?:'d| would)?\s+(?:really\s+|much\s+|strongly\s+)?prefer\s+{VAL}\s+"
                                          rf"(?:over|to|rather than|instead of)\s+{OLD}$"),
         preference, allow_hedge=True, allow_plan=True, max_value_words=8),
    Rule("prefer", "preference", rx(r"\bi(?:'d| would)?\s+(?:really\s+|much\s+|strongly\s+)?prefer\s+(?P<val>[^.;!?]{3,120})"),
         preference, allow_hedge=True, allow_plan=True, max_value_words=20),
    Rule("my-preferred", "preference", rx(rf"\bmy\s+(?:preferred|favou?rite)\s+{SUBJ}\s+is\s+{VAL}"),
         subject_value),
    Rule("always-never", "preference",
         rx(r"^(?:please\s+)?(?P<how>always|never|don'?t|do not|stop|avoid)\s+(?P<val>(?:use|using|add|run|write|"
             rf"put|commit|push|call|include|leave|make|create|format|indent|prefix|name)\b[^.;!?]{{2,80}})"),
         always_never, allow_negation=True, allow_plan=True, max_value_words=10),
    # -- decisions
    Rule("go-with-instead", "decision",
         rx(rf"\b{WE}\s+(?:go|going)\s+with\s+{VAL}\s+(?:instead of|over|rather than)\s+{OLD_TO_END}"),
         value_only, allow_plan=True),
    Rule("go-with-for", "decision", rx(rf"(?:\b{WE}\s+(?:go|going)|^(?:going|go))\s+with\s+(?P<val>.{{1,60}}?)\s+(?:for|as)\s+{SUBJ}{END}"),
         value_only, allow_plan=True),
    Rule("for-x-go-with", "decision",
         rx(rf"^(?:(?:and|also|ok(?:ay)?|so|then)[,\s]+)?for\s+(?!now\b|today\b|once\b|a while\b|this\b|that\b|me\b|you\b|us\b)"
             rf"(?:the\s+|our\s+)?{SUBJ},?\s+(?:{WE}\s+)?"
             rf"(?:(?:go|going|went|stick|sticking)\s+with|use|using|pick|picked|chose|choose|settled on)\s+{VAL}"),
         value_only, allow_plan=True),
    Rule("go-with", "decision", rx(rf"\b{WE}\s+(?:go|going|stick|sticking)\s+with\s+{VAL}"),
         value_only, allow_plan=True),
    Rule("use-instead", "decision",
         rx(rf"\b(?:{WE}\s+)?(?:use|using|adopt|pick)\s+{VAL}\s+(?:instead of|rather than|in place of)\s+{OLD_TO_END}"),
         value_only, allow_plan=True),
    Rule("use-for", "decision", rx(rf"(?:^(?:ok(?:ay)?,?\s+)?|\b{WE}\s+)(?:use|using|keep|keeping)\s+(?P<val>.{{1,60}}?)\s+(?:for|as)\s+"
                                    rf"(?:the\s+)?{SUBJ}{END}"),
         value_only, allow_plan=True),
    Rule("switch-from-to", "decision",
         rx(rf"\b(?:switch(?:ed|ing)?|mov(?:e|ed|ing)|migrat(?:e|ed|ing)|port(?:ed)?|replac(?:e|ed|ing))\s+"
             rf"(?:over\s+)?from\s+{OLD}\s+to\s+{VAL}"),
         value_only, allow_plan=True),
    Rule("use-not", "decision",
         rx(rf"^(?:(?:no|actually)[,.!]?\s+)?(?:please\s+)?use\s+{VAL},?\s+not\s+{OLD}$"),
         value_only, allow_negation=True),
    Rule("replace-with", "decision", rx(rf"\breplac(?:e|ed|ing)\s+{OLD}\s+with\s+{VAL}"), value_only,
         allow_plan=True),
    Rule("decided-for", "decision",
         rx(rf"\b(?:we|i)(?:'re|\s+are|'ve|\s+have)?\s+(?:decided|agreed|standardi[sz](?:ed|ing)|settled)\s+"
             rf"(?:to\s+(?:use|go with|switch to|adopt|keep|stick with)|on)\s+(?P<val>.{{1,60}}?)\s+(?:for|as)\s+{SUBJ}{END}"),
         value_only, allow_plan=True),
    Rule("decided", "decision",
         rx(rf"\b(?:we|i)(?:'ve|\s+have)?\s+decided\s+(?:to\s+(?:use|go with|switch to|adopt|keep|stick with)\s+|on\s+|"
             rf"(?P<act>to\s+))?{VAL}"),
         decided, allow_plan=True, max_value_words=10),
    Rule("decision-label", "decision", rx(r"^(?:decision|decided|we chose|final decision)\s*[:\-–]\s*(?P<val>.{3,120})$"),
         value_only, allow_plan=True, max_value_words=14),
    # "we chose A for X", "we're going back to A for X": the choice is X's
    Rule("chose-for", "decision",
         rx(rf"\b(?:we|i)(?:'ve|\s+have|'re|\s+are)?\s+(?:chose|picked|selected|opted for|settled on|(?:going|went|are going) back to)\s+"
             rf"(?P<val>.{{1,60}}?)\s+(?:for|as)\s+{SUBJ}{END}"),
         value_only, allow_plan=True),
    Rule("chose", "decision",
         rx(rf"\b(?:we|i)(?:'ve|\s+have)?\s+(?:chose|picked|selected|opted for|settled on)\s+{VAL}"), value_only,
         allow_plan=True),
    # -- retractions: "never mind, don't change the retry count" takes back the
    # value just set (the reconciler restores the one before it)
    Rule("retract-keep", "config",
         rx(rf"^{_RETRACT_LEAD}[,.:;!—–\s-]+(?:(?:don'?t|do not)\s+(?:change|touch)\s+(?:the\s+)?{SUBJ}(?:\s+after all)?|"
             rf"leave\s+(?:the\s+)?{SUBJ2}\s+(?:as it was|alone|unchanged|as is))$"),
         retracted, allow_negation=True, allow_plan=True, retract=True),
    Rule("retract-about", "config", rx(rf"^(?:{_RETRACT_LEAD}[,.:;!—–\s-]+)?(?:ignore|forget)\s+what\s+i\s+(?:just\s+)?said\s+about\s+(?:the\s+)?{SUBJ}$"),
         retracted, allow_plan=True, allow_negation=True, retract=True),      # "never mind" is no negation
    Rule("retract-change", "config",
         rx(rf"^(?:never\s*mind|forget(?:\s+about)?|undo|cancel)\s+(?:the\s+|my\s+)?{SUBJ}\s+change$"),
         retracted, allow_plan=True, retract=True),
    # -- removals (explicit: only these can become a DELETE)
    Rule("removed", "config",
         rx(rf"(?:^|\b(?:we|i)(?:'ve| have)?\s+)(?:removed|deleted|dropped|reverted|unset|disabled)\s+(?:the\s+)?{SUBJ}\s*"
             rf"(?:setting|flag|option|variable|config|override|entirely|completely)?$"),
         removed, allow_plan=True),
    # -- config
    Rule("change-from-to", "config", rx(rf"\b{CHANGE_VERB}\s+{SUBJ}\s+(?:from|off(?:\s+of)?)\s+{OLD}\s+to\s+{VAL}"),
         subject_value, setting=True),
    Rule("change-to", "config", rx(rf"\b{CHANGE_VERB}\s+{SUBJ}\s+(?:to|=)\s+{VAL}"), subject_value, setting=True),
    # "point the API URL at https://…": a setting aimed at an address
    Rule("point-at", "config", rx(rf"\bpoint(?:ed|s)?\s+{SUBJ}\s+(?:at|to)\s+{VAL}"), subject_value, setting=True),
    # "Redis now listens on 6380": a service's port said as where it listens
    Rule("listens-on", "config",
         rx(rf"{SUBJ_BEFORE}\s+(?:now\s+)?(?:listens|is listening|serves|is served)\s+on\s+(?:port\s+)?(?P<val>\d{{2,5}})\b"),
         lambda m, s: suffixed(subject_value(m, s, trailing=AUXILIARY), "port")),
    # "standup is at 9:30", "the nightly job runs at 02:00 UTC": a thing's time
    Rule("at-time", "config",
         rx(rf"{SUBJ_BEFORE}\s+(?:is|are|runs|run|happens|starts|begins)\s+(?:now\s+)?(?:daily\s+)?at\s+{CLOCK}"),
         lambda m, s: suffixed(subject_value(m, s, trailing=AUXILIARY), "time")),
    # "keep the max upload size at 10MB", "cap the pool at 20"
    Rule("keep-at", "config", rx(rf"\b(?:keep|leave|set|hold|cap|pin)\s+{SUBJ}\s+at\s+{SETTING_VAL}{QUALIFIER}{END}"),
         subject_value, setting=True, max_value_words=4),
    Rule("set-as", "config", rx(rf"\b(?:set|configure[ds]?)\s+{SUBJ}\s+as\s+{VAL}"), subject_value, setting=True),
    Rule("has-been-changed", "config",
         rx(rf"{SUBJ_BEFORE}\s+(?:has|have)\s+(?:now\s+)?been\s+(?:\w+ly\s+)?{PAST_CHANGE}\s+(?:from\s+{OLD}\s+)?to\s+{VAL}"),
         subject_value, setting=True),
    Rule("moved-to", "config",
         rx(rf"{SUBJ_BEFORE}(?:\s+(?:was\s+|were\s+|got\s+|is\s+being\s+)?(?:now\s+|just\s+|finally\s+)?{PAST_CHANGE}|{BACK})\s+"
             rf"(?:from\s+{OLD}\s+)?to\s+{VAL}"),
         lambda m, s: subject_value(m, s, trailing=AUXILIARY), setting=True),
    Rule("is-now", "config",
         rx(rf"{SUBJ_BEFORE}\s+(?:is|are)\s+now\s+(?:set to\s+|configured (?:to|as)\s+|pointing (?:to|at)\s+|on\s+)?{VAL}"),
         subject_value, setting=True),
    Rule("defaults-to", "config", rx(rf"{SUBJ_BEFORE}\s+(?:now\s+)?defaults?\s+to\s+{VAL}"), subject_value, setting=True),
    # a correction: "X should be Y, not Z" (the "not" names the value it replaces)
    Rule("should-be-not", "config",
         rx(rf"^(?:(?:no|actually)[,.!]?\s+)?{SUBJ_BEFORE}\s+(?:should|must)\s+(?:be|stay)\s+{VAL},?\s+not\s+{OLD}$"),
         subject_value, setting=True, allow_negation=True),
    Rule("should-be", "config", rx(rf"^{SUBJ_BEFORE}\s+(?:should|must)\s+(?:always\s+)?be\s+{VAL}$"), subject_value, setting=True),
    Rule("env-in-prose", "config", re.compile(r"(?<![\w$])(?P<subj>[A-Z][A-Z0-9]*_[A-Z0-9_]+|PORT|HOST)=(?P<val>[^\s,;'\"`)]+)"),
         subject_value),
    # -- architecture / implementation
    Rule("built-on", "architecture",
         rx(rf"{SUBJ_BEFORE}\s+(?:is|are)\s+(?:built|based|running|hosted|deployed)\s+(?:on|with|in)\s+{VAL}"),
         subject_value, setting=True),
    Rule("component-uses", "architecture",
         rx(rf"(?<![\w-])(?P<subj>(?:the\s+)?(?:[\w-]+\s+)?{COMPONENT})\s+(?:now\s+)?(?:uses|runs on|talks to|stores (?:data|state) in)\s+{VAL}"),
         subject_value),
    Rule("endpoint-is", "implementation",
         rx(rf"{SUBJ_BEFORE}\s+(?:endpoint|route|url|path|handler)\s+is\s+(?:at\s+)?(?P<val>/[\w./{{}}:-]+|https?://\S+)"),
         lambda m, s: (norm_key(SUBJECT_START.sub("", m.group("subj"))) + " " +
                       re.search(r"(endpoint|route|url|path|handler)\s+is", s, re.I).group(1).lower(),
                       value_of(m.group("val")), None, False)),
    Rule("lives-in", "implementation",
         rx(rf"{SUBJ_BEFORE}\s+(?:lives|is defined|is implemented|is located|now lives|is)\s+in\s+"
             rf"(?P<val>`?[\w./-]+\.\w{{1,8}}`?)"),
         subject_value),
    # "the staging DB host is db-staging-01": a setting noun heads the subject and
    # the value looks like one (a name, a number, code), not a state ("empty")
    Rule("setting-is", "config",
         rx(rf"^(?:(?:and|also|ok(?:ay)?|so|fyi|note|update)[,:\s]+)?(?:the\s+|our\s+)?{SUBJ_BEFORE}\s+(?:is|are)\s+"
             rf"{SETTING_VAL}{QUALIFIER}{END}"),
         subject_value, setting=True, max_value_words=4),
    # "Max connections: 500", "New timeout: 45 seconds": a label and its value
    Rule("setting-label", "config", rx(rf"^(?:new\s+)?{SUBJ_BEFORE}\s*:\s*{SETTING_VAL}{QUALIFIER}{END}"),
         named_setting, setting=True, max_value_words=4, said_by=("user", "note")),
    # "make the retry count 5": make as set, only with a value that looks like one
    Rule("make-it", "config", rx(rf"\bmake\s+(?:the\s+)?{SUBJ}\s+{SETTING_VAL}{END}"),
         subject_value, setting=True, max_value_words=4),
    # -- issues
    Rule("bug-in", "issue",
         rx(rf"\bthere(?:'s| is| was)\s+an?\s+(?:bug|issue|problem|regression)\s+(?:in|with)\s+{SUBJ}"
             rf"(?:\s*(?::|—|-|where|when)\s*(?P<val>.{{3,100}}))?$"),
         issue, allow_plan=True, allow_negation=True, max_value_words=16),
    Rule("is-broken", "issue", rx(rf"{SUBJ_BEFORE}\s+(?:is|are)\s+(?:still\s+|now\s+)?(?P<state>broken|failing|down|flaky)\b"),
         issue),
    Rule("fixed", "issue", rx(rf"^(?:i(?:'ve| have)?\s+|we(?:'ve| have)?\s+)?(?:fixed|resolved|solved)\s+(?:the\s+)?{SUBJ}"
                               rf"(?:\s+(?:bug|issue|problem|error))?$"),
         fixed, allow_plan=True),
    # -- task state
    Rule("todo", "task_state", rx(r"^(?:todo|fixme|still to do|remaining)\s*[:\-]\s*(?P<val>.{3,120})$"), todo,
         allow_plan=True, allow_negation=True, max_value_words=14),
    Rule("still-need", "task_state", rx(r"\b(?:we|i)\s+still\s+(?:need|have)\s+to\s+(?P<val>.{3,120})$"), todo,
         allow_plan=True, allow_negation=True, max_value_words=14),
    Rule("not-yet", "task_state",
         rx(rf"{SUBJ_BEFORE}\s+(?:is|are)\s+not\s+(?:yet\s+)?(?:implemented|done|finished|wired up|hooked up)(?:\s+yet)?$"),
         not_done, allow_negation=True),
)


# Words a rule cannot match without: substring tests on the lowercased
# sentence before the rule's own pattern (most sentences state no fact).
_TRIGGERS = {
    "prefer-over": ("prefer",), "prefer": ("prefer",), "my-preferred": ("preferred", "favorite", "favourite"),
    "always-never": ("always", "never", "don't", "dont", "do not", "stop", "avoid"),
    "go-with-instead": ("with",), "go-with-for": ("with",), "go-with": ("with",),
    "use-instead": ("instead", "rather", "in place"), "use-for": ("use", "using", "keep"),
    "switch-from-to": ("from",), "use-not": ("not",), "replace-with": ("replac",), "decided-for": ("decided", "agreed", "standardi", "settled"), "decided": ("decided",),
    "decision-label": ("decision", "decided", "chose"), "chose": ("chose", "picked", "selected", "opted", "settled"),
    "removed": ("removed", "deleted", "dropped", "reverted", "unset", "disabled"),
    "retract-keep": ("mind", "scratch", "forget", "ignore", "second thought"), "retract-about": ("said about",),
    "retract-change": (" change",),
    "keep-at": (" at ",), "chose-for": ("chose", "picked", "selected", "opted", "settled", "back to"), "point-at": ("point",), "at-time": (" at ",), "listens-on": ("listen", "serve"),
    "change-from-to": ("from", "off"), "change-to": ("to", "="), "set-as": ("as",), "has-been-changed": ("been",),
    "is-now": ("now",),
    "moved-to": ("set to", "back to", "up to", "down to", *PAST_CHANGE_WORDS[1:]),       # "set" alone is part of too many words
    "setting-is": (" is ", " are "), "setting-label": (":",), "make-it": ("make",),
    "for-x-go-with": ("for",), "defaults-to": ("default",), "should-be-not": ("not",), "should-be": ("be",), "env-in-prose": ("=",),
    "built-on": ("built", "based", "running", "hosted", "deployed"),
    "component-uses": ("uses", "runs on", "talks to", "stores"),
    "endpoint-is": ("endpoint", "route", "url", "path", "handler"), "lives-in": ("in",),
    "bug-in": ("bug", "issue", "problem", "regression"), "is-broken": ("broken", "failing", "down", "flaky"),
    "fixed": ("fixed", "resolved", "solved"), "todo": ("todo", "fixme", "to do", "remaining"), "still-need": ("still",),
    "not-yet": ("not",), **PERSONAL_TRIGGERS,
}


_ALL_TRIGGERS = tuple(sorted({t for ts in _TRIGGERS.values() for t in ts}))


_CLOCK_VALUE = re.compile(rf"^{CLOCK}$", re.I)
_VERSION = re.compile(r"^v?\d+(?:\.\d+){1,3}$")


_PURPOSE_OR_LEAD_IN = re.compile(r"^(?:to|in order to)\s+\w+", re.I)      # "To upgrade X to Y, here is how"


def _admissible(rule: Rule, sentence: str, speaker: str) -> bool:
    if rule.said_by and speaker not in rule.said_by:
        return False
    if sentence.endswith(("?", ":")) or QUESTION_START.match(sentence) or _PURPOSE_OR_LEAD_IN.match(sentence):
        return False                 # a question, a condition, a heading introducing a list, a purpose
    if speaker == "assistant" and rule.type in ("config", "decision", "architecture") and IMPERATIVE.match(sentence):
        return False                 # an agent's imperative is a plan step, not something done
    if not rule.allow_hedge and HEDGE.search(sentence):
        return False
    if not rule.allow_plan and PLAN.search(sentence):
        return False
    return rule.allow_negation or not NEGATED.search(sentence)


def prose_facts(text: str, speaker: str) -> list[FactCandidate]:
    """Facts stated in a message, note or tool output's prose (fresh
    objects each call: callers attach their source)."""
    found = _prose_facts(text, speaker) if len(text) <= _CACHED_CHARS else _read_prose(text, speaker)
    return [replace(f) for f in found]


@lru_cache(maxsize=4096)
def _prose_facts(text: str, speaker: str) -> tuple[FactCandidate, ...]:
    # Agent sessions repeat text verbatim (IDE preambles every turn, resent
    # instructions, a session copied into another): each is read once.
    return tuple(_read_prose(text, speaker))


# "Set the port to 8080 and the host to 0.0.0.0": the second clause's verb
# is the first's. A clause without one borrows it from a change just read.
_LABEL = re.compile(r"^[\w ,'-]{1,30}:\s+(?=(?:\S+\s+){3})")      # a label before a sentence of its own
_LEADING_CHANGE = re.compile(rf"\b{CHANGE_VERB}\b", re.I)
_VERBLESS_CHANGE = re.compile(r"^(?:the\s+)?[\w.-]+(?:\s+[\w.-]+){0,3}\s+(?:from\s+\S+\s+)?to\s+\S", re.I)
_CHANGE_RULES = ("change-to", "change-from-to")
_NOT_TAIL = re.compile(r"\s*(?:,|;|—|–| - )\s*(?:and\s+|but\s+)?not\s+(?:the\s+|a\s+)?[^\s,;]+(?:\s+[^\s,;]+){0,3}\s*$", re.I)


def _read_prose(text: str, speaker: str) -> list[FactCandidate]:
    out: list[FactCandidate] = []
    weight = SPEAKER_WEIGHT.get(speaker, 0.7)
    verb = None                                  # the change verb of the clause just read, if it gave a change
    for said in (c for s_ in sentences(text) for c in clauses(s_)):
        sentence = LEAD_IN.sub("", said) or said
        body = sentence.rstrip(".!").strip()
        found = _clause_fact(sentence, body, speaker, weight)
        corrected = _NOT_TAIL.search(body) if found is None else None
        if corrected and not NEGATED.search(body[:corrected.start()]):
            # "the target is now Render, not Fly.io": the "not" only names the
            # value it corrects, so the rest is read as if it stood alone
            cut = body[:corrected.start()]
            end = sentence.rstrip()[-1:]
            found = _clause_fact(cut + (end if end in "?!." else ""), cut, speaker, weight)     # a question stays one
        labelled = _LABEL.match(body)
        if found is None and labelled:            # "Planning note: the deadline is Thursday"
            found = _clause_fact(sentence[labelled.end():], body[labelled.end():], speaker, weight,
                                 personal=said_in_own_words(body[:labelled.end()]))
        if found is None and verb and _VERBLESS_CHANGE.match(body):
            found = _clause_fact(sentence, f"{verb} {body}", speaker, weight)     # the clause as said is its text
        lead = _LEADING_CHANGE.search(body)
        if found is not None and found.rule.removeprefix("prose:") in _CHANGE_RULES:
            verb = lead.group(0) if lead else verb
        else:
            verb = None
        if found is not None:
            found.text = clip(said)                  # the clause as said, lead-in and all
            out.append(found)
    return out


def _clause_fact(sentence: str, body: str, speaker: str, weight: float, personal: bool = True) -> FactCandidate | None:
    """The first rule's fact in one clause (`body`, matched; `sentence`, as
    said: judged and kept as the fact's text), or None. `personal`: whether
    an "I …" here is the speaker's own (not after "Bob:" or "He wrote:")."""
    low = body.lower()
    present = {t for t in _ALL_TRIGGERS if t in low}
    if not present:
        return None
    for rule in RULES:
        if present.isdisjoint(_TRIGGERS[rule.name]) or (rule.type == "personal" and not personal):
            continue
        m = rule.pattern.search(body)
        if m is None or not _admissible(rule, sentence, speaker):
            continue
        built = rule.build(m, body) if rule.build else None
        if not built:
            continue
        key, value, replaces, delete = built
        if not _plausible(rule, key, value):
            continue
        if rule.setting and not specific_subject(key) and _VERSION.match(value) and len(key.split()) <= 2:
            key = f"{key} version"                    # "upgrade Python to 3.11": the Python version
        elif rule.setting and not specific_subject(key) and _CLOCK_VALUE.match(value) and len(key.split()) <= 3:
            key = f"{key} time"                       # "standup moved to 10:00": the standup's time
        if rule.setting and not (specific_subject(key) and plain_value(value)):
            continue
        if rule.name == "is-now" and norm_value(value).split()[0] in STATES:
            continue                                  # "X is now ready": a state, not a value
        return FactCandidate(type=rule.type, key=key, value=value, text=clip(sentence),
                             importance=round(TYPE_WEIGHT[rule.type] * weight, 3),
                             label=_label(m, key), replaces=replaces, delete=delete, retract=rule.retract,
                             rule=f"prose:{rule.name}")
    return None


# A credential said in prose ("the API key is Xk29…", "my password is …")
# that the redactor's `name = value` shapes did not catch: never a fact, so
# never in the digest a person pastes into CLAUDE.md.
_SECRET_WORD = re.compile(r"\b(?:password|passphrase|passcode|secret|api key|apikey|access key|private key|"
                          r"credentials?|token|pin)\b(?P<rest>.*)$")


def names_a_secret(subject: str) -> bool:
    """"api key", "db password", "github token"; not "token ttl" or
    "password reset url" (a secret's setting, not the secret)."""
    m = _SECRET_WORD.search(subject)
    return m is not None and not names_something_else(m.group("rest"))


def _plausible(rule: Rule, key: str, value: str) -> bool:
    subject = key.split(": ", 1)[1] if ": " in key else key
    if not good_subject(subject) or not good_value(value) or names_a_secret(subject):
        return False
    if len(value.split()) > rule.max_value_words:
        return False
    return ": " in key or norm_value(value) != subject      # a key named after its own value says nothing


def _label(m: re.Match, key: str) -> str:
    if (shown := label_for(key)) is not None:
        return shown
    subj = m.groupdict().get("subj")
    if subj and ": " not in key:
        return label_of(SUBJECT_START.sub("", subj))
    return key
