"""docs/COMMANDS.md: every command's `--help` as one Markdown page, and
the example commands the help texts give (tests run them on the demo
store). Both read the same Typer definitions `--help` prints, so the page
cannot say what the CLI does not.

    python -m trace_cli.command_reference docs/COMMANDS.md     (make commands)"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

HEADER = ("# Command reference\n\n"
          "Generated from each command's `--help` by `make commands` "
          "(`python -m trace_cli.command_reference docs/COMMANDS.md`); "
          "tests/test_command_reference.py fails when this page is out of date.\n")
# "Example:  trace x" or an indented "  trace x" line after "Examples:"; a
# trailing "(…)" after two spaces or more is a remark, not part of the command.
_EXAMPLE = re.compile(r"^\s*(?:Examples?:\s+)?((?:(?:echo|cat)\s[^|]*\|\s*)?trace(?:\s.*?)?)(?:\s{2,}\(.*\))?\s*$")


@dataclass
class Command:
    path: tuple[str, ...]          # ("sweep", "revert")
    command: object                # the click command

    @property
    def name(self) -> str:
        return " ".join(("trace", *self.path))


def commands() -> list[Command]:
    """Every command and command group, in `--help` order, hidden ones left out."""
    import typer

    from trace_cli.app import app
    root = typer.main.get_command(app)
    found: list[Command] = []

    def walk(cmd, path):
        found.append(Command(path, cmd))
        subs = getattr(cmd, "commands", None) or {}
        for name in subs:
            sub = subs[name]
            if not getattr(sub, "hidden", False):
                walk(sub, (*path, name))

    walk(root, ())
    return found


def help_examples() -> list[tuple[str, str]]:
    """(command name, example line) for every example in a help text."""
    out = []
    for c in commands():
        text = c.command.help or ""
        lines = text.splitlines()
        in_examples = False
        for line in lines:
            if re.match(r"^\s*Examples?:", line):
                in_examples = True
            if not in_examples:
                continue
            m = _EXAMPLE.match(line)
            if m:
                out.append((c.name, m.group(1).strip()))
    return out


def _param_row(p) -> tuple[str, str, str]:
    import click
    if isinstance(p, click.Argument):
        name = f"`{p.human_readable_name}`"
    else:
        name = ", ".join(f"`{o}`" for o in (*p.opts, *p.secondary_opts))
    metavar = "" if getattr(p, "is_flag", False) else (p.metavar or (p.type.name.upper() if p.type else ""))
    default = p.default
    shown = "" if default is None or default is False or default == () or callable(default) \
        or getattr(p, "is_flag", False) and not default else f" (default: `{default}`)"
    help_text = " ".join((getattr(p, "help", None) or "").split())
    return name, f"`{metavar}`" if metavar else "", (help_text + shown).replace("|", "\\|")


def render() -> str:
    parts = [HEADER]
    for c in commands():
        cmd = c.command
        parts.append(f"\n## `{c.name}`\n")
        subs = getattr(cmd, "commands", None)
        usage = " ".join(("trace", *c.path)) + (" [OPTIONS] COMMAND [ARGS]..." if subs else "")
        if not subs:
            pieces = []
            for p in cmd.params:
                if getattr(p, "hidden", False):
                    continue
                import click
                if isinstance(p, click.Argument):
                    pieces.append(p.make_metavar() if hasattr(p, "make_metavar") and False else
                                  (p.metavar or p.human_readable_name))
            usage += " [OPTIONS]" + "".join(f" {x}" for x in pieces)
        parts.append(f"\n```\n{usage}\n```\n")
        text = (cmd.help or "").strip()
        if text:
            parts.append("\n" + "\n\n".join(_paragraph(p) for p in re.split(r"\n\s*\n", text)) + "\n")
        rows = [_param_row(p) for p in cmd.params if not getattr(p, "hidden", False)]
        if rows:
            parts.append("\n| option | value | meaning |\n|---|---|---|\n")
            parts.append("".join(f"| {a} | {b} | {c_} |\n" for a, b, c_ in rows))
        if subs:
            names = [n for n in subs if not getattr(subs[n], "hidden", False)]
            parts.append("\nCommands: " + ", ".join(f"`{c.name} {n}`" for n in names) + ".\n")
    return "".join(parts)


def _paragraph(text: str) -> str:
    """A help paragraph in Markdown: an example line becomes code."""
    lines = [ln.strip() for ln in text.splitlines()]
    m = _EXAMPLE.match(" ".join(lines)) if len(lines) == 1 else None
    if m and "trace " in lines[0][:40]:
        label = lines[0][:lines[0].index("trace ")].strip()
        return (f"{label}\n\n" if label else "") + f"    {lines[0][lines[0].index('trace '):]}"
    return " ".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m trace_cli.command_reference docs/COMMANDS.md\n")
        return 2
    Path(argv[0]).write_text(render(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
