"""Facts a user states about themselves: where they live, who they work
for, the people around them, the tools they use.

    location   I moved / relocated to P (from Q) · I live in P · I'm based in P ·
               my home is in P
    employer   I work at / for E · I'm working at E · I started a new job at E ·
               I joined E as … · my employer / company is E
    my <role>  my manager is N · my new manager is N · N is my manager
    tools      I use T (now) · I'm using T · I switched (from S) to T ·
               I use T as my editor
    leaving    I left E · I quit my job at E · I no longer work at E · I no longer
               use T · I stopped using T · N is no longer my manager

Only a user's (or a note's) own first-person sentence counts: the agent's
"I moved the file to src/" is work, "my sister moved to Rome" and "she
said she moved" are about someone else, and questions, conditions, hedges
and plans are passed over by the same filter as every other rule. Places,
employers and people are names (capitalised, or in a script without case);
"I moved to a new team" names none. A leaving is a removal of the value it
names: the reconciler deletes the fact holding that value, whatever its
key, and leaves a fact holding another value alone."""
from __future__ import annotations

import re

from reducers.fact_keys import norm_key
from reducers.fact_shapes import Rule, rx
from reducers.tool_kinds import kind_of, tool_shaped

KEY = "user: "                   # every personal fact's key starts so: the user, not a setting
TOOL_KEY = KEY + "uses "         # a tool is keyed by its own name ("user: uses vim")
SWITCHED = "me-switched"
_ADV = r"(?:\s+(?:just|recently|finally|now|officially|actually|already|also|eventually|since))*"
# A time said first ("These days I live in …", "As of May, I work for …").
_THEN = (r"^(?:(?:these\s+days|nowadays|currently|now|lately|recently|as\s+of\s+[^,]{1,30}|since\s+[^,]{1,30}|"
         r"just\s+so\s+you\s+know|for\s+(?:context|the\s+record|what\s+it'?s\s+worth)|by\s+the\s+way|as\s+you\s+know|"
         r"(?:quick|small|personal|big|good)\s+(?:update|news)|no),?\s+)?")         # "No, I work at Globex, not Acme"
_PERFECT = rf"^i(?:'ve|\s+have)?{_ADV}"
_CONNECTORS = frozenset("de da do dos das del della di du la le los las el am der den van von of upon sur "
                        "y e".split())
# A name after "of"/"upon" that is a date, not the rest of a place's name: "Lisbon of May".
_CALENDAR = frozenset("monday tuesday wednesday thursday friday saturday sunday january february march april may "
                      "june july august september october november december".split())
_DETERMINERS = frozenset("the a an this that these those it its them my your our his her their some any both all "
                         "each every something anything nothing one another other same".split())
_CODE_CHARS = re.compile(r"[_/@:#+=<>()\[\]{}\\|$%^*~`\d]|\.(?!\w)")      # "Booking.com" is a name, "utils." not
# When something happened, said after it: "last year", "in March", "two weeks ago".
_WHEN = (r"(?:(?:last|this|next)\s+\w+|yesterday|today|recently|earlier|(?:about\s+)?(?:a|an|one|two|three|four|five|"
         r"six|a\s+few|several|\d+)\s+\w+\s+ago|(?:in|since|back\s+in)\s+(?-i:[A-Z]\w+|\d{4})(?:\s+\d{4})?)")
_WHEN_TAIL = re.compile(rf"^(?:{_WHEN})?$", re.I)
# What may follow a tool's name in "I use T …" and leave it the whole statement.
_TOOL_TAIL = re.compile(rf"^(?:now|these days|nowadays|instead|again|exclusively|daily|every day|full[- ]time|too|as well|"
                        rf"at work|at home|for everything|for work|for all my \w+|all the time|{_WHEN})?$", re.I)
