"""Where benchmark input comes from: the shared real transcripts, replicated
as many times as needed with per-copy session ids (so dedupe treats each
copy as new data, exactly as it would a new session)."""
from __future__ import annotations

import os
from pathlib import Path

import orjson

from stores.errors import TraceError

REPO = Path(__file__).resolve().parents[2]


def shared_transcripts(explicit: str | None = None) -> Path:
    candidates = [Path(explicit)] if explicit else []
    if os.environ.get("TRACE_SHARED"):
        candidates.append(Path(os.environ["TRACE_SHARED"]) / "transcripts")
    candidates += [REPO.parent / "shared" / "transcripts", Path.cwd().parent / "shared" / "transcripts"]
    for c in candidates:
        if c.is_dir():
            return c
    raise TraceError("benchmark corpus not found: put the shared transcripts at ../shared/transcripts, "
                     "set TRACE_SHARED, or pass --corpus DIR")


def transcript_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".jsonl", ".json") and p.is_file())


def _rename_sessions(obj, copy: int):
    """Give one replica its own session ids (Claude Code sessionId, Codex
    session_meta id); files without ids get distinct derived ids anyway,
    because the replica lives at a different path."""
    if isinstance(obj, dict):
        if isinstance(obj.get("sessionId"), str):
            obj["sessionId"] = f"{obj['sessionId']}-r{copy}"
        if obj.get("type") == "session_meta" and isinstance(obj.get("payload"), dict) and "id" in obj["payload"]:
            obj["payload"]["id"] = f"{obj['payload']['id']}-r{copy}"
    return obj


def replicate(root: Path, out: Path, copies: int) -> list[Path]:
    """Write `copies` replicas of every transcript under `out`; returns the
    replica directories (one per copy)."""
    files = transcript_files(root)
    dirs = []
    for c in range(copies):
        d = out / f"copy{c:05d}"
        dirs.append(d)
        if d.is_dir():
            continue
        d.mkdir(parents=True)
        for f in files:
            target = d / f.parent.name / f.name
            target.parent.mkdir(exist_ok=True)
            if f.suffix == ".json":
                target.write_bytes(f.read_bytes())
                continue
            with open(f, "rb") as src, open(target, "wb") as dst:
                for line in src:
                    try:
                        dst.write(orjson.dumps(_rename_sessions(orjson.loads(line), c)) + b"\n")
                    except orjson.JSONDecodeError:
                        dst.write(line if line.endswith(b"\n") else line + b"\n")
    return dirs
