"""What the global options (`--store`, `--quiet`) decided, handed to every
command through Typer's context. A module of its own so command modules
never import `trace_cli.app` back (the CLI has no import circle)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from trace_cli.output import Output

if TYPE_CHECKING:                          # annotations only: the quick recall path never loads Typer
    import typer


@dataclass
class AppState:
    store_path: str | None
    quiet: bool

    def output(self, json_mode: bool = False) -> Output:
        return Output(json_mode=json_mode, quiet=self.quiet)

    def store(self, out: Output):
        from stores.store import Store
        return Store(self.store_path, warn=out.warn, note=out.note)


def opened(ctx: typer.Context, json_mode: bool = False, *, must_exist: bool = False):
    """The output and the store of this invocation; with `must_exist`, a
    store that is not there yet is an error naming the fix."""
    st = state(ctx)
    out = st.output(json_mode)
    store = st.store(out)
    if must_exist:
        store.require()
    return out, store


def state(ctx: typer.Context) -> AppState:
    """The global options of this invocation (defaults when a command is
    called without the top-level callback, as in some tests)."""
    while ctx is not None:
        if isinstance(ctx.obj, AppState):
            return ctx.obj
        ctx = ctx.parent
    return AppState(None, False)
