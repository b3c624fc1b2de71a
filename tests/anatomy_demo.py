"""A Claude Code session written for the anatomy report: a debugging task
that fills the context with file reads, an automatic compaction, then a
new request (a topic change) that uses a skill. Its usage figures are
made up but shaped like real ones (a fixed harness prefix, cache reads
growing with the history). Used by tests and by `make report`:

    python -m tests.anatomy_demo --html docs/anatomy-report.html --png docs/anatomy-report.png
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

SESSION = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
MODEL = "claude-sonnet-4-5-20250929"
HARNESS_TOKENS = 17_400            # Claude Code's system prompt and tool schemas: not in the transcript
CLAUDE_MD = ("<system-reminder>\nAs you answer the user's questions, you can use the following context:\n"
             "Contents of /srv/shop/CLAUDE.md (project instructions, checked into the codebase):\n\n"
             "# shop\n- Run `make test` before every commit.\n- Payments code lives in services/payments.\n"
             "- Never log card numbers; use the redact() helper.\n</system-reminder>\n")
SKILL = ("Base directory for this skill: /home/dev/.claude/skills/release-notes\n\n# Release notes\n"
         "Write release notes from merged pull requests: group by area, one line per change, "
         "link each PR, call out breaking changes first.\n")
_WORDS = ("timeout retry payment gateway config client session request handler latency budget circuit breaker "
          "checkout order queue worker deploy metric trace span export invoice ledger refund webhook").split()


def _tokens(text: str) -> int:
    """Claude's count of a text: a little above cl100k's."""
    from reducers.tokens import count_tokens
    return int(count_tokens(text) * 1.08)


def _text(rng: random.Random, lines: int) -> str:
    out = []
    for n in range(1, lines + 1):
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 11)))
        out.append(f"{n:>5}\t    {words}")
    return "\n".join(out)


def lines() -> list[dict]:
    rng = random.Random(22)
    out: list[dict] = []
    clock = [0]
    parent = [None]
    context = [HARNESS_TOKENS]

    def stamp() -> str:
        clock[0] += rng.randint(3, 19)
        return f"2026-05-04T09:{clock[0] // 60 % 60:02d}:{clock[0] % 60:02d}.000Z"

    def add(kind: str, message: dict | None = None, **extra) -> None:
        uuid = f"00000000-0000-4000-8000-{len(out):012d}"
        line = {"type": kind, "sessionId": SESSION, "uuid": uuid, "parentUuid": parent[0], "timestamp": stamp(),
                "cwd": "/srv/shop", "version": "2.0.29", **extra}
        if message is not None:
            line["message"] = message
        out.append(line)
        parent[0] = uuid

    def user(text: str, **extra) -> None:
        context[0] += _tokens(text)
        add("user", {"role": "user", "content": [{"type": "text", "text": text}]}, **extra)

    def call(n: int, text: str, tool: str, tool_input: dict, result: str) -> None:
        mid = f"msg_01demo{n:04d}"
        usage = {"input_tokens": rng.randint(2, 9), "cache_creation_input_tokens": rng.randint(200, 1900),
                 "cache_read_input_tokens": 0, "output_tokens": rng.randint(40, 400)}
        usage["cache_read_input_tokens"] = context[0] - usage["input_tokens"] - usage["cache_creation_input_tokens"]
        add("assistant", {"id": mid, "type": "message", "role": "assistant", "model": MODEL,
                          "content": [{"type": "text", "text": text},
                                      {"type": "tool_use", "id": f"toolu_demo{n:04d}", "name": tool, "input": tool_input}],
                          "usage": usage}, requestId=f"req_demo{n:04d}")
        context[0] += _tokens(text) + _tokens(json.dumps(tool_input)) + 12
        add("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_demo{n:04d}",
                                                  "content": result}]})
        context[0] += _tokens(result)

    user(CLAUDE_MD + "Checkout requests time out since this morning's deploy. Find out why the payment "
                     "gateway client gives up and fix it.")
    files = ["services/payments/client.py", "services/payments/config.yaml", "services/payments/retry.py",
             "services/checkout/handler.py", "services/payments/gateway.py", "deploy/payments.env",
             "services/payments/breaker.py", "tests/payments/test_client.py", "services/payments/metrics.py",
             "services/checkout/queue.py", "services/payments/session.py", "services/payments/tracing.py",
             "services/checkout/worker.py", "services/payments/ledger.py"]
    n = 0
    for path in files:
        n += 1
        call(n, f"Reading {path} to see how the gateway timeout is handled.", "Read",
             {"file_path": f"/srv/shop/{path}"}, _text(rng, rng.randint(120, 260)))
    pre = context[0]
    add("system", subtype="compact_boundary", content="Conversation compacted", level="info",
        compactMetadata={"trigger": "auto", "preTokens": pre})
    summary = ("This session is being continued from a previous conversation that ran out of context. Summary: "
               "the payment gateway client's timeout was lowered to 800 ms in deploy/payments.env while the "
               "gateway's p99 is 2.1 s; retries are disabled, so checkout fails fast. Next: raise the timeout "
               "and enable two retries with jitter.")
    context[0] = HARNESS_TOKENS + _tokens(summary) + 40
    add("user", {"role": "user", "content": summary}, isCompactSummary=True)
    for path in ("deploy/payments.env", "services/payments/retry.py", "tests/payments/test_retry.py"):
        n += 1
        call(n, f"Editing {path}: timeout back to 5000 ms, two retries with jitter.", "Edit",
             {"file_path": f"/srv/shop/{path}", "old_string": "800", "new_string": "5000"}, _text(rng, 40))
    user("Thanks, that fixed checkout. Now draft the release notes for version 2.4 from the merged pull requests.")
    add("user", {"role": "user", "content": [{"type": "text", "text": SKILL}]}, isMeta=True)
    context[0] += _tokens(SKILL)
    for query in ("is:pr is:merged milestone:2.4", "is:pr is:merged label:breaking", "is:pr is:merged label:payments"):
        n += 1
        call(n, f"Listing pull requests: {query}.", "Bash", {"command": f"gh pr list --search '{query}'"},
             _text(rng, rng.randint(60, 140)))
    return out


def write(path: Path) -> str:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines()))
    return SESSION


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", type=Path, required=True)
    parser.add_argument("--png", type=Path)
    parser.add_argument("--turn", type=int, default=14, help="the call whose detail the screenshot shows")
    args = parser.parse_args(argv)
    from tests.helpers import cli
    with tempfile.TemporaryDirectory() as tmp:
        transcript = Path(tmp) / "session.jsonl"
        write(transcript)
        store = str(Path(tmp) / "store")
        for command in (("ingest", "--no-embed", "-q", str(transcript)),
                        ("anatomy", "replay", "--session", SESSION, "--html", str(args.html))):
            run = cli("--store", store, *command)
            if run.code != 0:
                sys.stderr.write(run.err)
                return run.code
    print(f"wrote {args.html}")
    if args.png:
        from tests.browser import ensure_chromium, screenshot
        chromium, why = ensure_chromium()
        if chromium is None:
            sys.stderr.write(f"no screenshot: {why}\n")
            return 1
        screenshot(chromium, args.html, args.png, fragment=f"turn={args.turn}")
        print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
