"""What users say about themselves, told over several sessions, and what
the nightly sweep makes of it: a new personal fact is an ADD, a later
session's change (moved again, a new employer, a new manager, another
tool) supersedes it, an explicit "I left" / "I no longer use" is a DELETE
of that value (with --allow-delete), a repeat is NONE. Hypotheticals,
questions, other people's news, negations, quotes, code and non-English
lines make no fact at all. The log is never touched and the digest says
only the current value.

Each story is a list of sessions; each user line carries the decision it
must produce (action, key, value) or None when it must produce nothing."""
from __future__ import annotations

import hashlib

import pytest

from reducers.fact_keys import FactCandidate
from reducers.fact_reconcile import Knowledge, Reconciler
from reducers.fact_rules import prose_facts
from stores.store import Store
from stores.sweep import facts
from tests.helpers import cli
from tests.sessions import ClaudeSession

LOC, JOB, BOSS = "user: location", "user: employer", "user: manager"

STORIES = {
    "relocation": [
        [("Hi! Quick context: I moved to Lisbon last month.", ("ADD", LOC, "Lisbon")),
         ("If I moved to Paris instead, would the timezone math change?", None),
         ("My sister moved to Rome last year.", None)],
        [("I live in Lisbon, so schedule things in WET please.", ("NONE", LOC, "Lisbon")),
         ("Did you move the cron job to Berlin time?", None)],
        [("Update: I relocated to Berlin for the new role.", ("SUPERSEDE", LOC, "Berlin")),
         ("I'm thinking about moving to Denver eventually.", None)],
    ],
    "back-and-forth": [
        [("I'm based in Toronto.", ("ADD", LOC, "Toronto"))],
        [("I just moved to Montréal from Toronto.", ("SUPERSEDE", LOC, "Montréal")),
         ("I might move to Austin next year.", None)],
        [("I moved back to Toronto in June.", ("SUPERSEDE", LOC, "Toronto")),
         ("I live in Toronto again.", ("NONE", LOC, "Toronto"))],
    ],
    "employer": [
        [("I work at Acme Corp on the payments team.", ("ADD", JOB, "Acme Corp")),
         ("Tom told me he works at Initech.", None)],
        [("Heads up: I accepted an offer with Globex!", ("SUPERSEDE", JOB, "Globex")),
         ("I want to work at Stripe someday.", None)],
        [("I never worked at Google.", None),
         ("I left Globex in March.", ("DELETE", JOB, "Globex"))],
    ],
    "employer-named-first": [
        [("My employer is Initech.", ("ADD", JOB, "Initech"))],
        [("I left Initech for Hooli.", ("SUPERSEDE", JOB, "Hooli")),
         ("I work for Hooli.", ("NONE", JOB, "Hooli"))],
        # Initech is no longer the known value: nothing to remove
        [("I no longer work at Initech.", ("NONE", JOB, None))],
    ],
    "manager": [
        [("My manager is Dana Whitfield.", ("ADD", BOSS, "Dana Whitfield")),
         ("My sister's manager is Tom.", None)],
        [("Reminder: Dana Whitfield is my manager.", ("NONE", BOSS, "Dana Whitfield"))],
        [("Priya Natarajan is my new manager as of this week.", ("SUPERSEDE", BOSS, "Priya Natarajan")),
         ("Dana Whitfield is no longer my manager.", ("NONE", BOSS, None))],
    ],
    "editor": [
        [("I use vim for everything.", ("ADD", "user: uses vim", "vim")),
         ("Would I use Emacs if I had to write Lisp?", None)],
        [("I switched from vim to Neovim last year.", ("SUPERSEDE", "user: uses vim", "Neovim"))],
        [("I'm using Neovim.", ("NONE", "user: uses vim", "Neovim")),
         ("I no longer use tmux.", ("NONE", "user: uses tmux", None)),
         ("I stopped using Neovim, VS Code is fine.", ("DELETE", "user: uses vim", "Neovim"))],
    ],
    # "we" and a bare "relocated" move a home too; "from X to Y" is the old
    # home and the new; a team's "we moved to Kubernetes" is no home at all
    "we-moved": [
        [("We moved to Denver in March.", ("ADD", LOC, "Denver")),
         ("We moved to Kubernetes last year.", None)],
        [("I moved from Denver to Boston.", ("SUPERSEDE", LOC, "Boston")),
         ("Relocated to Lisbon last spring, loving the apartment.", ("SUPERSEDE", LOC, "Lisbon"))],
    ],
    # a switch that names only the new tool replaces the one of its kind
    # the ledger holds; a tool of no known kind, or of another kind, is its own fact
    "switch-unnamed-old": [
        [("I use Docker daily.", ("ADD", "user: uses docker", "Docker")),
         ("I use zsh.", ("ADD", "user: uses zsh", "zsh"))],
        [("We switched to Podman.", None),
         ("I switched to Podman.", ("SUPERSEDE", "user: uses docker", "Podman")),
         ("I've switched to Frobnicator.", ("ADD", "user: uses frobnicator", "Frobnicator"))],
        [("I use Podman now.", ("NONE", "user: uses docker", "Podman")),
         ("I switched to fish.", ("SUPERSEDE", "user: uses zsh", "fish"))],
        [("I switched back to Docker.", ("SUPERSEDE", "user: uses docker", "Docker"))],
    ],
    "names": [
        [("my name is sam", ("ADD", "user: name", "sam")),
         ("Call me back when the build is done.", None)],
        [("Call me Sam, please.", ("NONE", "user: name", "Sam")),
         ("Actually you can call me alex.", ("SUPERSEDE", "user: name", "alex")),
         ("Call me crazy, but I like tabs.", None)],
    ],
    # a retraction that names the value, not the key: the fact set to it in
    # this conversation goes back to what it was before, or away
    "retract-by-value": [
        [("I live in Oslo.", ("ADD", LOC, "Oslo"))],
        [("I moved to Madrid.", ("SUPERSEDE", LOC, "Madrid")),
         ("Never mind, forget what I said about Madrid.", ("SUPERSEDE", LOC, "Oslo"))],
        [("Call me Sam.", ("ADD", "user: name", "Sam")),
         ("Forget what I said about Sam.", ("DELETE", "user: name", "Sam"))],
    ],
    "not-facts": [
        [("> I moved to Oslo", None),
         ('"I moved to Oslo," she wrote.', None),
         ("Here is the log:\n```\nI moved to Oslo\nI work at Initech\n```", None),
         ("I moved the helper to utils.py.", None)],
        [("I moved to the next step.", None),
         ("I work at night mostly.", None),
         ("I use it daily.", None),
         ("I didn't move to Berlin after all.", None)],
        [("Did you move to Berlin?", None),
         ("She said she moved to Madrid.", None),
         ("If I joined Stripe, would I need a visa?", None)],
    ],
}


