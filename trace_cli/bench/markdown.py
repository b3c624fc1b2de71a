"""The `trace bench all` report as Markdown: the run (command, commit,
machine, load), the headline ratios, then one table per section (its rows
as measured; a skipped section says why)."""
from __future__ import annotations

from typing import Any

# Columns that repeat what the table title already says.
_DROP = {"bench"}


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, (list, tuple)):
        return " / ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {_cell(v)}" for k, v in value.items())
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(rows: list[dict]) -> list[str]:
    columns: list[str] = []
    for r in rows:
        columns += [k for k in r if k not in columns and k not in _DROP]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(r.get(c)) for c in columns) + " |" for r in rows]
    return lines


def render(report: dict) -> str:
    m = report["machine"]
    out = [f"# trace bench all ({report['started']})", "",
           *(["**Partial: the run is still going or was stopped; the sections below are those finished.**", ""]
             if report.get("partial") else []),
           f"- command: `{report['command']}`",
           f"- commit: {report.get('commit') or 'unknown'}",
           f"- machine: {m['cpus']} CPUs, Python {m['python']}, {m['platform']}",
           f"- load average (1/5/15 min) before: {_cell(m['load_before'])}; after: {_cell(m.get('load_after'))}",
           f"- total wall time: {_cell(report.get('wall_s'))} s", "",
           "Ratios are TRACE's figure over the peer's, measured in the same run on the same machine: "
           "they compare across machines and load; the absolute figures do not.", "",
           "## Headline", ""]
    if report.get("headline"):
        out += table([{"section": h["section"], "figure": h["figure"],
                       "TRACE": f"{_cell(h['value'])} {h['unit']}".strip(), "peer": h["peer"],
                       "peer figure": f"{_cell(h['peer_value'])} {h['unit']}".strip(), "ratio": h["ratio"],
                       "better is": h["better"]} for h in report["headline"]])
    else:
        out.append("No section produced figures.")
    for s in report["sections"]:
        out += ["", f"## {s['title']}", "",
                f"Section `{s['name']}`: {s['status']}; {_cell(s['wall_s'])} s wall, {_cell(s['cpu_s'])} s CPU, "
                f"peak RSS of its largest process {_cell(s['peak_rss_mb'])} MB.", ""]
        if s["status"] != "ok":
            out.append(f"{'Skipped' if s['status'] == 'skipped' else 'Failed'}: {s['reason']}")
            continue
        kinds = list(dict.fromkeys(r.get("bench") for r in s["rows"]))
        for bench in kinds:
            rows = [r for r in s["rows"] if r.get("bench") == bench]
            if len(kinds) > 1:
                out += [f"`{bench}`:", ""]
            out += table(rows) + [""]
    return "\n".join(out).rstrip() + "\n"
