"""Small builders shared by tests: transcripts written on the fly, and a
way to run the real CLI in-process."""
from __future__ import annotations

import io
import json
import sys
from contextlib import redirect_stderr
from dataclasses import dataclass
from pathlib import Path

import orjson

from trace_cli.app import main


@dataclass
class Run:
    code: int
    out: str
    err: str

    def lines(self) -> list[dict]:
        return [json.loads(l) for l in self.out.splitlines() if l.strip()]


def cli(*args: str, stdin: bytes | None = None) -> Run:
    """Run `trace ARGS` in this process, stdout captured as bytes (JSON Lines:
    stdout is not a terminal)."""
    return run_captured(main, list(args), stdin)


def run_captured(entry, args: list[str], stdin: bytes | None = None) -> Run:
    """`entry(args)` (an exit code) with stdout, stderr and stdin as `cli` sets them."""
    out, err = io.BytesIO(), io.StringIO()
    old_out, old_in = sys.stdout, sys.stdin
    wrapper = io.TextIOWrapper(out, encoding="utf-8")
    sys.stdout = wrapper
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    try:
        with redirect_stderr(err):
            code = entry(args)
    finally:
        sys.stdout, sys.stdin = old_out, old_in
        wrapper.flush()
        wrapper.detach()                       # keep `out` open for reading
    return Run(code, out.getvalue().decode("utf-8", "surrogatepass"), err.getvalue())


def openai_conversations(path: Path, conversations: int, turns: int = 3, tool_every: int = 0,
                         prefix: str = "conv") -> Path:
    """JSONL in the fine-tuning layout: one conversation per line."""
    with open(path, "w") as f:
        for c in range(conversations):
            msgs = [{"role": "system", "content": f"You are the {prefix} assistant."}]
            for t in range(turns):
                msgs.append({"role": "user", "content": f"{prefix} {c} question {t}: where is config_{c}_{t}.yaml?"})
                if tool_every and t % tool_every == 0:
                    call = f"call_{prefix}_{c}_{t}"
                    msgs.append({"role": "assistant", "content": None, "tool_calls": [
                        {"id": call, "type": "function",
                         "function": {"name": "find_file", "arguments": json.dumps({"name": f"config_{c}_{t}.yaml"})}}]})
                    msgs.append({"role": "tool", "tool_call_id": call, "content": f"/srv/{prefix}/{c}/{t}/config.yaml"})
                msgs.append({"role": "assistant", "content": f"It is under /srv/{prefix}/{c}/{t}."})
            f.write(json.dumps({"messages": msgs}) + "\n")
    return path


def trace_events(path: Path, events: list[dict]) -> Path:
    with open(path, "wb") as f:
        for e in events:
            f.write(orjson.dumps(e) + b"\n")
    return path


def log_ending_with(directory: Path, events: list[dict], raw: bytes) -> Path:
    """A log of `events` whose last segment then gets `raw` appended (a torn
    or damaged tail); returns that segment's path."""
    from stores.log.event_log import EventLog
    from stores.log.segments import list_segments
    log = EventLog(directory)
    log.append(events)
    log.close()
    seg = list_segments(directory / "segments")[-1].path
    with open(seg, "ab") as f:
        f.write(raw)
    return seg


def transcript_events(store_dir) -> list[dict]:
    """A store's events that came from its sources, without those TRACE
    derives while ingesting (working-state snapshots), whose number depends
    on how many runs an ingest took: what incremental and one-shot ingests
    of the same transcript must agree on."""
    from stores.store import Store
    return [e for e in Store(store_dir).events() if (e.get("source") or {}).get("format") != "working-state"]


REPEATED_ERROR = "ECONNRESET while fetching s3://bucket-7/objects/manifest.json"


def repeated_error_recaller(root: Path, error: str = REPEATED_ERROR):
    """A store of agent turns where 13 tool results end with `error` (an
    exact string a user pastes back), and a Recaller over it."""
    from stores.recall import Recaller
    from stores.store import Store
    from trace_cli.bench.needles import build_session
    session = build_session(turns=60, needles=0, seed=5)
    for i in range(13):
        session.messages[4 * (i * 4 + 1) + 2]["content"] += f"\n{error}"
    session.write_openai(root / "s.jsonl")
    store = Store(root / "store")
    list(store.ingest([str(root / "s.jsonl")]))
    rc = Recaller(store)
    rc.prepare("hybrid")
    return rc


def store_with_lines(tmp: Path, lines: list[str], seed: int, turns: int = 80, flood_words: int = 300):
    """A Store of one generated agent session with each of `lines` inside a
    long tool output of its own (generated filler before and after), spread
    through the session: what a question must find among look-alikes."""
    import random

    from stores.store import Store
    from trace_cli.bench.needles import build_session, flood
    session = build_session(turns=turns, needles=0, seed=seed)
    rng = random.Random(seed)
    step = max((turns - 2) // max(len(lines), 1), 1)
    for i, line in enumerate(lines):
        session.messages[4 * (2 + step * i) + 2]["content"] = \
            f"{flood(rng, flood_words)}\n{line}\n{flood(rng, flood_words)}"
    session.write_openai(tmp / "s.jsonl")
    store = Store(tmp / "store")
    list(store.ingest([str(tmp / "s.jsonl")]))
    return store