def _story_sessions(tmp_path, name: str) -> list:
    files = []
    for i, session in enumerate(STORIES[name]):
        said = ClaudeSession(f"{name}-{i}", day=f"2026-06-0{i + 1}")
        for text, _ in session:
            said.user(text).assistant("Noted.")
        files.append(said.write(tmp_path / f"{name}-{i}.jsonl"))
    return files


def _hash_log(store: Store) -> str:
    return hashlib.sha256(b"".join(s.path.read_bytes() for s in store.segments())).hexdigest()


@pytest.mark.parametrize("name", sorted(STORIES))
def test_a_story_told_over_sessions_gives_one_decision_per_personal_statement(name, tmp_path, trace_home):
    for f in _story_sessions(tmp_path, name):
        assert cli("ingest", "--no-embed", str(f)).code == 0
    store = Store(trace_home)
    before = _hash_log(store)
    run = cli("sweep", "--allow-delete")
    assert run.code == 0
    assert _hash_log(store) == before
    rows = [r for r in run.lines()[:-1] if r.get("action") != "TUNE"]
    got = [(r["action"], r["key"], r["new"] if r["action"] != "DELETE" else r["old"]) for r in rows]
    wanted = [e for session in STORIES[name] for _, e in session if e is not None]
    assert got == wanted
    expected_live = {}
    for action, key, value in wanted:
        if action in ("ADD", "SUPERSEDE", "UPDATE"):
            expected_live[key] = value
        elif action == "DELETE":
            expected_live.pop(key)
    assert {f["key"]: f["value"] for f in facts(store)} == expected_live

    digest = cli("digest").out
    assert ("## About the user" in digest) == bool(expected_live)
    for key, value in expected_live.items():
        assert f": {value} (" in digest, (key, digest)
    superseded = {v for a, _, v in wanted if v} - set(expected_live.values())
    assert not [v for v in superseded if f": {v} (" in digest], digest

    for f in _story_sessions(tmp_path, name):        # the same sessions again: nothing new to decide
        cli("ingest", "--no-embed", str(f))
    assert cli("sweep", "--allow-delete").lines()[-1]["sweep"]["decisions"] == {}


