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


_TYPE_NAMES = {"integer": "INTEGER", "integer range": "INTEGER", "float": "NUMBER", "float range": "NUMBER",
               "text": "TEXT", "path": "PATH", "filename": "FILE"}


def _param_row(p) -> tuple[str, str, str]:
    argument = _is_argument(p)
    flag = getattr(p, "is_flag", False)
    name = f"`{_arg_name(p)}`" if argument else ", ".join(f"`{o}`" for o in (*p.opts, *p.secondary_opts))
    value = "" if flag or argument else (p.metavar or _TYPE_NAMES.get(p.type.name, p.type.name.upper()))
    notes = []
    low, high = getattr(p.type, "min", None), getattr(p.type, "max", None)
    if low is not None:
        notes.append(f"at least {low}")
    if high is not None:
        notes.append(f"at most {high}")
    if getattr(p, "multiple", False) or (argument and p.nargs == -1):
        notes.append("repeatable")
    default = p.default
    if not (default is None or flag or callable(default) or default in ((), [], "")):
        notes.append(f"default `{default}`")
    help_text = " ".join((getattr(p, "help", None) or "").split())
    meaning = help_text + (f" ({'; '.join(notes)})" if notes else "")
    return name, f"`{value}`" if value else "", meaning.replace("|", "\\|")


def _is_argument(p) -> bool:
    return p.param_type_name == "argument"


def _arg_name(p) -> str:
    return p.metavar or p.human_readable_name.upper()


def render() -> str:
    """The whole reference page."""
    parts = [HEADER]
    for c in commands():
        cmd = c.command
        parts.append(f"\n## `{c.name}`\n")
        subs = getattr(cmd, "commands", None)
        usage = " ".join(("trace", *c.path))
        if subs:
            usage += " [OPTIONS] COMMAND [ARGS]..."
        else:
            usage += " [OPTIONS]" + "".join(
                f" {_arg_name(p)}" if p.required or _arg_name(p).startswith("[") else f" [{_arg_name(p)}]"
                for p in cmd.params if _is_argument(p))
        parts.append(f"\n```\n{usage}\n```\n")
        text = (cmd.help or "").strip()
        if text:
            parts.append("\n" + "\n\n".join(_paragraphs(re.split(r"\n\s*\n", text))) + "\n")
        rows = [_param_row(p) for p in cmd.params if not getattr(p, "hidden", False)]
        if rows:
            parts.append("\n| option | value | meaning |\n|---|---|---|\n")
            parts.append("".join(f"| {a} | {b} | {m} |\n" for a, b, m in rows))
        if subs:
            names = [n for n in subs if not getattr(subs[n], "hidden", False)]
            parts.append("\nCommands: " + ", ".join(f"`{c.name} {n}`" for n in names) + ".\n")
    return "".join(parts)


def _paragraphs(paragraphs: list[str]) -> list[str]:
    """Help paragraphs in Markdown: an example line (after "Examples:", or
    "Example:  trace …") becomes code."""
    out, in_examples = [], False
    for text in paragraphs:
        lines = [ln.strip() for ln in text.splitlines()]
        single = lines[0] if len(lines) == 1 else None
        m = _EXAMPLE.match(single) if single else None
        if re.match(r"^Examples?:$", lines[0]):
            in_examples = True
            out.append(lines[0])
        elif m and not in_examples:
            out.extend([single[:m.start(1)].strip(), f"    {single[m.start(1):]}"])
        elif single and in_examples:
            out.append(f"    {single}")
        else:
            out.append(" ".join(lines))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m trace_cli.command_reference docs/COMMANDS.md\n")
        return 2
    Path(argv[0]).write_text(render(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