_JOINING = frozenset("to from for on at in with by of into onto over about as via than and or but so because".split())
_AS_MY = re.compile(r"^as\s+my\s+(?:main\s+|primary\s+|daily\s+|default\s+)?(?P<noun>[a-z]+)$", re.I)
# "my <role> is …" where the role is not something said about a thought or the work.
_NOT_ROLES = frozenset("""problem issue question point guess bet concern goal plan idea worry fear hope
understanding assumption code error output test branch commit suggestion answer request task change fix
bad fault pleasure turn mistake take view opinion thought feeling sense impression reason excuse
favorite favourite preferred""".split())
# Roles whose value is a tool's lowercase name ("my editor is vim"), not only a Name.
_TOOL_ROLES = frozenset("editor ide shell terminal browser os distro language keyboard layout".split())
_SAME_ROLE = {"boss": "manager", "company": "employer", "workplace": "employer", "hometown": "location",
              "city": "location", "home": "location"}


_TITLE = re.compile(r"^(?-i:[A-Z][a-z]{0,3})\.$")


def _name_word(word: str) -> bool:
    """A word of a proper name: capitalised, or in a script without case
    (東京), and not code."""
    first = word[:1]
    if not first.isalpha() or _CODE_CHARS.search(word):
        return False
    return first.isupper() or not first.islower()


def _name(text: str) -> tuple[str, str] | None:
    """The proper name `text` starts with and the rest ("Lisbon last
    month" -> ("Lisbon", "last month")); None when it starts with none."""
    words = text.strip().strip(",").split()
    if words and words[0].lower() == "the":
        words = words[1:]
    taken: list[str] = []
    for i, w in enumerate(words):
        bare = w.rstrip(",;:!?")
        if _TITLE.match(bare) and i + 1 < len(words) and _name_word(words[i + 1].rstrip(",;:!?")) and len(taken) < 5:
            taken.append(bare)                   # "Dr. Patel", "St. Louis", "J. Smith"
        elif _name_word(bare) and len(taken) < 5:
            taken.append(bare)
            if bare != w:
                break
        elif taken and bare.lower() in _CONNECTORS and i + 1 < len(words) and _name_word(words[i + 1]) \
                and words[i + 1].rstrip(",;:!?.").lower() not in _CALENDAR:
            taken.append(bare.lower())
        else:
            break
    if not taken:
        return None
    return " ".join(taken), " ".join(words[len(taken):]).strip(" ,")


def _tool(text: str, rest_ok: re.Pattern = _TOOL_TAIL) -> tuple[str, str] | None:
    """A tool's name (one or two words, not a pronoun or an article) and
    what follows it, when that is a tail `rest_ok` allows."""
    words = text.split(",")[0].split()
    for n in (1, 2):
        if len(words) < n or any(w.lower() in _DETERMINERS for w in words[:n]):
            return None
        if n > 1 and words[n - 1].lower() in _JOINING:
            return None                          # "vim for | this project": a use's scope, not a name's part
        name, rest = " ".join(words[:n]), " ".join(words[n:])
        if rest_ok.match(rest) or _AS_MY.match(rest):
            return name.strip(" ,"), rest
    return None


_VERSIONED = re.compile(r"^v?\d+(?:\.\d+)+\b|^v\d")         # "Python 3.12": a release, not a town
# Words around a move that say it is one of home: "moved to a new city", "our apartment in …".
_HOME_WORDS = re.compile(r"\b(?:city|town|village|country|state|apartment|flat|house|home|neighbou?rhood|suburbs?|"
                         r"lease|rent|movers|packing|unpacking|weather|timezone|time\s+zone)\b", re.I)


# What may follow a new home's name: when, why, from where, an aside. A noun
# makes the name a modifier ("moved to the Denver office"): no home.
_AFTER_HOME = re.compile(rf"^(?:$|[,;(!—–-]|\d|(?:{_WHEN})|(?:from|for|with|in|on|at|since|after|before|because|when|"
                         r"where|while|and|but|so|to|about|around|ago|now|then|again|back|permanently|finally|"
                         r"already|just|last|this|next|recently|yesterday|today|earlier|together)\b)", re.I)


