"""The `trace` command: argv in, the Python API called, results out.

Exit codes (DESIGN.md): 0 ok · 1 runtime error · 2 usage error · 3 no
result at or above --min-score · 4 store locked · 5 integrity failure ·
6 (verify) only derived files damaged.
Users never see a traceback; TRACE_DEBUG=1 shows one."""
from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

try:                                   # newer typer vendors its own click
    from typer._click.exceptions import ClickException, NoArgsIsHelpError
except ImportError:                    # pragma: no cover - older typer
    from click.exceptions import ClickException, NoArgsIsHelpError

from stores.errors import UsageError, require_utf8
from trace_cli.app_state import AppState
from trace_cli.invocation import guarded, started


def _new_app() -> typer.Typer:
    """The `trace` group with its global options, no commands yet."""
    group = typer.Typer(
        name="trace",
        help=("TRACE: a lossless memory substrate for LLM agents. Every event an agent saw goes into an "
              "append-only, hash-chained log; large tool output into a content-addressed artifact store. "
              "Store: --store DIR, else $TRACE_HOME, else $XDG_DATA_HOME/trace (~/.local/share/trace). "
              "Global options may come before or after the command, and a command's --json before it."),
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    group.callback()(_global)
    return group


def _print_version(value: bool) -> None:
    if value:
        from trace_cli import __version__
        sys.stdout.write(f"trace {__version__}\n")
        raise typer.Exit(0)


def _global(
    ctx: typer.Context,
    store: Annotated[str | None, typer.Option(
        "--store", metavar="DIR", envvar=None,
        help="Store directory (default: $TRACE_HOME, else $XDG_DATA_HOME/trace).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No notes on stderr (errors still print).")] = False,
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_print_version,
                                          help="Print the version and exit.")] = False,
):
    ctx.obj = AppState(store_path=store, quiet=quiet)


COMMAND_MODULES = ("ingest", "recall", "compaction", "show", "export", "inspect", "sessions", "indexes", "verify",
                   "cron", "digest", "bench", "mcp", "serve")


def _add_groups(group: typer.Typer) -> None:
    """The command groups (each a Typer sub-app of its own module)."""
    from trace_cli.commands import anatomy, notes, sweep, working_state
    group.add_typer(sweep.sweep_app, name="sweep")
    group.add_typer(notes.note_app, name="note")
    group.add_typer(working_state.state_app, name="state")
    group.add_typer(anatomy.app)
    _add_hooks(group)


def _add_hooks(group: typer.Typer) -> None:
    from trace_cli.commands.hooks import hooks_app
    group.add_typer(hooks_app, name="hooks")


def _register(group: typer.Typer, modules=COMMAND_MODULES) -> None:
    import importlib
    for name in modules:
        importlib.import_module(f"trace_cli.commands.{name}").register(group)
    if modules is COMMAND_MODULES:
        _add_groups(group)


# Commands that hooks, runtimes and scripts start once per call, built alone:
# turning every command's signature into click parameters costs ~0.1 s of
# CPU, more than a whole fulltext recall or an incremental hook append.
ALONE = {
    "recall": lambda group: _register(group, ("recall",)),
    "context": lambda group: _register(group, ("compaction",)),
    "compact": lambda group: _register(group, ("compaction",)),
    "hooks": _add_hooks,
}


_full_app: typer.Typer | None = None


def full_app() -> typer.Typer:
    """The group with every command (built on first use)."""
    global _full_app
    if _full_app is None:
        _full_app = _new_app()
        _register(_full_app)
    return _full_app


def __getattr__(name: str):
    if name == "app":                     # `from trace_cli.app import app`, for tests and tools
        return full_app()
    raise AttributeError(name)


_built: dict[str | None, object] = {}