def test_without_allow_delete_a_leaving_is_a_none_that_says_why_and_the_fact_stays(tmp_path, trace_home):
    for f in _story_sessions(tmp_path, "employer"):
        assert cli("ingest", "--no-embed", str(f)).code == 0
    rows = cli("sweep").lines()[:-1]
    last = [r for r in rows if r["key"] == JOB][-1]
    assert (last["action"], last["old"]) == ("NONE", "Globex") and "DELETE is off" in last["reason"]
    assert {f["key"]: f["value"] for f in facts(Store(trace_home))}[JOB] == "Globex"


AGENT_LINES = ["I moved to the Lisbon region config.", "I switched to Neovim keybindings.", "I work at the repo root.",
               "I moved to Lisbon."]


@pytest.mark.parametrize("text", AGENT_LINES)
def test_the_agent_saying_i_is_not_the_user_telling_about_themselves(text):
    assert [f for f in prose_facts(text, "assistant") if f.type == "personal"] == []


@pytest.mark.parametrize("text,expected", [
    ("I moved to Rio de Janeiro last week.", (LOC, "Rio de Janeiro")),
    ("I moved to 東京 in 2024.", (LOC, "東京")),
    ("I now work for Initech.", (JOB, "Initech")),
    ("I joined Stripe as a data engineer.", (JOB, "Stripe")),
    ("My new manager is Priya.", (BOSS, "Priya")),
    ("My boss is Li Wei.", (BOSS, "Li Wei")),
    ("I use neovim as my editor.", ("user: editor", "neovim")),
    ("My shell is zsh.", ("user: shell", "zsh")),
    # a time or an aside said first, a home said as where it is, a job said with its title
    ("These days I live in Nairobi.", (LOC, "Nairobi")),
    ("Just so you know, I moved to Valencia.", (LOC, "Valencia")),
    ("My home is in Leeds now.", (LOC, "Leeds")),
    ("I just started at Datadog.", (JOB, "Datadog")),
    ("I'm a software engineer at Spotify.", (JOB, "Spotify")),
    ("I've been using Linear.", ("user: uses linear", "Linear")),
    ("I've moved over to Zed.", ("user: uses zed", "Zed")),          # a tool switched to, not a place
    # names with a dot: a domain, a title (the sentence is not cut after "Dr.")
    ("My employer is now Booking.com.", (JOB, "Booking.com")),
    ("My supervisor is Dr. Patel.", ("user: supervisor", "Dr. Patel")),
    ("I moved to St. Louis.", (LOC, "St. Louis")),
    ("I've been working at Unilever since January.", (JOB, "Unilever")),
    ("I work remotely for GitLab.", (JOB, "GitLab")),
    ("I got a job with Stripe.", (JOB, "Stripe")),
    ("My editor of choice is Kakoune.", ("user: editor", "Kakoune")),
    # a day after the name is when, not part of it; a name's own joining word is kept
    ("I moved to Lisbon on Friday.", (LOC, "Lisbon")),
    ("I started at Acme on Monday.", (JOB, "Acme")),
    ("I work at Bank of America.", (JOB, "Bank of America")),
    ("I moved to Newcastle upon Tyne.", (LOC, "Newcastle upon Tyne")),
    # a move of home said by "we", without a subject, or with the home it left
    ("We moved to Denver.", (LOC, "Denver")),
    ("We've relocated to Winston-Salem.", (LOC, "Winston-Salem")),
    ("Just relocated to Lisbon last spring.", (LOC, "Lisbon")),
    ("We moved house to Leeds.", (LOC, "Leeds")),
    ("I moved from Chicago to Boston.", (LOC, "Boston")),
    ("We moved to McAllen last year.", (LOC, "McAllen")),
    # a name typed in lowercase, a name asked to be called by
    ("my name is sam", ("user: name", "sam")),
    ("Call me alex.", ("user: name", "alex")),
    ("You can call me Dr. Patel.", ("user: name", "Dr. Patel")),
    ("Everyone calls me JJ.", ("user: name", "JJ")),
    ("I use Emacs too.", ("user: uses emacs", "Emacs")),           # "too" is not part of its name
    ("I moved to Lisbon, Portugal.", (LOC, "Lisbon")),
    ("We just moved to Austin, still unpacking boxes.", (LOC, "Austin")),
])
def test_a_personal_fact_said_this_way_is_read_as_its_key_and_value(text, expected):
    assert [(f.key, f.value) for f in prose_facts(text, "user")] == [expected]