_LONG_AGO = re.compile(r"\b(?:when\s+i\s+was|as\s+an?\s+(?:kid|child|teen|teenager|baby|student)|growing\s+up|"
                       r"in\s+(?:my\s+)?(?:childhood|youth|twenties|teens))\b", re.I)


def _moved(m: re.Match, sentence: str):
    """A move of home: to a name not shaped like a tool ("we moved to
    Kubernetes" is a team's switch). A bare "Moved to X" (no "I" or "we")
    also needs a word that says home, or the place it was left."""
    found = _name(m.group("rest"))
    if found is None or tool_shaped(found[0]) or found[0].lower() in _CALENDAR or _VERSIONED.match(found[1]):
        return None                               # "moved to March", "moved to Python 3.12"
    place, rest = found
    aside = re.match(rf"\s*(?:the\s+)?{re.escape(place)}\s*[,;:(!—–-]", m.group("rest"), re.I)
    if not (aside or _AFTER_HOME.match(rest)):     # "Austin, still unpacking": an aside after the name
        return None
    if _LONG_AGO.search(rest):
        return None                               # "moved to Denver when I was 5": a home of a past life

    said_from = _name(m.group("from")) if m.group("from") else None
    if said_from is not None and said_from[1]:
        said_from = None                          # "from the office in Leeds": not a place's whole name
    old = said_from or (_name(rest[5:]) if rest.lower().startswith("from ") else None)
    if old is not None and tool_shaped(old[0]):
        return None                               # "moved from Jenkins to Buildkite"
    if not (m.group("who") or m.group("verb").lower() != "moved" or m.group("home") or old or _HOME_WORDS.search(sentence)):
        return None
    return KEY + "location", place, old[0] if old else None, False


def _place(m: re.Match, sentence: str):
    found = _name(m.group("rest"))
    return (KEY + "location", found[0], None, False) if found else None


def _employer(m: re.Match, sentence: str):
    found = _name(m.group("rest"))
    if found is None or found[1][:1].isdigit():
        return None                              # "I started at Step 2": a numbered thing, not a company
    return KEY + "employer", found[0], None, False


def _joined(m: re.Match, sentence: str):
    """"I joined Stripe as a data engineer": a place of work, said with the
    role taken there (a bare "I joined Zoom" may be a call)."""
    found = _name(m.group("rest"))
    if found is None or not re.match(r"^as\s+(?:an?\s+|the\s+)?\w+", found[1], re.I):
        return None
    return KEY + "employer", found[0], None, False


def _left(m: re.Match, sentence: str):
    """"I left Acme (in March)" removes Acme; "I left Acme for Globex" is a
    new employer."""
    found = _name(m.group("rest"))
    if found is None:
        return None
    gone, rest = found
    then = _name(rest[4:]) if rest.lower().startswith("for ") else None
    if then is not None:
        return KEY + "employer", then[0], gone, False
    key = KEY + ("location" if m.group("home") or m.group("home2") else "employer")
    return (key, gone, gone, True) if _WHEN_TAIL.match(rest) else None


def _role(m: re.Match, sentence: str):
    noun = " ".join(m.group("noun").lower().split())
    if any(w in _NOT_ROLES for w in noun.split()):
        return None
    rest = m.group("rest")
    found = _name(rest)
    if found is None and noun in _TOOL_ROLES:
        found = _tool(rest)
    if found is None and noun in _OWN_NAME_ROLES:
        found = _lowercase_name(rest)
    if found is None or (found[1] and not _TOOL_TAIL.match(found[1])):
        return None
    return KEY + _SAME_ROLE.get(noun, noun), found[0], None, False


