"""The optional model-backed extractor: an external command (`--llm-cmd`)
that reads a prompt on stdin and prints JSON, called per batch of messages
within a token budget (`--llm-budget`, prompt plus answer, per run).

Any failure — the command missing, a non-zero exit, a timeout, an answer
that is not the JSON asked for, or the budget spent — makes that batch
fall back to the rule-based extractor with a warning; nothing the model
half-answered is used. A command that is missing, or fails
GIVE_UP_AFTER batches in a row, is not run again in that sweep (a broken
or hanging model would otherwise cost a failure, or a whole --llm-timeout,
per batch all night). Spend is counted with the one tokenizer."""
from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass, field

from reducers.fact_keys import FactCandidate
from reducers.llm_facts import BadAnswer, parse_answer, prompt
from reducers.tokens import count_tokens
from stores.errors import UsageError

BATCH_CHARS = 12_000
DEFAULT_TIMEOUT = 120.0
GIVE_UP_AFTER = 3


@dataclass
class ModelExtractor:
    command: str
    budget: int | None = None             # tokens per run (prompt + answer); None: no limit
    timeout: float = DEFAULT_TIMEOUT
    warn: callable = lambda msg: None
    calls: int = 0
    tokens: int = 0
    fallbacks: int = 0
    failures: list[str] = field(default_factory=list)
    _budget_said: bool = False
    _failed_in_a_row: int = 0

    def __post_init__(self):
        try:
            self.argv = shlex.split(self.command)
        except ValueError as exc:
            raise UsageError(f"--llm-cmd {self.command!r} is not a command line ({exc})") from None
        if not self.argv:
            raise UsageError("--llm-cmd is empty; name a command that reads a prompt on stdin and prints JSON")
        if self.budget is not None and self.budget < 1:
            raise UsageError("--llm-budget is a number of tokens, at least 1")

    @property
    def name(self) -> str:
        return f"llm:{self.argv[0].rsplit('/', 1)[-1]}"

    def batches(self, events: list[dict]) -> list[list[dict]]:
        """Messages grouped by session, each batch under BATCH_CHARS."""
        by_session: dict[str, list[dict]] = {}
        for e in events:
            by_session.setdefault(e["session_id"], []).append(e)
        out = []
        for group in by_session.values():
            batch, size = [], 0
            for e in group:
                n = min(len(e.get("text") or ""), 2000) + 40
                if batch and size + n > BATCH_CHARS:
                    out.append(batch)
                    batch, size = [], 0
                batch.append(e)
                size += n
            if batch:
                out.append(batch)
        return out

    def extract(self, batch: list[dict]) -> list[FactCandidate] | None:
        """The model's facts for a batch, or None: fall back to the rules."""
        if self._given_up:
            return self._fallback(None)
        text = prompt(batch)
        cost = count_tokens(text)
        if self.budget is not None and self.tokens + cost > self.budget:
            if not self._budget_said:
                self.warn(f"--llm-budget {self.budget} reached after {self.calls} call(s) and {self.tokens} tokens; "
                          f"the rest of this sweep uses the rule-based extractor")
                self._budget_said = True
            return self._fallback(None)
        try:
            done = subprocess.run(self.argv, input=text.encode("utf-8", "surrogatepass"), capture_output=True,
                                  timeout=self.timeout, env=users_environment())
        except FileNotFoundError:
            self._failed_in_a_row = GIVE_UP_AFTER          # no use trying it again
            return self._fallback(f"--llm-cmd: {self.argv[0]} not found; this sweep uses the rule-based extractor")
        except subprocess.TimeoutExpired:
            self.calls += 1
            self.tokens += cost
            return self._fallback(f"--llm-cmd timed out after {self.timeout:g}s")
        self.calls += 1
        self.tokens += cost + count_tokens(done.stdout.decode("utf-8", "replace"))
        if done.returncode != 0:
            why = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            return self._fallback(f"--llm-cmd exited {done.returncode}" + (f": {why[0][:200]}" if why[0] else ""))
        try:
            found = parse_answer(done.stdout, batch)
        except BadAnswer as exc:
            return self._fallback(f"--llm-cmd answered with unusable JSON: {exc}")
        self._failed_in_a_row = 0
        return found

    def _fallback(self, why: str | None):
        self.fallbacks += 1
        if why:
            self.failures.append(why)
            if self._given_up:
                self.warn(why)
                return None
            self.warn(f"{why}; this batch uses the rule-based extractor")
            self._failed_in_a_row += 1
            if self._given_up:
                self.warn(f"--llm-cmd failed {GIVE_UP_AFTER} times in a row: it is not run again in this sweep "
                          f"(the rest uses the rule-based extractor)")
        return None

    @property
    def _given_up(self) -> bool:
        return self._failed_in_a_row >= GIVE_UP_AFTER

    def report(self) -> dict:
        return {"command": self.command, "calls": self.calls, "tokens": self.tokens, "budget": self.budget,
                "fallbacks": self.fallbacks}


def users_environment() -> dict[str, str]:
    """This process's environment without the one BLAS thread `trace`
    chose for itself (trace_cli/entry.py marks it): the model command
    runs as the user would run it."""
    env = dict(os.environ)
    if env.pop("TRACE_SET_OPENBLAS_THREADS", None):
        env.pop("OPENBLAS_NUM_THREADS", None)
    return env
