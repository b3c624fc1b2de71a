"""`trace hooks install|uninstall` as functions: which files an agent's
hooks live in, what TRACE adds to them, and the changes (FileChange, shown
as a diff with --dry-run, applied atomically with a backup otherwise).

Formats, as researched (2026-11):
- Claude Code reads hooks from settings.json (`~/.claude/settings.json`,
  or `$CLAUDE_CONFIG_DIR/settings.json`; project: `.claude/settings.json`):
  `{"hooks": {EVENT: [{"matcher": …, "hooks": [{"type": "command",
  "command": …, "timeout": SECONDS}]}]}}`. Stop/UserPromptSubmit take no
  matcher; SessionStart's matcher is its `source` (startup|resume|clear|
  compact); the payload arrives as JSON on stdin with session_id,
  transcript_path, cwd, hook_event_name (docs.claude.com hooks reference;
  anthropics/claude-code plugin examples).
- Codex (openai/codex codex-rs/hooks, config/src/hook_config.rs) reads the
  same shape from `hooks.json` beside config.toml (`$CODEX_HOME`, default
  `~/.codex`; project: `.codex/`). Hooks appeared in 0.114 (SessionStart,
  Stop) behind `[features] codex_hooks = true`, renamed `hooks` in 0.129;
  PreCompact/PostCompact (PR 19905, merged 2026-04-29) and SessionStart
  source `compact` (PR 21272) came after, so we install those from 0.130.
  Before 0.114 there is only `notify = [argv…]` in config.toml, which gets
  `{"type": "agent-turn-complete", "thread-id", "turn-id", "cwd", …}` as its
  last argument (codex-rs/hooks/src/legacy_notify.rs). New Codex versions
  ask the user to trust new hooks once (`/hooks`)."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from stores.errors import TraceError, UsageError
from stores.hooks.hook_entries import Wanted, add_hooks, ours, remove_hooks
from stores.hooks.json_text import JsonText
from stores.hooks.settings_files import BACKUP_SUFFIX, FileChange, read_text

AGENTS = ("claude-code", "codex")
SCOPES = ("user", "project")
CODEX_HOOKS_SINCE = (0, 114, 0)
CODEX_HOOKS_KEY_RENAMED = (0, 129, 0)
CODEX_COMPACT_HOOKS_SINCE = (0, 130, 0)
TOML_MARK = "added by trace hooks install"
DEFAULT_MIN_SCORE = 0.3          # fulltext-only scores (no embedder on the prompt path) run lower than hybrid


@dataclass
class Plan:
    agent: str
    changes: list[FileChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def trace_command(store_dir: str | None) -> list[str]:
    """How an agent should start this TRACE: the executable beside this
    Python (the venv's bin/trace) when there, else `trace` on PATH."""
    import sys
    exe = Path(sys.executable).with_name("trace")
    argv = [str(exe) if exe.exists() else (shutil.which("trace") or "trace")]
    if store_dir:
        argv += ["--store", str(Path(store_dir).expanduser().resolve())]
    return argv


def _shell(argv: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


def plan_install(agent: str, scope: str = "user", *, store_dir: str | None = None, cwd: Path | None = None,
                 recall_on_prompt: bool = False, min_score: float = DEFAULT_MIN_SCORE,
                 codex_version: str | None = None) -> Plan:
    _check(agent, scope)
    base = trace_command(store_dir)
    if agent == "claude-code":
        return _claude_install(scope, base, cwd, recall_on_prompt, min_score)
    return _codex_install(scope, base, cwd, codex_version, recall_on_prompt, min_score)


def plan_uninstall(agent: str, scope: str = "user", *, cwd: Path | None = None) -> Plan:
    _check(agent, scope)
    plan = Plan(agent)
    if agent == "claude-code":
        path = _claude_settings(scope, cwd)
        plan.changes.append(_edit_json(path, lambda doc: remove_hooks(doc, ours(agent)), removing=True))
    else:
        home = _codex_home(scope, cwd)
        plan.changes.append(_edit_json(home / "hooks.json", lambda doc: remove_hooks(doc, ours(agent)),
                                       removing=True))
        plan.changes.append(_edit_toml(home / "config.toml", _toml_remove_ours))
    plan.changes = [c for c in plan.changes if c.changed]
    if not plan.changes:
        plan.notes.append(f"nothing of TRACE's is installed for {agent} ({scope} scope)")
    return plan


def _check(agent: str, scope: str) -> None:
    if agent not in AGENTS:
        raise UsageError(f"unknown --agent {agent!r}; choose one of: {', '.join(AGENTS)}")
    if scope not in SCOPES:
        raise UsageError(f"unknown --scope {scope!r}; choose one of: {', '.join(SCOPES)}")


# -- Claude Code ---------------------------------------------------------------------

def _claude_settings(scope: str, cwd: Path | None) -> Path:
    if scope == "project":
        return (cwd or Path.cwd()) / ".claude" / "settings.json"
    config = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(config).expanduser() if config else Path.home() / ".claude") / "settings.json"


def _claude_install(scope, base, cwd, recall_on_prompt, min_score) -> Plan:
    run = base + ["hooks", "run", "--agent", "claude-code"]
    wanted = [Wanted("Stop", _shell(run + ["Stop"])),
              Wanted("SessionEnd", _shell(run + ["SessionEnd"])),
              Wanted("PreCompact", _shell(run + ["PreCompact"])),
              Wanted("SessionStart", _shell(run + ["SessionStart"]), matcher="compact", timeout=15)]
    if recall_on_prompt:
        wanted.append(Wanted("UserPromptSubmit", _shell(run + ["UserPromptSubmit", "--min-score", str(min_score)]),
                             timeout=10))
    path = _claude_settings(scope, cwd)
    plan = Plan("claude-code", [_edit_json(path, lambda doc: add_hooks(doc, wanted, ours("claude-code")))])
    plan.notes.append("Claude Code reads hooks at start: restart running sessions (or open /hooks) to use them")
    return plan


# -- Codex ---------------------------------------------------------------------------

def _codex_home(scope: str, cwd: Path | None) -> Path:
    if scope == "project":
        return (cwd or Path.cwd()) / ".codex"
    home = os.environ.get("CODEX_HOME")
    return Path(home).expanduser() if home else Path.home() / ".codex"


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    m = re.search(r"(\d+)\.(\d+)\.(\d+)", text or "")
    return tuple(int(g) for g in m.groups()) if m else None


def installed_codex_version() -> str | None:
    exe = shutil.which("codex")
    if not exe:
        return None
    try:
        done = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def _codex_install(scope, base, cwd, codex_version, recall_on_prompt, min_score) -> Plan:
    plan = Plan("codex")
    given = codex_version or installed_codex_version()
    version = parse_version(given)
    if given and version is None:
        raise UsageError(f"cannot read a Codex version from {given!r}; pass --codex-version like 0.152.1")
    if version is None:
        plan.notes.append("codex not found on PATH: installing for current Codex (hooks); pass --codex-version "
                          "to choose for another")
        version = (999, 0, 0)
    home = _codex_home(scope, cwd)
    run = base + ["hooks", "run", "--agent", "codex"]
    if version < CODEX_HOOKS_SINCE:
        notify = run + ["notify"]
        plan.changes.append(_edit_toml(home / "config.toml", lambda doc: _toml_set_notify(doc, notify)))
        plan.notes.append(f"Codex {'.'.join(map(str, version))} has no hooks: installed as its notify program "
                          f"(ingests the rollout after every turn)")
        return _settled(plan)
    wanted = [Wanted("Stop", _shell(run + ["Stop"]))]
    if version >= CODEX_COMPACT_HOOKS_SINCE:
        wanted += [Wanted("PreCompact", _shell(run + ["PreCompact"])),
                   Wanted("SessionStart", _shell(run + ["SessionStart"]), matcher="compact", timeout=15)]
    if recall_on_prompt:
        wanted.append(Wanted("UserPromptSubmit", _shell(run + ["UserPromptSubmit", "--min-score", str(min_score)]),
                             timeout=10))
    plan.changes.append(_edit_json(home / "hooks.json", lambda doc: add_hooks(doc, wanted, ours("codex"))))
    flag = "hooks" if version >= CODEX_HOOKS_KEY_RENAMED else "codex_hooks"
    plan.changes.append(_edit_toml(home / "config.toml", lambda doc: _toml_enable_feature(doc, flag, plan)))
    plan.notes.append("Codex asks you to trust new hooks once: open /hooks in Codex to review them")
    return _settled(plan)


def _settled(plan: Plan) -> Plan:
    plan.changes = [c for c in plan.changes if c.changed]
    if not plan.changes:
        plan.notes.append("already installed: nothing to change")
    return plan


# -- editing the files ---------------------------------------------------------------------

def _edit_json(path: Path, edit, removing: bool = False) -> FileChange:
    before = read_text(path)
    if before is None and removing:
        return FileChange(path, None, None)
    doc = JsonText(before or "", str(path))
    after = edit(doc).text
    if before is None and not after.strip("{}\n "):
        return FileChange(path, None, None)
    if removing and after == doc.text:
        return FileChange(path, before, before)       # nothing of ours in it: the user's file, left alone
    if removing and not after.strip("{}\n\r\t "):
        after = None                                   # it held nothing but ours: gone with them
    if removing and before != after:
        after = _as_before_install(path, after, _same_json)
    return FileChange(path, before, after)


def _toml_doc(path: Path, text: str):
    import tomlkit
    from tomlkit.exceptions import ParseError
    try:
        return tomlkit.parse(text)
    except ParseError as exc:
        raise TraceError(f"{path}:{exc.line}: not valid TOML ({str(exc).split(' at line')[0]}); fix the file "
                         f"or move it aside, then run the command again (nothing was written)") from None


def _edit_toml(path: Path, edit) -> FileChange:
    import tomlkit
    before = read_text(path)
    doc = _toml_doc(path, before or "")
    if not edit(doc):
        return FileChange(path, before, before)
    after = _own_line_endings(before, tomlkit.dumps(doc))
    if edit is _toml_remove_ours and after.endswith("\n\n"):
        after = after[:-1]                 # the blank line tomlkit set before a table we added and removed
    if before is None and after and not after.endswith("\n"):
        after += "\n"
    after = None if not after.strip() else after
    if edit is _toml_remove_ours:
        after = _as_before_install(path, after, _same_toml)
    return FileChange(path, before, after)


def _own_line_endings(before: str | None, after: str) -> str:
    """tomlkit writes the lines it adds with LF: in a file whose every line
    ends CRLF, they end CRLF too."""
    if before and "\r\n" in before and before.count("\n") == before.count("\r\n"):
        return re.sub(r"(?<!\r)\n", "\r\n", after)
    return after


def _as_before_install(path: Path, after: str | None, same) -> str | None:
    """What uninstall leaves: the bytes the file had before install (its
    backup) when they say the same as `after`. An edit cannot know the
    blank line tomlkit set beside what it added, or the empty "hooks"
    object the user had, so without this the round trip would not give
    the file back byte for byte."""
    try:
        old = read_text(path.with_name(path.name + BACKUP_SUFFIX))
        return old if old is not None and same(old, after) else after
    except (TraceError, ValueError):       # an unreadable backup: the edit's own result stands
        return after


def _same_json(a: str | None, b: str | None) -> bool:
    """Whether two settings texts say the same to the agent: an empty
    event list, and an empty `hooks` object, say nothing (uninstall
    prunes the lists and object ours alone filled, as the user may have
    left them empty)."""
    def meaning(text):
        value = json.loads(text) if text and text.strip() else {}
        hooks = value.get("hooks") if isinstance(value, dict) else None
        if isinstance(hooks, dict):
            hooks = {event: groups for event, groups in hooks.items() if groups != []}
            value = {**value, "hooks": hooks} if hooks else {k: v for k, v in value.items() if k != "hooks"}
        return value
    return meaning(a) == meaning(b)


def _same_toml(a: str | None, b: str | None) -> bool:
    import tomlkit
    return tomlkit.parse(a or "").unwrap() == tomlkit.parse(b or "").unwrap()


def _marked(item) -> bool:
    trivia = getattr(item, "trivia", None)
    return bool(trivia and TOML_MARK in (trivia.comment or ""))


def _toml_enable_feature(doc, flag: str, plan: Plan) -> bool:
    import tomlkit
    features = doc.get("features")
    if features is not None and not hasattr(features, "add"):
        raise TraceError("config.toml: `features` is not a table; nothing was written")
    for key in ("hooks", "codex_hooks"):
        if features is not None and key in features:
            if features[key] is False:
                plan.notes.append(f"[features] {key} = false in config.toml: Codex will not run hooks until "
                                  f"you set it to true (left as you set it)")
            return False
    if isinstance(features, tomlkit.items.InlineTable):
        # an inline table holds no comments, so a key added to it could not carry the mark uninstall
        # goes by: it would stay behind
        plan.notes.append(f"config.toml: `features` is an inline table, which TRACE does not edit: add "
                          f"`{flag} = true` to it yourself, or Codex will not run the hooks")
        return False
    value = tomlkit.item(True)
    value.comment(TOML_MARK)
    if features is None:
        table = tomlkit.table()
        table.add(flag, value)
        table.comment(TOML_MARK)
        doc.add("features", table)
    else:
        features.add(flag, value)
    return True


def _toml_set_notify(doc, argv: list[str]) -> bool:
    import tomlkit
    current = doc.get("notify")
    if current is not None:
        if list(current) == argv:
            return False
        if not ours("codex")(" ".join(map(str, current))):
            raise TraceError(f"config.toml already sets notify = {list(current)}; Codex runs one notify program "
                             f"only, so TRACE will not replace it (nothing was written)")
        doc.remove("notify")
    value = tomlkit.item(argv)
    value.comment(TOML_MARK)
    doc.add("notify", value)               # tomlkit keeps a top-level key above the tables
    return True


def _toml_remove_ours(doc) -> bool:
    changed = False
    if "notify" in doc and _marked(doc.item("notify")):
        doc.remove("notify")
        changed = True
    features = doc.get("features")
    if features is not None and hasattr(features, "items"):
        for key in [k for k in list(features.keys()) if _marked(features.item(k))]:
            features.remove(key)
            changed = True
        if changed and not features and _marked(features):
            doc.remove("features")
    return changed