# Roles whose value is the speaker's own name, which people type in lowercase too ("my name is sam").
_OWN_NAME_ROLES = frozenset("name nickname".split())
# Words that follow "call me" / "my name is" without being a name: "call me back", "call me crazy".
_NOT_A_NAME = frozenset("""back later tomorrow tonight today now soon anytime sometime again first whenever when if
crazy old fashioned old-fashioned paranoid lazy picky weird skeptical sceptical biased impatient naive curious
not never just only maybe""".split())
_LOWER_NAME = re.compile(r"^[^\W\d_]+(?:[-'][^\W\d_]+)?$")


def _lowercase_name(text: str) -> tuple[str, str] | None:
    """A first name typed in lowercase, alone in its clause ("sam"): one
    word of letters, not a pronoun, article or a word "call me" takes."""
    words = text.strip(" ,").split()
    if len(words) != 1:
        return None
    word = words[0].rstrip("!.")
    low = word.lower()
    if not _LOWER_NAME.match(word) or low in _NOT_A_NAME or low in _DETERMINERS or low in _NOT_ROLES:
        return None
    return word, ""                              # as typed: values compare without case


def _call_me(m: re.Match, sentence: str):
    """"Call me Alex", "you can call me sam": the name the user goes by."""
    rest = m.group("rest")
    found = _name(rest)
    if found is not None and found[1].lower().strip(" !.") in ("", "please"):
        return KEY + "name", found[0], None, False
    found = _lowercase_name(re.sub(r",?\s+please$", "", rest, flags=re.I))
    return (KEY + "name", found[0], None, False) if found else None


def _role_named_first(m: re.Match, sentence: str):
    """"Dana is my manager"; "Dana is no longer my manager" takes it back."""
    val = m.group("val")
    noun = " ".join(m.group("noun").lower().split())
    if not all(_name_word(w) for w in val.split()) or any(w in _NOT_ROLES for w in noun.split()):
        return None
    gone = bool(m.group("gone"))
    return KEY + _SAME_ROLE.get(noun, noun), val, val if gone else None, gone


def _uses(m: re.Match, sentence: str):
    found = _tool(m.group("rest"))
    if found is None:
        return None
    name, rest = found
    old = m.groupdict().get("old")
    as_my = _AS_MY.match(rest)
    key = KEY + _SAME_ROLE.get(as_my.group("noun").lower(), as_my.group("noun").lower()) if as_my else tool_key(name)
    return key, name, old.strip() if old else None, False


def _stopped(m: re.Match, sentence: str):
    found = _tool(m.group("rest"), re.compile(r"^(?:anymore|any more|again|now|altogether|completely|entirely)?$",
                                              re.I))
    if found is None:
        return None
    return tool_key(found[0]), found[0], found[0], True


# Labels under which "I …" is still the speaker's own: "Quick context: I moved
# to Lisbon". Any other label may name who said it ("Bob: I work at Initech",
# "He wrote: …", "Email from Dana: …"): a line quoted, not the user's news.
_OWN_LABEL_WORDS = frozenset("""reminder context update note fyi btw ps heads up background news fun fact about me also
for the record side correction quick personal small big good some recap intro introduction info
life admin
for you your the a an my on of to""".split())                  # "Context for you:", "A note on me:"


def said_in_own_words(label: str) -> bool:
    """Whether a sentence's label ("Quick context:") leaves its "I …" the speaker's."""
    words = re.findall(r"[a-z]+", label.lower())
    return bool(words) and all(w in _OWN_LABEL_WORDS for w in words)


def tool_key(name: str) -> str:
    return TOOL_KEY + norm_key(name).split()[0]


def keyed_by_value(key: str) -> str | None:
    """The key prefix under which a fact is found by its value: a tool
    switched to ("user: uses vim" holding neovim) is the tool now used, so
    "I use neovim" is a repeat of it, not a second fact."""
    return TOOL_KEY if key.startswith(TOOL_KEY) else None


