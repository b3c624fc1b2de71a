"""`trace hooks install|uninstall|run`: capture and re-injection hooks for
Claude Code and Codex."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

hooks_app = typer.Typer(help=(
    "Plug TRACE into an agent: its sessions are ingested as they go (Stop, SessionEnd, PreCompact) and, after "
    "the agent compacts, the session's markers, notes, working state and digest come back as context."),
    no_args_is_help=True)

AgentOpt = Annotated[str, typer.Option("--agent", "-a", metavar="claude-code|codex", help="The agent runtime.")]
ScopeOpt = Annotated[str, typer.Option("--scope", metavar="user|project",
                                       help="user: your settings; project: this directory's .claude/ or .codex/.")]
DryOpt = Annotated[bool, typer.Option("--dry-run", help="Print the diff; write nothing.")]


@hooks_app.command("install", help=(
    "Add TRACE's hook commands to the agent's settings (Claude Code settings.json; Codex hooks.json and "
    "config.toml, or its notify program before Codex 0.114). The file is replaced atomically and the old one "
    "kept as NAME.trace-backup; an entry is never added twice; everything else in the file keeps its bytes.\n\n"
    "Examples:\n\n  trace hooks install --agent claude-code --dry-run\n\n"
    "  trace hooks install --agent codex --scope project"))
def install(
    ctx: typer.Context,
    agent: AgentOpt,
    scope: ScopeOpt = "user",
    dry_run: DryOpt = False,
    recall_on_prompt: Annotated[bool, typer.Option(
        "--recall-on-prompt", help="Also add a UserPromptSubmit hook that puts recalled context (hits at or above "
                                   "--min-score) before each prompt.")] = False,
    min_score: Annotated[float, typer.Option("--min-score", metavar="X", min=0.0, max=1.0,
                                             help="With --recall-on-prompt: the score a hit needs (a probability, 0-1).")] = 0.3,
    codex_version: Annotated[str | None, typer.Option(
        "--codex-version", metavar="X.Y.Z", help="Install for this Codex version (default: `codex --version`).")] = None,
) -> int:
    from stores.hooks.install import plan_install
    from trace_cli.app_state import state
    st = state(ctx)
    plan = plan_install(agent, scope, store_dir=st.store_path or _env_store(), cwd=Path.cwd(),
                        recall_on_prompt=recall_on_prompt, min_score=min_score, codex_version=codex_version)
    return _carry_out(plan, dry_run, st.output(False))


@hooks_app.command("uninstall", help=(
    "Remove exactly what `trace hooks install` added for the agent (its hook entries, and the config.toml keys "
    "it marked), leaving the rest of the files as they are."))
def uninstall(ctx: typer.Context, agent: AgentOpt, scope: ScopeOpt = "user", dry_run: DryOpt = False) -> int:
    from stores.hooks.install import plan_uninstall
    from trace_cli.app_state import state
    return _carry_out(plan_uninstall(agent, scope, cwd=Path.cwd()), dry_run, state(ctx).output(False))


@hooks_app.command("run", help=(
    "The hook command the agent runs: reads its JSON payload on stdin (Codex notify: as the last argument), "
    "ingests the transcript it names, and for SessionStart after a compaction prints hook JSON with "
    "additionalContext. Never fails the agent: problems go to the store's hooks.log and it exits 0."))
def run(
    ctx: typer.Context,
    event: Annotated[str, typer.Argument(metavar="EVENT", help=(
        "Stop, SubagentStop, SessionEnd, PreCompact, SessionStart, UserPromptSubmit, or notify (Codex)."))],
    payload: Annotated[str | None, typer.Argument(metavar="[PAYLOAD]", help="The payload, when not on stdin.")] = None,
    agent: AgentOpt = "claude-code",
    min_score: Annotated[float, typer.Option("--min-score", metavar="X", help="UserPromptSubmit: the score a hit needs.")] = 0.3,
) -> int:
    from stores.hooks.runtime import log_failure, run_hook
    from trace_cli.app_state import state
    st = state(ctx)
    store = None
    try:
        store = st.store(st.output(True))
        text = payload if payload is not None else _read_stdin()
        outcome = run_hook(store, agent, event, text, min_score=min_score)
        if outcome.stdout:
            sys.stdout.write(outcome.stdout + "\n")
    except Exception as exc:                     # even a bad --store must not fail the agent
        if store is not None:
            log_failure(store, agent, event, f"{type(exc).__name__}: {exc}")
        else:
            sys.stderr.write(f"trace: hook {event}: {exc}\n")
    return 0


def _read_stdin() -> str:
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    return sys.stdin.buffer.read().decode("utf-8", "replace")


def _env_store() -> str | None:
    import os
    return os.environ.get("TRACE_HOME") or None


def _carry_out(plan, dry_run: bool, out) -> int:
    from stores.hooks.settings_files import apply
    for change in plan.changes:
        if dry_run:
            out.raw(change.diff() or f"{change.path}: (removed)\n")
        else:
            backup = apply(change)
            verb = "removed" if change.after is None else "updated" if change.before is not None else "created"
            out.note(f"{verb} {change.path}" + (f" (backup: {backup})" if backup else ""))
    for note in plan.notes:
        out.note(note)
    if dry_run and plan.changes:
        out.note("dry run: nothing was written")
    return 0