@pytest.mark.parametrize("text", [
    "I joined Zoom.", "I joined the call late.", "My guess is Python.", "My favorite editor is Helix maybe.",
    "I left the meeting early.", "I'm using grep to find it.", "I use pytest -k slow.",
    "I'm a member at Costco.", "I'm a bit stuck at Step 3.", "I wish I lived in Kyoto.", "I'm moving to Prague next week.",
    "I'm considering joining Figma.", "When I lived in Paris I used Vim.", "My wife works at Pfizer.",
    "I work with Dana.", "I am working with Bob.", "I started at Step 2.",     # a colleague, a numbered step
    # a team's or a bare move to a tool, a move said without any word of home
    "We moved to Kubernetes.", "I moved to PostgreSQL last year.", "We moved from Jenkins to Buildkite.",
    "We migrated to GitHub Actions.", "Moved to Denver.", "We moved to k8s.",
    "We moved to March for the launch.", "I moved to Python 3.12.", "We moved to Bazel last year.",
    "We moved to the Denver office.",                               # a name that only qualifies a noun
    "I moved to Denver when I was 5.", "We moved to Ohio as a kid.",        # a home of a past life
    # "call me" and "my name is" followed by what is not a name
    "Call me back tomorrow.", "Call me crazy.", "Call me when it is done.", "Don't call me Bob.",
    "my name is not important", "My name is on the list.",
])
def test_what_only_looks_like_a_personal_fact_is_none(text):
    assert [f for f in prose_facts(text, "user") if f.type == "personal"] == []


@pytest.mark.parametrize("text", ["I use vim for this project.", "I switched to Podman for this project.",
                                  "I'm using Zed on this machine."])
def test_a_use_s_scope_is_never_part_of_the_tool_s_name(text):
    assert [f.value for f in prose_facts(text, "user") if f.type == "personal" and " " in f.value] == []


@pytest.mark.parametrize("text", ["He said: I moved to Lisbon last week.", "Bob: I work at Initech now.",
                                  "Email from Dana: I moved to Berlin last week.", "Customer wrote: My manager is Tom."])
def test_a_line_labelled_with_who_said_it_is_not_the_user_s_own_news(text):
    assert [f for f in prose_facts(text, "user") if f.type == "personal"] == []


@pytest.mark.parametrize("text,expected", [("Quick context: I moved to Lisbon.", (LOC, "Lisbon")),
                                           ("Background: I work at Acme.", (JOB, "Acme")),
                                           ("Reminder: Dana is my manager.", (BOSS, "Dana")),
                                           ("Context for you: I've just relocated to Kyoto.", (LOC, "Kyoto"))])
def test_a_label_that_only_introduces_the_line_leaves_it_the_user_s(text, expected):
    assert [(f.key, f.value) for f in prose_facts(text, "user")] == [expected]


@pytest.mark.parametrize("text", ["My password is Swordfish.", "The API key is Xk29fj3kLm.", "Our api token is Abcdef.",
                                  "Set the github token to Ghp9x.", "My PIN is Tiger."])
def test_a_credential_said_in_prose_is_never_a_fact(text):
    """The redactor reads `name = value`; "the API key is X" reaches the
    sweep as said, and a fact would put it in the digest."""
    assert prose_facts(text, "user") == []


def test_a_secret_s_setting_is_still_a_fact():
    assert [(f.key, f.value) for f in prose_facts("The token TTL is 3600s.", "user")] == [("token ttl", "3600s")]