def switched_kind(cand_key: str, cand_value: str, cand_rule: str, key: str, value: str) -> bool:
    """Whether a tool switched to (`cand_value` under `cand_key`, from rule `cand_rule`) replaces
    the live fact `key` = `value`: a tool of the same known kind ("Podman"
    for "Docker"), keyed by its name or by the kind ("user: editor")."""
    if not cand_key.startswith(TOOL_KEY) or cand_rule.removeprefix("prose:") != SWITCHED or key == cand_key:
        return False
    kind = kind_of(cand_value)
    if kind is None:
        return False
    if key.startswith(TOOL_KEY):
        return kind_of(value) == kind
    return key == KEY + kind


def label_for(key: str) -> str | None:
    """How a personal fact is shown under "About the user": "location",
    "manager"; "uses" for a tool (its key names the first tool said, its
    value the one used now)."""
    if key.startswith(TOOL_KEY):
        return TOOL_KEY.removeprefix(KEY).rstrip()
    return key.removeprefix(KEY) if key.startswith(KEY) else None


_REST = r"\s+(?P<rest>.+)$"
# "I'm a data engineer at Spotify": a word that names a job by its ending or as a rank.
_OCCUPATION = (r"(?!(?:member|customer|user|subscriber|beginner|newcomer|passenger|visitor|player|winner|speaker|"
               r"believer|regular|viewer|reader|listener|buyer|seller|voter)\b)"
               r"(?:[\w-]+(?:er|or|ist|ian|ant|ent|ect|eer)|lead|intern|head|vp|cto|ceo|cfo|pm|sre|dev)")
_SAID_BY = ("user", "note")

