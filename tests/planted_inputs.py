"""Transcripts in every format TRACE reads with a fresh secret of every
kind planted in each place a transcript can carry text (the placements of
tests/test_redaction_everywhere.py). `Planter` records, per placement, the
parts that must not reach the disk."""
from __future__ import annotations

import base64
import json
import random
import re
from pathlib import Path

from tests.secret_samples import shape_samples

SID = "7d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
MALFORMED = "claude-code malformed line"
CODEX_SID = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"


class Planter:
    """Hands each placement its own, never repeated, secret of every kind."""

    def __init__(self):
        self.planted: dict[str, list[str]] = {}          # placement -> the parts that must not survive
        self._seed = 0

    def samples(self, placement: str) -> list[str]:
        self._seed += 1
        found = shape_samples(random.Random(self._seed))
        self.planted[placement] = [part for _, _, part in found]
        return [text for _, text, _ in found]


def _cc_line(kind: str, message: dict | None = None, n: int = 0, **fields) -> str:
    rec = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/srv/app", "sessionId": SID,
           "version": "2.0.30", "type": kind, "uuid": f"00000000-0000-4000-8000-{n:012d}",
           "timestamp": f"2026-03-02T09:{n // 60 % 60:02d}:{n % 60:02d}.000Z", **fields}
    if message is not None:
        rec["message"] = message
    return json.dumps(rec)


def claude_code(path: Path, p: Planter) -> Path:
    lines, n = [], 0

    def add(kind, message=None, **fields):
        nonlocal n
        n += 1
        lines.append(_cc_line(kind, message, n, **fields))

    for text in p.samples("claude-code user text"):
        add("user", {"role": "user", "content": f"please deploy with {text} now"})
    for text in p.samples("claude-code assistant text"):
        add("assistant", {"id": f"msg_{n}", "role": "assistant", "model": "claude-x",
                          "content": [{"type": "text", "text": f"Using {text} as asked."}]})
    for text in p.samples("claude-code thinking"):
        add("assistant", {"id": f"msg_{n}", "role": "assistant", "model": "claude-x",
                          "content": [{"type": "thinking", "thinking": f"the key is {text}", "signature": "c2ln"}]})
    inputs, small, big = p.samples("claude-code tool input"), p.samples("claude-code tool output"), \
        p.samples("claude-code large tool output (artifact)")
    for i, (text, out, large) in enumerate(zip(inputs, small, big)):
        for call, result in ((f"toolu_a{i}", out), (f"toolu_b{i}", large + "\n" + "build step ok\n" * 1500)):
            add("assistant", {"id": f"msg_{n}", "role": "assistant", "model": "claude-x", "content": [
                {"type": "tool_use", "id": call, "name": "Bash",
                 "input": {"command": "./deploy.sh", "env": {"DEPLOY_KEY": text}, "args": [text]}}]})
            add("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": result}]})
    for text in p.samples("claude-code hook output (system fields)"):
        add("system", subtype="stop_hook_summary", level="suggestion", hookCount=1,
            hookInfos=[{"command": "./hooks/check.sh", "output": text}], hookErrors=[f"hook said: {text}"])
    for text in p.samples("claude-code api_error fields"):
        add("system", subtype="api_error", level="error", retryInMs=600, retryAttempt=1, maxRetries=10,
            error={"status": 401, "headers": {"x-request-context": text},
                   "error": {"type": "error", "error": {"type": "authentication_error", "message": text}}})
    for text in p.samples("claude-code attachment"):
        add("attachment", attachment={"type": "edited_text_file", "filename": "/srv/app/.env", "snippet": text})
    for text in p.samples("claude-code line of an unknown type"):
        add("future_bookkeeping", payload={"note": text})
    for text in p.samples(MALFORMED):                  # reported, never stored: nor may it be anywhere else
        lines.append('{"type": "user", "message": {"role": "user", "content": "' + json.dumps(text)[1:-1] + '"')
    path.write_text("\n".join(lines) + "\n")
    return path