def _command_for(args: list[str]):
    """The click command to parse `args` with: the named command alone when
    it is one of ALONE (no help or version asked of the group), else all."""
    from trace_cli.resident.client import command_name
    name = command_name(args)
    if name not in ALONE or "--version" in args[:args.index(name)]:
        name = None
    if name not in _built:
        from trace_cli.param_checks import check_params
        if name is None:
            command = typer.main.get_command(full_app())
        else:
            alone = _new_app()
            ALONE[name](alone)
            command = typer.main.get_command(alone)
        check_params(command)
        _built[name] = command
    return _built[name]


def prebuild() -> None:
    """Build every command once (the resident server, before it forks)."""
    for name in (*ALONE, None):
        _command_for([name] if name else [])


def tune_gc() -> None:
    """Ingest allocates millions of short-lived dicts; the default gen-0
    threshold (700) makes the collector walk the live batches over and over
    (~13% of append time measured). A higher threshold costs a little memory."""
    import gc
    gc.set_threshold(50_000, 20, 20)


def _check_arguments(args: list[str]) -> None:
    """An argument with bytes that are not UTF-8 (Python holds them as lone
    surrogates) is a usage error, unless it names an existing file: Linux
    file names may be any bytes."""
    for arg in args:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            if not os.path.exists(arg):
                require_utf8(arg, "argument")


def main(argv: list[str] | None = None) -> int:
    refused = started()
    if refused is not None:
        return refused
    tune_gc()
    return guarded(lambda: _run(list(sys.argv[1:] if argv is None else argv)))


def _run(args: list[str]) -> int:
    """The exit code of the command `args` name; Click's own exceptions
    (help, usage errors, an abort) turned into theirs."""
    try:
        _check_arguments(args)
        from trace_cli.global_options import hoist_global_options
        command = _command_for(args)
        # A bare `trace` is a request for help, not a usage error.
        args = hoist_global_options(args, command) if args else ["--help"]
        # Parsed and invoked here, not through command.main(): Typer's main
        # turns Ctrl-C into a silent exit 130, EOFError into "Aborted" and a
        # broken pipe into exit 1, where invocation.guarded says what
        # happened, as it does for the quick recall path (one behaviour).
        with command.make_context("trace", args) as ctx:
            rv = command.invoke(ctx)
        return rv if isinstance(rv, int) else 0
    except typer.Exit as exc:
        return exc.exit_code
    except NoArgsIsHelpError as exc:      # `trace state`: a group named alone asks for its help, as a bare `trace` does
        if exc.message.strip():           # (Typer's rich help has printed itself already and left no message)
            sys.stdout.write(exc.message + "\n")
        return 0
    except typer.Abort:
        sys.stderr.write("trace: aborted\n")
        return 130
    except ClickException as exc:                        # usage errors: exit 2, one line
        ctx = getattr(exc, "ctx", None)
        command = "trace"
        if ctx is None:                  # an option's missing or unwanted value: Click names no command
            from trace_cli.resident.client import command_name
            name = command_name(args)
            if name in getattr(_command_for(args), "commands", {}):
                command = f"trace {name}"
        while ctx is not None and ctx.parent is not None:      # the subcommand's names, not argv[0]'s
            command, ctx = command.replace("trace", f"trace {ctx.info_name}", 1), ctx.parent
        hint = f" (see `{command} --help`)"
        sys.stderr.write(f"trace: error: {exc.format_message()}{hint}\n")
        # An agent reads a hook's exit 2 as "block": Claude Code would refuse
        # to stop, drop the prompt or skip the compaction over a hook command
        # line a newer or older TRACE no longer parses. A hook never blocks.
        return 0 if _is_hook_run(args) else exc.exit_code


def _is_hook_run(args: list[str]) -> bool:
    from trace_cli.resident.client import command_name
    if command_name(args) != "hooks":
        return False
    rest = args[args.index("hooks") + 1:]
    return next((a for a in rest if not a.startswith("-")), None) == "run"


def run() -> None:
    sys.exit(main())