# Dialogue in other languages: the rules read English sentence shapes, and
# a line in German, Spanish, Chinese or Japanese must not be half-read as
# one (a name taken for a value, a word for a key).
OTHER_LANGUAGES = [
    "Ich bin letzten Monat nach Berlin gezogen.", "Ich arbeite jetzt bei Siemens.", "Mein Chef ist Herr Müller.",
    "Wir haben von Postgres auf MySQL umgestellt.", "Ich benutze kein Vim mehr, nur noch Neovim.",
    "Der Port ist jetzt 8080.", "Entscheidung: Wir nehmen Redis für den Cache.",
    "Me mudé a Madrid el año pasado.", "Ahora trabajo en Telefónica.", "Mi jefa es Lucía.", "Ya no uso vim.",
    "El puerto es 8080 ahora.", "Si me mudara a París, ¿sería más caro?", "Mi nombre es Ana.",
    "我上个月搬到了上海。", "我现在在腾讯工作。", "我的经理是王伟。", "我们从Postgres换成了MySQL。", "数据库主机：db-prod-01",
    "先月、東京に引っ越しました。", "今はソニーで働いています。", "私のマネージャーは田中さんです。", "ポートは今8080です。",
    "名前：山田太郎",
]


@pytest.mark.parametrize("text", OTHER_LANGUAGES)
def test_a_line_in_another_language_makes_no_fact(text):
    assert prose_facts(text, "user") == []


def _personal(key: str, value: str, n: int, delete: bool = False, replaces: str | None = None) -> FactCandidate:
    return FactCandidate(type="personal", key=key, value=value, text=value, importance=0.8, label=key,
                         delete=delete, replaces=replaces,
                         source={"id": f"e{n}", "seq": n, "session_id": f"s{n}", "ts": f"2026-06-0{n}T09:00:00Z"})


@pytest.mark.parametrize("text,expected", [
    ("I'm no longer at Acme.", (JOB, "Acme")),
    ("I no longer live in Lisbon.", (LOC, "Lisbon")),
    ("I'm no longer living in Lisbon.", (LOC, "Lisbon")),
    ("I'm not using vim anymore.", ("user: uses vim", "vim")),
])
def test_a_leaving_said_this_way_is_a_removal_of_its_value(text, expected):
    assert [(f.key, f.value, f.replaces, f.delete) for f in prose_facts(text, "user")] == [(*expected, expected[1], True)]


def test_a_correction_that_opens_with_no_is_read():
    assert [(f.key, f.value) for f in prose_facts("No, I work at Globex, not Acme.", "user")] == [(JOB, "Globex")]
    assert prose_facts("I'm not using vim.", "user") == []          # not using it now is not having stopped


def test_a_leaving_removes_the_fact_that_holds_its_value_whatever_its_key():
    """"I left Lisbon" is said with the employer rule's words; the value
    names the place lived in, and that is the fact removed."""
    reconciler = Reconciler(Knowledge(), allow_delete=True)
    reconciler.decide(_personal(LOC, "Lisbon", 1))
    reconciler.decide(_personal(JOB, "Acme", 2))
    row, = reconciler.decide(_personal(JOB, "Lisbon", 3, delete=True, replaces="Lisbon"))
    assert (row["action"], row["key"], row["old"], row["target_ids"]) == ("DELETE", LOC, "Lisbon", ["e1"])
    assert {f.key: f.value for f in reconciler.knowledge.live()} == {JOB: "Acme"}


def test_a_later_value_refines_the_known_one_only_when_it_holds_it_as_whole_words():
    """"neovim" holds the letters of "vim" and is another editor: a
    SUPERSEDE, where "PostgreSQL 16" after "PostgreSQL" is an UPDATE."""
    reconciler = Reconciler(Knowledge())
    reconciler.decide(_personal("user: uses vim", "vim", 1))
    row, = reconciler.decide(_personal("user: uses vim", "neovim", 2))
    assert row["action"] == "SUPERSEDE"
    reconciler.decide(_personal("database", "PostgreSQL", 3))
    row, = reconciler.decide(_personal("database", "PostgreSQL 16", 4))
    assert row["action"] == "UPDATE"
