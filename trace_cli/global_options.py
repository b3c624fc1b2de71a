"""Global options anywhere on the line: `trace recall x --store DIR` means
what `trace --store DIR recall x` means. Click reads group options only
before the subcommand, so they are moved there before parsing.

Only `--store` (with its value) and `--quiet` move; `-q` moves too unless
the command itself defines `-q` (for `trace context`, `-q` is `--query`).
Nothing after `--` moves: it is data. `--json` goes the other way: written
before a command that has it (`trace --json recall x`), it is moved to the
command, as the user meant."""
from __future__ import annotations

GLOBAL_WITH_VALUE = ("--store",)
GLOBAL_FLAGS = ("--quiet",)
COMMAND_FLAG = "--json"


def hoist_global_options(args: list[str], root) -> list[str]:
    """`args` with global options found after the subcommand moved in front
    of it. `root` is the click group, used to find the subcommand and the
    options it defines (so a value such as `--budget --store` is left to
    the command that owns it)."""
    head: list[str] = []
    down: list[str] = []                          # a command's own --json, written in front
    i = 0
    while i < len(args):                          # the global options already in front
        arg = args[i]
        if arg in GLOBAL_WITH_VALUE:
            head += args[i:i + 2]
            i += 2
        elif arg == COMMAND_FLAG:
            down.append(arg)
            i += 1
        elif arg.startswith("-") and arg != "-":
            head.append(arg)
            i += 1
        else:
            break
    rest = args[i:]
    if not rest:
        return args
    command = _leaf(root, rest)
    own = _option_names(command)
    if down and COMMAND_FLAG not in own:          # not this command's: left where it was, for Click to name
        head, down = head + down, []
    takes_value = _value_options(command)
    moved: list[str] = []
    kept: list[str] = []
    j = 0
    while j < len(rest):
        arg = rest[j]
        if arg == "--":
            kept += rest[j:]
            break
        name = arg.split("=", 1)[0]
        if name in GLOBAL_WITH_VALUE and name not in own:
            if "=" not in arg and j + 1 == len(rest):           # moved alone, it would take the command as its value
                from stores.errors import UsageError
                raise UsageError(f"{arg} needs a value: {arg} DIR (the store directory)")
            if "=" in arg:
                moved.append(arg)
                j += 1
            else:
                moved += rest[j:j + 2]
                j += 2
            continue
        if (arg in GLOBAL_FLAGS or arg == "-q") and arg not in own:
            moved.append(arg)
            j += 1
            continue
        kept.append(arg)
        if arg in takes_value:                    # its value is data, whatever it looks like
            if j + 1 < len(rest):
                kept.append(rest[j + 1])
            j += 2
            continue
        j += 1
    if down:
        at = kept.index("--") if "--" in kept else len(kept)
        kept[at:at] = down
    if not moved and not down:
        return args
    return head + moved + kept


def _leaf(root, rest: list[str]):
    """The command `rest` names (walking nested groups), else the root."""
    command = root
    for token in rest:
        sub = getattr(command, "commands", None)
        if not sub or token.startswith("-"):
            break
        if token not in sub:
            break
        command = sub[token]
    return command


def _option_names(command) -> set[str]:
    names: set[str] = set()
    for param in getattr(command, "params", ()):
        names.update(getattr(param, "opts", ()))
        names.update(getattr(param, "secondary_opts", ()))
    return names


def _value_options(command) -> set[str]:
    out: set[str] = set()
    for param in getattr(command, "params", ()):
        if getattr(param, "param_type_name", "") == "option" and not getattr(param, "is_flag", False) \
                and not getattr(param, "count", False):
            out.update(param.opts)
    return out