def codex(path: Path, p: Planter) -> Path:
    urls, calls, outputs, said = (p.samples("codex session_meta git.repository_url"), p.samples("codex function_call"),
                                  p.samples("codex function_call_output"), p.samples("codex agent message"))
    instructions = p.samples("codex instructions")
    lines = [{"timestamp": "2026-04-10T15:00:00.000Z", "type": "session_meta", "payload": {
        "id": CODEX_SID, "timestamp": "2026-04-10T15:00:00.000Z", "cwd": "/home/dev/gw", "originator": "codex_cli_rs",
        "cli_version": "0.60.0", "instructions": "\n".join(instructions), "model_provider": "openai",
        "git": {"branch": "main", "commit_hash": "4be1f0c9a7d2e6b8c3a5f1e0d9b7c6a5e4f3d2c1",
                "repository_url": urls[0]}}}]
    # one rollout has one session_meta: the other URLs ride on later rollouts' headers
    extra = []
    for i, url in enumerate(urls[1:]):
        extra.append([{"timestamp": "2026-04-10T15:00:00.000Z", "type": "session_meta", "payload": {
            "id": f"0199a1b2-c3d4-7e5f-8a9b-{i:012d}", "timestamp": "2026-04-10T15:00:00.000Z", "cwd": "/w",
            "git": {"branch": "main", "repository_url": url}}}])
    for i, (call, out, msg) in enumerate(zip(calls, outputs, said)):
        ts = f"2026-04-10T15:{i // 60:02d}:{i % 60:02d}.500Z"
        lines.append({"timestamp": ts, "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "call_id": f"call_{i}",
            "arguments": json.dumps({"command": ["bash", "-lc", call], "env": {"TOKEN_FOR_CI": call}})}})
        lines.append({"timestamp": ts, "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": f"call_{i}", "output": json.dumps({"output": out})}})
        lines.append({"timestamp": ts, "type": "response_item", "payload": {
            "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": msg}]}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    for i, rollout in enumerate(extra):
        (path.parent / f"rollout-{i}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in rollout))
    return path.parent


def openai_chat(path: Path, p: Planter) -> Path:
    convs = []
    for i, (ask, args, out) in enumerate(zip(p.samples("openai message"), p.samples("openai tool_call arguments"),
                                             p.samples("openai tool message"))):
        convs.append({"messages": [
            {"role": "user", "content": ask},
            {"role": "assistant", "content": None, "tool_calls": [{"id": f"call_{i}", "type": "function", "function": {
                "name": "run", "arguments": json.dumps({"cmd": args, "headers": {"Authorization": args}})}}]},
            {"role": "tool", "tool_call_id": f"call_{i}", "content": out}]})
    path.write_text("".join(json.dumps(c) + "\n" for c in convs))
    return path


def anthropic(path: Path, p: Planter) -> Path:
    messages = []
    for i, (text, out) in enumerate(zip(p.samples("anthropic tool_use input"), p.samples("anthropic tool_result"))):
        messages += [{"role": "user", "content": f"step {i}"},
                     {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": "sh",
                                                        "input": {"script": text, "vars": {"SECRET_FOR_STEP": text}}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": out}]}]
    for text in p.samples("anthropic text document (attachment)"):
        env = f"HOST=db.internal\nKEY_FILE=/etc/key\n{text}\n" + "#keep\n" * 60     # no space: still text
        messages += [{"role": "user", "content": [{"type": "text", "text": "read this config"}, {
            "type": "document", "source": {"type": "text", "media_type": "text/plain", "data": env}}]},
                     {"role": "assistant", "content": "read it"}]
    path.write_text(json.dumps({"model": "claude-x", "max_tokens": 100, "messages": messages}))
    return path


def trace_events(path: Path, p: Planter) -> Path:
    lines = []
    for i, (meta, tool, src) in enumerate(zip(p.samples("trace meta"), p.samples("trace tool fields"),
                                              p.samples("trace source"))):
        lines.append({"id": f"01HZX0000000000000000{i:05d}", "seq": i + 1, "hash": f"{i:064x}",
                      "session_id": "imported", "turn_id": f"imported/t{i}", "ts": "2026-05-01T10:00:00.000Z",
                      "kind": "tool_call", "text": "run the deploy", "tokens": 3,
                      "tool": {"name": "deploy", "call_id": f"c{i}", "input": {"cmd": tool, "note": [tool]}},
                      "meta": {"fields": {"hook": {"output": meta}}, "labels": [meta]},
                      "source": {"format": "openai", "path": f"exports/{i}.json", "line": i + 1, "uuid": None,
                                 "key": f"imported/{i}", "comment": src}})
    for i, (session, turn) in enumerate(zip(p.samples("trace session_id (names and dedupe keys)"),
                                            p.samples("trace turn_id"))):
        lines.append({"id": f"01HZY0000000000000000{i:05d}", "seq": i + 1, "hash": f"{i:064x}", "session_id": session,
                      "turn_id": turn, "ts": "2026-05-02T10:00:00.000Z", "kind": "user", "text": "hello", "tokens": 1})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def huge_line(path: Path, p: Planter) -> Path:
    """A tool output on one line bigger than the reader holds (spilled to a
    temp file and streamed, redacted, into the artifact store)."""
    filler = "".join(f"row {i}: nothing to see here\n" for i in range(3000))
    body = filler + "\n".join(p.samples("a line too big to hold")) + "\n" + filler
    lines = [_cc_line("assistant", {"id": "msg_big", "role": "assistant", "model": "claude-x", "content": [
                 {"type": "tool_use", "id": "toolu_big", "name": "Bash", "input": {"command": "cat dump"}}]}, 1,
                      sessionId="big-line-session"),
             _cc_line("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_big",
                                                            "content": body}]}, 2, sessionId="big-line-session")]
    path.write_text("\n".join(lines) + "\n")
    return path


