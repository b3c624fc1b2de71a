"""`trace bench redact`: the redactor alone, on every string of the real
transcripts (each text as a parser hands it over) and on every record
whole (the structured path the append chokepoint takes for meta, tool
inputs and ids), against a peer run in the same process: each text
encoded to bytes and lowercased, the one pass over every character any
scan needs (the redactor's own first step); and the bytes inside base64
payloads (generated), against decoding them alone. vs peer is how many such
passes redaction costs: the ratio travels between machines, the absolute
figures do not. CPU time, so other processes' load counts less."""
from __future__ import annotations

import base64
import random
import statistics
import time
from pathlib import Path
from typing import Callable

import orjson

from reducers.redact import forget, redact
from reducers.redact_fields import redact_value
from reducers.redact_payload import decode_base64, redact_base64, secrets_in_base64
from trace_cli.bench.corpus import shared_transcripts, transcript_files


def _records(root: Path) -> list:
    records = []
    for path in transcript_files(root):
        data = path.read_bytes()
        chunks = [data] if path.suffix == ".json" else data.splitlines()
        for chunk in chunks:
            try:
                records.append(orjson.loads(chunk))
            except orjson.JSONDecodeError:
                continue
    return records


def _strings(value, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def run_redact_bench(corpus: str | None, repeat: int, note: Callable[[str], None]) -> list[dict]:
    root = shared_transcripts(corpus)
    records = _records(root)
    texts: list[str] = []
    for r in records:
        _strings(r, texts)
    chars = sum(map(len, texts))
    note(f"corpus {root}: {len(records)} records, {len(texts)} strings, {chars / 1e6:.1f} M characters")
    def texts_redacted():
        return sum(redact(t, memo=False)[1] for t in texts)

    def records_redacted():
        return sum(redact_value(r)[1] for r in records)

    def peer_search():
        return sum(len(t.encode("ascii", "replace").lower()) for t in texts) and 0

    phases = {"texts": texts_redacted, "records": records_redacted, "peer": peer_search}
    times, found = _timed(phases, repeat, note)
    peer_s = statistics.median(times["peer"])
    rows = []
    for name, units in (("texts", len(texts)), ("records", len(records)), ("peer", len(texts))):
        s = statistics.median(times[name])
        rows.append({"bench": "redact", "phase": name, "items": units, "chars_m": round(chars / 1e6, 2),
                     "cpu_s_median": round(s, 4), "us_per_item": round(s / max(units, 1) * 1e6, 2),
                     "mb_per_s": round(chars / s / 1e6, 1) if s else None,
                     "vs_peer": round(s / peer_s, 2) if peer_s and name != "peer" else None,
                     "found": found[name], "runs": repeat})
    return rows + _payload_rows(repeat, note)


def _timed(phases: dict[str, Callable[[], int]], repeat: int,
           note: Callable[[str], None]) -> tuple[dict[str, list[float]], dict[str, int]]:
    """CPU seconds of each phase per run, and what each found."""
    times: dict[str, list[float]] = {name: [] for name in phases}
    found: dict[str, int] = {}
    for run in range(repeat):
        note(f"run {run + 1}/{repeat}")
        for name, phase in phases.items():      # interleaved: load on a shared machine hits all alike
            forget()
            start = time.process_time()
            found[name] = phase()
            times[name].append(time.process_time() - start)
    return times, found


def _payload_rows(repeat: int, note: Callable[[str], None]) -> list[dict]:
    """The bytes inside base64 payloads: generated ones (random binary as
    images are, and latin-1 text with keys in it), scanned whole and as a
    stream (the path of a payload over the spill size), against their
    base64 decoding alone as the peer."""
    rng = random.Random(7)
    text = "".join(f"ligne {i} d\u00e9j\u00e0 vue\nexport GITHUB_TOKEN=ghp_{i:06d}" + "Ab3" * 10 + "\n"
                   if i % 5000 == 0 else f"ligne {i} d\u00e9j\u00e0 vue\n" for i in range(80_000))
    raws = [rng.randbytes(2 << 20) for _ in range(4)] + [text.encode("latin-1")]
    payloads = [base64.b64encode(raw).decode("ascii") for raw in raws]
    chars = sum(map(len, payloads))
    note(f"payloads: {len(payloads)} generated, {chars / 1e6:.1f} M base64 characters")
    chunk = 1 << 16
    phases = {
        "payloads": lambda: sum(redact_base64(p)[1] for p in payloads),
        "payloads_stream": lambda: sum(secrets_in_base64(p[i:i + chunk] for i in range(0, len(p), chunk))
                                       for p in payloads),
        "payload_decode": lambda: sum(len(decode_base64(p)) for p in payloads) and 0,
    }
    times, found = _timed(phases, repeat, lambda _: None)
    peer_s = statistics.median(times["payload_decode"])
    rows = []
    for name in phases:
        s = statistics.median(times[name])
        rows.append({"bench": "redact", "phase": name, "items": len(payloads), "chars_m": round(chars / 1e6, 2),
                     "cpu_s_median": round(s, 4), "us_per_item": round(s / len(payloads) * 1e6, 2),
                     "mb_per_s": round(chars / s / 1e6, 1) if s else None,
                     "vs_peer": round(s / peer_s, 2) if peer_s and name != "payload_decode" else None,
                     "found": found[name], "runs": repeat})
    return rows
