"""English words whose inflections no suffix rule reaches: "run" and
"ran", "buy" and "bought", "child" and "children". A stemmer keeps them
apart, so a question in one tense ("What did Melanie buy?") missed the
line in another ("I bought a kayak"). Each family below is one word's
spellings; recall counts them as one query term, as it does the spellings
that share a stem.

Left out on purpose: forms that are also common words of their own
("left", "found", "saw", "rose", "bit", "bound", "led", "fed", "felt",
"ground", "wound", "lay", "lie", "fell", "lit", "won", "bore", "rang",
"string", "spring", "lives", "leaves"), where a match would more often
be the other word; and the auxiliaries (be, have, do),
which queries drop as stop words anyway."""
from __future__ import annotations

from functools import lru_cache

_FAMILIES = """
arise arose arisen | awake awoke awoken | beat beaten | become became | begin began begun
bend bent | bite bitten | bleed bled | blow blew blown | break broke broken | breed bred | bring brought
build built | burn burnt | buy bought | catch caught | choose chose chosen | cling clung | come came
creep crept | deal dealt | dig dug | draw drew drawn | dream dreamt | drink drank drunk | drive drove driven
eat ate eaten | fight fought | flee fled | fling flung | fly flew flown
forbid forbade forbidden | forget forgot forgotten | forgive forgave forgiven | freeze froze frozen
get got gotten | give gave given | go went gone | grow grew grown | hang hung | hear heard | hide hid hidden
hold held | keep kept | kneel knelt | know knew known | leap leapt | learn learnt
lend lent | lose lost | make made | mean meant | meet met | mislead misled | mistake mistook mistaken
overcome overcame | oversee oversaw overseen | overtake overtook overtaken | pay paid | prove proven
rebuild rebuilt | rewrite rewrote rewritten | ride rode ridden | rise risen | run ran
say said | see seen | seek sought | sell sold | send sent | sew sewn | shake shook shaken | shine shone
shoot shot | show shown | shrink shrank shrunk | sing sang sung | sink sank sunk | sit sat | sleep slept
slide slid | speak spoke spoken | speed sped | spend spent | spin spun | stand stood
steal stole stolen | stick stuck | sting stung | stink stank stunk | strike struck stricken
strive strove striven | swear swore sworn | sweep swept | swim swam swum | swing swung | take took taken
teach taught | tear tore torn | tell told | think thought | throw threw thrown | tread trod trodden
undergo underwent undergone | understand understood | undertake undertook undertaken | wake woke woken
wear wore worn | weave wove woven | weep wept | withdraw withdrew withdrawn | write wrote written
child children | man men | woman women | person people | mouse mice | foot feet | tooth teeth | goose geese
wife wives | knife knives | wolf wolves | half halves | shelf shelves
thief thieves | loaf loaves | calf calves | crisis crises | thesis theses | analysis analyses
criterion criteria | phenomenon phenomena | cactus cacti | fungus fungi | nucleus nuclei | stimulus stimuli
alumnus alumni | index indices | matrix matrices | vertex vertices | appendix appendices
"""


@lru_cache(maxsize=1)
def _table() -> dict[str, tuple[str, ...]]:
    table: dict[str, tuple[str, ...]] = {}
    for family in _FAMILIES.replace("\n", " | ").split("|"):
        words = family.split()
        for word in words:
            table[word] = tuple(w for w in words if w != word)
    return table


def irregular_forms(word: str) -> tuple[str, ...]:
    """The other spellings of `word` that no suffix rule reaches ("ran" ->
    "run"; "run" -> "ran"); empty for a word with none."""
    return _table().get(word, ())