def file_names(folder: Path, p: Planter) -> Path:
    """Transcripts whose file names hold a token (the path is kept in every
    event's source, in state.db and in the anatomy record of each call)."""
    folder.mkdir()
    names = p.samples("a transcript's file name")
    kept = [n for n in names if re.fullmatch(r"[A-Za-z0-9_.-]{1,200}", n)]
    p.planted["a transcript's file name"] = kept
    for i, name in enumerate(kept):
        if i % 2:
            (folder / f"{name}.jsonl").write_text(
                _cc_line("user", {"role": "user", "content": "nothing secret here"}, i, sessionId=f"file-{i}") + "\n")
        else:                                          # a request body: ingest writes an anatomy record of it
            (folder / f"{name}.json").write_text(json.dumps({"model": "claude-x", "max_tokens": 10, "messages": [
                {"role": "user", "content": "nothing secret here"}, {"role": "assistant", "content": "ok"}]}))
    return folder


GEMINI_SID = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
OPENCODE_SID = "ses_4c7e21c9a3ffe1Qd8ZkR2mVn5U"


def gemini_cli(path: Path, p: Planter) -> Path:
    lines = [{"sessionId": GEMINI_SID, "projectHash": "c4" * 32, "startTime": "2026-06-14T08:02:11.420Z",
              "lastUpdated": "2026-06-14T08:02:11.420Z"}]
    said, thoughts, args, results, notices, summaries = (
        p.samples("gemini-cli user text"), p.samples("gemini-cli thoughts"), p.samples("gemini-cli tool args"),
        p.samples("gemini-cli tool result"), p.samples("gemini-cli error and info"), p.samples("gemini-cli $set summary"))
    for i, (text, thought, arg, result, notice, summary) in enumerate(zip(said, thoughts, args, results, notices,
                                                                         summaries)):
        ts = f"2026-06-14T08:{i // 60 % 60:02d}:{i % 60:02d}.000Z"
        lines.append({"id": f"u{i}", "timestamp": ts, "type": "user", "content": [{"text": f"deploy with {text}"}]})
        call = {"id": f"run-{i}", "name": "run_shell_command", "args": {"command": arg}, "status": "executing"}
        reply = {"id": f"g{i}", "timestamp": ts, "type": "gemini", "content": "Running it.", "model": "gemini-2.5-pro",
                 "thoughts": [{"subject": "Key", "description": thought}], "toolCalls": [call]}
        lines.append(reply)                      # written again whole once the call has its result
        lines.append({**reply, "toolCalls": [{**call, "status": "success", "result": [{"functionResponse": {
            "id": f"run-{i}", "name": "run_shell_command", "response": {"output": result}}}]}]})
        lines.append({"id": f"e{i}", "timestamp": ts, "type": "error" if i % 2 else "info", "content": notice})
        lines.append({"$set": {"summary": f"Deployed with {summary}"}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def opencode(path: Path, p: Planter) -> Path:
    def part(mid: str, n: int, kind: str, **fields) -> dict:
        return {"id": f"prt_{mid}_{n}", "sessionID": OPENCODE_SID, "messageID": mid, "type": kind, **fields}

    titles = p.samples("opencode session title")
    messages = []
    for i, (text, reasoning, command, output, error, env, subtask) in enumerate(zip(
            p.samples("opencode text"), p.samples("opencode reasoning"), p.samples("opencode tool input"),
            p.samples("opencode tool output and title"), p.samples("opencode tool error and API error"),
            p.samples("opencode file part (data: URL, base64)"), p.samples("opencode subtask prompt"))):
        user, reply, t = f"msg_u{i:04d}", f"msg_a{i:04d}", 1781430000000 + i * 1000
        dotenv = base64.b64encode(f"HOST=db.internal\n{env}\n".encode()).decode()
        messages.append({"info": {"id": user, "sessionID": OPENCODE_SID, "role": "user", "time": {"created": t}},
                         "parts": [part(user, 1, "text", text=text),
                                   part(user, 2, "file", mime="text/plain", filename=".env",
                                        url=f"data:text/plain;base64,{dotenv}")]})
        messages.append({"info": {"id": reply, "sessionID": OPENCODE_SID, "role": "assistant", "time": {"created": t},
                                  "error": {"name": "APIError", "data": {"message": error}}},
                         "parts": [part(reply, 1, "reasoning", text=reasoning),
                                   part(reply, 2, "tool", callID=f"c{i}", tool="bash", state={
                                       "status": "completed", "input": {"command": command}, "output": output,
                                       "title": output}),
                                   part(reply, 3, "tool", callID=f"e{i}", tool="bash", state={
                                       "status": "error", "input": {"command": "true"}, "error": error}),
                                   part(reply, 4, "subtask", agent="general", description="check", prompt=subtask)]})
    export = {"info": {"id": OPENCODE_SID, "projectID": "8c2f" * 10, "directory": "/home/ana/src", "title": titles[0],
                       "time": {"created": 1781430000000, "updated": 1781439000000}},
              "messages": messages, "todos": [{"id": str(i), "content": f"rotate {t}", "status": "pending"}
                                              for i, t in enumerate(p.samples("opencode todos"))]}
    path.write_text(json.dumps(export))
    # one session has one title: the others come as later exports of sessions of their own
    for i, title in enumerate(titles[1:]):
        (path.parent / f"ses_{i:026d}.json").write_text(json.dumps({
            "info": {"id": f"ses_{i:026d}", "title": title, "time": {"created": 1781430000000}}, "messages": []}))
    return path.parent


def build_inputs(root: Path) -> tuple[list[Path], Planter]:
    p = Planter()
    root.mkdir()
    (root / "codex").mkdir()
    (root / "opencode").mkdir()
    paths = [claude_code(root / "cc.jsonl", p), codex(root / "codex" / "rollout.jsonl", p),
             openai_chat(root / "chat.jsonl", p), anthropic(root / "request.json", p),
             trace_events(root / "export.trace.jsonl", p), huge_line(root / "huge.jsonl", p),
             file_names(root / "named", p), gemini_cli(root / f"session-2026-06-14T08-02-{GEMINI_SID[:8]}.jsonl", p),
             opencode(root / "opencode" / f"{OPENCODE_SID}.json", p)]
    return paths, p


def claude_code_lines(session: str, texts: list[str]) -> list[str]:
    """A Claude Code session saying each text once: a prompt, a command that
    uses it and the command's output (for a transcript written as it grows)."""
    lines = []
    for i, text in enumerate(texts):
        n = 3 * i
        lines.append(_cc_line("user", {"role": "user", "content": f"step {i}: deploy with {text}"}, n + 1,
                              sessionId=session))
        lines.append(_cc_line("assistant", {"id": f"msg_f{i}", "role": "assistant", "model": "claude-x", "content": [
            {"type": "tool_use", "id": f"toolu_f{i}", "name": "Bash", "input": {"command": f"deploy {text}"}}]},
            n + 2, sessionId=session))
        lines.append(_cc_line("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_f{i}",
                                                                    "content": f"deployed; key was {text}"}]},
                              n + 3, sessionId=session))
    return lines
