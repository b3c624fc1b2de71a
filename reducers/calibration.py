"""What a recall score means: calibrated probabilities over a ranked list.

The ranking logit z (reducers/fusion.py) orders the candidates; two fitted
pieces turn it into numbers a script can gate on:

- A, the probability that an answer to the query is among its first
  WINDOW hits at all: a logistic model of query-level evidence (how strong
  and how clear the best match is, how much of the query it covers,
  whether a speaker the query names is the one who says it, whether the
  named speaker's own lines hold less of the query than other speakers'
  lines do (a question that credits one person with what another said has
  no answer), and how much of the query the store has never seen);
- π_i ∝ exp(TAU · z_i), where an answer sits in the list, given that there
  is one (TAU fitted by likelihood on the same dev data).

A hit's `score` is the estimated probability that an answer lies among it
and the WINDOW − 1 hits ranked after it:

    score_i = A · Σ_{j=i}^{i+WINDOW−1} π_j / Σ_{j=1}^{WINDOW} π_j

so the first hit's score is A, scores never rise down the list (π falls),
and `--min-score 0.5` keeps the hits from which an answer is still more
likely than not within the next WINDOW, or nothing (exit 3) when the list
probably holds none. `p_hit` = A · π_i / Σ_{j≤WINDOW} π_j is the
probability that this very hit is an answer. All of it is fitted on dev
data (`trace bench fit`): LoCoMo dev questions and its adversarial
no-answer questions, generated needles and questions about subjects no
session mentions."""
from __future__ import annotations

import math

WINDOW = 10
TAU = 0.7
QUERY_FEATURES = ("top", "gap", "top_coverage", "coverage3", "named_top", "named_lead", "names", "unknown_words",
                  "unknown_ids", "named_cover_lead")
# Fitted by `trace bench fit` (logistic regression, dev data, no-answer queries included).
ANSWER_WEIGHTS = {"top": 0.17, "gap": 0.1157, "top_coverage": -1.835, "coverage3": 0.704, "named_top": 0.8705,
                  "named_lead": -0.1027, "names": -1.7926, "unknown_words": -2.4069, "unknown_ids": -2.4047,
                  "named_cover_lead": 2.9231}
ANSWER_BIAS = 0.2577


def query_features(zs: list[float], coverages: list[float], named_flags: list[bool], names_speaker: bool,
                   unknown_words: float, unknown_ids: float) -> dict:
    """Query-level evidence from the ranked candidates (best first): their
    logits, coverages (the share of the query's IDF each holds) and whether
    each is said by a speaker the query names."""
    if not zs:
        return dict.fromkeys(QUERY_FEATURES, 0.0)
    lead = cover_lead = 0.0
    if names_speaker:
        named = [z for z, f in zip(zs, named_flags) if f]
        other = [z for z, f in zip(zs, named_flags) if not f]
        lead = (max(named) if named else zs[0]) - (max(other) if other else zs[0])
        cover_lead = max((c for c, f in zip(coverages, named_flags) if f), default=0.0) - \
            max((c for c, f in zip(coverages, named_flags) if not f), default=0.0)
    return {"top": zs[0], "gap": zs[0] - zs[1] if len(zs) > 1 else 5.0,
            "top_coverage": coverages[0], "coverage3": max(coverages[:3]),
            "named_top": 1.0 if named_flags[0] else 0.0, "named_lead": lead, "names": 1.0 if names_speaker else 0.0,
            "unknown_words": unknown_words, "unknown_ids": unknown_ids, "named_cover_lead": cover_lead}


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
    mass = [math.exp(tau * (z - top)) for z in zs[:n + window - 1]]
    head = sum(mass[:window]) or 1.0
    scores, p_hit = [], []
    running = sum(mass[:window])
    last = 1.0
    for i in range(min(n, len(mass))):
        if i:
            running += (mass[i + window - 1] if i + window - 1 < len(mass) else 0.0) - mass[i - 1]
        s = min(a * max(running, 0.0) / head, last)
        scores.append(s)
        p_hit.append(a * mass[i] / head)
        last = s
    return scores, p_hit