RULES: tuple[Rule, ...] = (
    # "I moved to Lisbon", "we relocated from Austin to Seattle", "Just moved to Denver!"
    Rule("me-moved", "personal",
         rx(rf"{_THEN}(?:(?P<who>i|we)(?:'ve|\s+have)?{_ADV}\s+|(?:just\s+)?)(?P<verb>moved|relocated|emigrated)"
            rf"(?:\s+(?P<home>back|house|home|back\s+home))?(?:\s+from\s+(?P<from>\S+(?:\s+\S+){{0,3}}?))?\s+to{_REST}"),
         _moved, said_by=_SAID_BY, max_value_words=6),
    Rule("me-live", "personal",
         rx(rf"{_THEN}(?:i(?:\s+(?:now|currently|still))?\s+live|i(?:'m|\s+am)\s+(?:now\s+|currently\s+)?(?:living|based|located|"
            rf"settled)|my\s+(?:home|house|apartment|flat)\s+is(?:\s+now)?)\s+in{_REST}"),
         _place, said_by=_SAID_BY, max_value_words=6),
    Rule("me-work", "personal",
         # "with" names a place of work only after a job ("an offer with Globex"):
         # "I work with Dana" is a colleague
         rx(rf"{_THEN}(?:(?:i(?:\s+(?:now|currently|still))?\s+work|i(?:'m|\s+am)\s+(?:now\s+|currently\s+)?working|"
            rf"{_PERFECT[1:]}\s+(?:been|started)\s+working|{_PERFECT[1:]}\s+started)(?:\s+\w+ly)?\s+(?:at|for)|"
            rf"i(?:'m|\s+am)\s+(?:now\s+|currently\s+)?employed\s+(?:at|by)|"
            rf"{_PERFECT[1:]}\s+(?:started|got|took|accepted|landed)\s+(?:a\s+|an\s+|the\s+)?(?:new\s+)?(?:\w+\s+)?"
            rf"(?:job|position|role|offer)\s+(?:at|with)|"
            rf"i(?:'m|\s+am)\s+(?:now\s+)?an?\s+(?:[\w-]+\s+){{0,3}}{_OCCUPATION}\s+(?:at|for|with)){_REST}"),
         _employer, said_by=_SAID_BY, max_value_words=6),
    Rule("me-joined", "personal", rx(rf"{_THEN}{_PERFECT[1:]}\s+joined{_REST}"), _joined, said_by=_SAID_BY, max_value_words=6),
    Rule("me-left", "personal",
         rx(rf"(?:{_PERFECT}\s+(?:left|quit|resigned\s+from)\s+(?:my\s+(?:job|position|role)\s+(?:at|with)\s+)?|"
            rf"^i\s+(?:no\s+longer|don'?t|do\s+not)\s+(?:work\s+(?:at|for)|(?P<home>live\s+in))\s+|"
            rf"^i(?:'m|\s+am)\s+no\s+longer\s+(?:at|with|working\s+(?:at|for)|employed\s+by|(?P<home2>living\s+in))\s+)(?P<rest>.+?)"
            rf"(?:\s+(?:anymore|any\s+more))?$"),
         _left, said_by=_SAID_BY, allow_negation=True, max_value_words=6),
    Rule("my-role", "personal",
         rx(rf"^my\s+(?:new\s+|current\s+)?(?P<noun>[a-z]+(?:\s+[a-z]+)?)(?:\s+of\s+choice)?\s+(?:is|'s)\s+(?:now\s+)?"
            rf"{_REST[3:]}"),
         _role, said_by=_SAID_BY, max_value_words=6),
    Rule("role-is-mine", "personal",
         rx(r"^(?P<val>[^\s,;]+(?:\s+[^\s,;]+){0,2}?)\s+is\s+(?:now\s+)?(?P<gone>no\s+longer\s+)?my\s+(?:new\s+)?"
            rf"(?P<noun>[a-z]+(?:\s+[a-z]+)?)(?:\s+(?:now|again|as\s+of\s+.+|since\s+.+|starting\s+.+|{_WHEN}))?$"),
         _role_named_first, said_by=_SAID_BY, allow_negation=True, max_value_words=3),
    Rule("call-me", "personal",
         rx(rf"^(?:(?:please|just|you\s+can|feel\s+free\s+to|everyone|people|most\s+people|friends)\s+)?"
            rf"call(?:s)?\s+me{_REST}"),
         _call_me, said_by=_SAID_BY, allow_plan=True, max_value_words=3),
    Rule("me-stopped", "personal",
         rx(rf"(?:^i\s+(?:no\s+longer|don'?t|do\s+not)\s+use|{_PERFECT}\s+(?:stopped|quit|gave\s+up|given\s+up|"
            rf"ditched)\s+using|^i(?:'m|\s+am)\s+(?:no\s+longer|not)\s+using(?=.*\b(?:anymore|any\s+more)$)){_REST}"),
         _stopped, said_by=_SAID_BY, allow_negation=True, max_value_words=2),
    Rule("me-uses", "personal",
         rx(rf"{_THEN}(?:i(?:\s+(?:now|mostly|mainly|only|still|also))?\s+use|i(?:'m|\s+am)\s+(?:now\s+)?using|"
            rf"{_PERFECT[1:]}\s+(?:been|started)\s+using){_REST}"),
         _uses, said_by=_SAID_BY, max_value_words=2),
    # a switch: it replaces the tool of the same kind the ledger holds, named or not
    Rule(SWITCHED, "personal",
         rx(rf"{_THEN}{_PERFECT[1:]}\s+(?:switched|changed|migrated|moved\s+over)"
            rf"(?:\s+over|\s+back)?(?:\s+from\s+(?P<old>\S+(?:\s+\S+)?))?\s+to{_REST}"),
         _uses, said_by=_SAID_BY, max_value_words=2),
)

TRIGGERS = {"me-moved": ("moved", "relocated", "emigrated"), "me-live": (" in ",), "me-work": ("work", "employ", "job", "m a", "m an",
            "position", "role", "offer", "started"), "me-joined": ("joined",),
            "me-left": ("left", "quit", "resigned", "longer", "n't", "not"), "my-role": ("my ",),
            "role-is-mine": (" my ",), "call-me": ("call",), "me-stopped": ("use", "using"),
            "me-uses": ("use", "using"), SWITCHED: ("switched", "changed", "migrated", "moved over")}
