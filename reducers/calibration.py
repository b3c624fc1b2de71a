"""What a recall score means: calibrated probabilities over a ranked list.

The ranking logit z (reducers/fusion.py) orders the candidates; two fitted
pieces turn it into numbers a script can gate on:

- A, the probability that an answer to the query is among its first
  WINDOW hits at all: a logistic model of query-level evidence (how strong
  and how clear the best match is, how much of the query it covers,
  whether a speaker the query names is the one who says it, how much of
  the query the store has never seen, whether the best match only asks the
  question back, and whether the named speaker's best line that is not a
  question outranks everyone else's: a question crediting one person with
  what another said finds its words in the other person's answer, or in
  the named person's own question to them);
- π_i ∝ exp(TAU · z_i), where an answer sits in the list, given that there
  is one (TAU fitted by likelihood on the same dev data).

A hit's `score` is the estimated probability that an answer lies among the
WINDOW hits the list shows up to it: the first WINDOW hits share the list's
score A, and a hit further down scores the WINDOW hits that end at it,

    score_i = A · Σ_{j=s}^{e} π_j / Σ_{j=1}^{WINDOW} π_j,
              s = max(1, i − WINDOW + 1), e = max(i, WINDOW)

so scores never rise down the list, and `--min-score 0.5` keeps the whole
first page when an answer is more likely there than not and nothing (exit
3) when the list probably holds none. (A score per hit cannot do that: the
first hit is the answer for about half of the answerable dev questions, so
no later hit is more likely right than not, and a gate on it would keep
one hit and lose the answers ranked second to tenth.) `p_hit` = A · π_i /
Σ_{j≤WINDOW} π_j is the probability that this very hit is an answer; it
orders the hits that share a score. All of it is fitted on dev data
(`trace bench fit`): LoCoMo dev questions and its adversarial no-answer
questions, generated needles and questions about subjects no session
mentions."""
from __future__ import annotations

import math

from reducers.turn_traits import ASKS_PATTERN, SCAN_CHARS

WINDOW = 10
TAU = 1.0
QUERY_FEATURES = ("top", "gap", "top_coverage", "coverage3", "named_top", "named_lead", "names", "unknown_words",
                  "unknown_ids", "named_cover_lead", "asks_top", "statement_lead")
LEAD_CAP = 5.0              # statement_lead's range, and its value when only one side has a statement
# Fitted by `trace bench fit` (logistic regression, dev data, no-answer queries included).
ANSWER_WEIGHTS = {"top": 0.3567, "gap": 0.3597, "top_coverage": -0.9102, "coverage3": -1.5985, "named_top": -2.3334,
                  "named_lead": -0.1388, "names": -1.4408, "unknown_words": -4.171, "unknown_ids": -2.3565,
                  "named_cover_lead": 2.821, "asks_top": -0.2575, "statement_lead": 0.51}
ANSWER_BIAS = -0.2739


def asks_question(text: str, kind: str) -> bool:
    """Whether a dialogue line asks a question (a '?' ending a clause): the
    line that asks is rarely the one that answers. Tool output is never a
    question (URLs and patterns hold '?')."""
    return kind in ("user", "assistant") and ASKS_PATTERN.search(text[:SCAN_CHARS]) is not None


def query_features(zs: list[float], coverages: list[float], named_flags: list[bool], names_speaker: bool,
                   unknown_words: float, unknown_ids: float, asks: list[bool] = ()) -> dict:
    """Query-level evidence from the ranked candidates (best first): their
    logits, coverages (the share of the query's IDF each holds), whether
    each is said by a speaker the query names, and, for the first
    len(asks) of them, whether each asks a question (asks_question)."""
    if not zs:
        return dict.fromkeys(QUERY_FEATURES, 0.0)
    lead = cover_lead = statement_lead = 0.0
    if names_speaker:
        named = [z for z, f in zip(zs, named_flags) if f]
        other = [z for z, f in zip(zs, named_flags) if not f]
        lead = (max(named) if named else zs[0]) - (max(other) if other else zs[0])
        cover_lead = max((c for c, f in zip(coverages, named_flags) if f), default=0.0) - \
            max((c for c, f in zip(coverages, named_flags) if not f), default=0.0)
        statement_lead = _statement_lead(zs, named_flags, asks)
    return {"top": zs[0], "gap": zs[0] - zs[1] if len(zs) > 1 else 5.0,
            "top_coverage": coverages[0], "coverage3": max(coverages[:3]),
            "named_top": 1.0 if named_flags[0] else 0.0, "named_lead": lead, "names": 1.0 if names_speaker else 0.0,
            "unknown_words": unknown_words, "unknown_ids": unknown_ids, "named_cover_lead": cover_lead,
            "asks_top": 1.0 if asks and asks[0] else 0.0, "statement_lead": statement_lead}


def _statement_lead(zs: list[float], named_flags: list[bool], asks: list[bool]) -> float:
    """How far the named speaker's best line that asks nothing outranks
    everyone else's, among the first len(asks) candidates (±LEAD_CAP when
    only one side has such a line)."""
    mine = [z for z, f, a in zip(zs, named_flags, asks) if f and not a]
    theirs = [z for z, f, a in zip(zs, named_flags, asks) if not f and not a]
    if not mine and not theirs:
        return 0.0
    if not theirs:
        return LEAD_CAP
    if not mine:
        return -LEAD_CAP
    return max(min(max(mine) - max(theirs), LEAD_CAP), -LEAD_CAP)


def answerable(features: dict, weights: dict | None = None, bias: float | None = None) -> float:
    """A: the probability that an answer is among the first WINDOW hits."""
    w = ANSWER_WEIGHTS if weights is None else weights
    z = (ANSWER_BIAS if bias is None else bias) + sum(w.get(name, 0.0) * v for name, v in features.items())
    return 1.0 / (1.0 + math.exp(-max(min(z, 40.0), -40.0)))


def window_scores(zs: list[float], a: float, n: int, tau: float = TAU, window: int = WINDOW) -> tuple[list, list]:
    """(score, p_hit) of the first n of a ranked list of logits (see the
    module docstring). The list is taken as ranked; a score never rises."""
    if not zs or n <= 0:
        return [], []
    top = zs[0]
    mass = [math.exp(tau * (z - top)) for z in zs[:max(n, window)]]
    head = sum(mass[:window]) or 1.0
    scores, p_hit = [], []
    running = head
    for i in range(min(n, len(mass))):
        if i >= window:                       # the WINDOW hits ending at hit i
            running += mass[i] - mass[i - window]
        scores.append(min(a * max(running, 0.0) / head, scores[-1] if scores else 1.0))
        p_hit.append(a * mass[i] / head)
    return scores, p_hit
