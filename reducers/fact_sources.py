"""Facts from what agents do, not say: tool calls and their results.

- env assignments in commands (`PORT=8080 npm start`, `export API_URL=…`),
  `git config`, package installs and removals;
- config files written, edited or patched (`.env*`, `.ini`, `.toml`,
  `.cfg`, `.conf`, `.properties`, YAML): the assignments a change adds, and
  a key an edit or diff takes out (an explicit removal: a DELETE candidate);
  a diff in tool output (`git diff`) the same way; a config file read back,
  by a read tool or printed by a shell (`cat .env`);
- todo lists (TodoWrite, update_plan …): one task fact per item, its status;
- structured update tools of function-calling agents (`update_reservation_
  flights {reservation_id, cabin …}`): the entity's fields; a `cancel_…` /
  `delete_…` of an entity removes its facts;
- a question tool's answers (`"Which approach…?"="A"`): decisions.

A call's facts count once its result says it worked: they wait for the
result (a failed edit changed nothing) in a bounded table of pending calls.
`FactExtractor` is the whole rule-based extractor: prose (fact_rules) plus
these, one event at a time, pure and deterministic."""
from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import PurePosixPath

import orjson

from reducers.fact_keys import FactCandidate, clean, clip, good_value, norm_key, source_time_known
from reducers.fact_rules import SPEAKER_WEIGHT, TYPE_WEIGHT, prose_facts
from reducers.tasks import TODO_TOOLS
from reducers.tool_inputs import command_text, parsed_input, path_argument, printed_file, todo_items

NAME = "rules"
VERSION = 1
MAX_PENDING = 512
MAX_FILE_CHARS = 200_000
_DONE = frozenset({"completed", "done"})
_ENV_ASSIGN = re.compile(r"(?:^|[\s;&|(])(?:export\s+)?(?P<k>[A-Z][A-Z0-9_]{1,63})=(?P<v>\"[^\"\n]*\"|'[^'\n]*'|[^\s;&|)]+)")
_GIT_CONFIG = re.compile(r"\bgit\s+config\s+(?:--(?:global|local|system)\s+)?(?P<k>[a-z][\w.-]*\.[\w.-]+)\s+"
                         r"(?P<v>\"[^\"\n]+\"|'[^'\n]+'|[^\s;&|]+)")
_INSTALL = re.compile(r"\b(?:(?:npm|pnpm|yarn|bun)\s+(?:add|install|i)|pip3?\s+install|uv\s+(?:add|pip\s+install)|"
                      r"poetry\s+add|cargo\s+add|go\s+get|gem\s+install)\s+(?P<pkgs>[^;&|\n]+)")
_UNINSTALL = re.compile(r"\b(?:(?:npm|pnpm|yarn|bun)\s+(?:remove|uninstall|rm)|pip3?\s+uninstall(?:\s+-y)?|"
                        r"uv\s+remove|poetry\s+remove|cargo\s+remove)\s+(?P<pkgs>[^;&|\n]+)")
_PKG = re.compile(r"^(?P<name>@?[A-Za-z0-9][\w.\-/]*?)(?:[@=<>~^]=?(?P<ver>[\w.\-*^~]+))?$")
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$")
_DIFF_FILE = re.compile(r"^\+\+\+ (?:b/)?(.+?)\s*$")
_READ_PREFIX = re.compile(r"^\s*\d+(?:→|\t|:\s)")
_QA = re.compile(r"\"(?P<q>[^\"]{5,300})\"\s*=\s*\"(?P<a>[^\"]{1,300})\"")
_QUESTION_LEAD = re.compile(r"^(?:which|what|how|where|when|who|should|do|does|would|will|can|could|is|are)\b"
                            r"(?:\s+(?:exactly|else|kind of|type of))?"
                            r"(?:\s+(?:should|do|does|would|will|can|could|is|are))?(?:\s+(?:we|you|i))?\s+", re.I)
_QUESTION_TAIL = re.compile(r"(?<!\s)\s+(?:would you like|do you (?:want|prefer)|should (?:we|i)|you (?:want|prefer)|"
                            r"to use|when|for|relative to|is preferred|(?:be|is|are)\s+\w+ed)\b.*$", re.I)
_UPDATE_TOOL = re.compile(r"^(?:set|update|change|modify|edit|configure|switch|upgrade|downgrade)_(?P<what>[a-z]\w*)$")
_REMOVE_TOOL = re.compile(r"^(?:cancel|delete|remove|drop)_(?P<what>[a-z]\w*)$")
_ERROR_TEXT = re.compile(r"^\s*(?:error|exception|traceback|failed)\b", re.I)     # formats without an error flag
_CONTENT_KEYS = ("content", "file_text", "new_string", "new_str", "contents", "text")
_OLD_KEYS = ("old_string", "old_str")
_TRANSIENT_ENV = frozenset({"PATH", "PWD", "HOME", "TERM", "SHELL", "USER", "CI", "FORCE_COLOR", "NO_COLOR",
                            "PAGER", "GIT_PAGER", "LANG", "LC_ALL", "TMPDIR", "DEBIAN_FRONTEND"})


def config_kind(path: str) -> str | None:
    """"env", "ini" or "yaml" for a file whose lines are settings, else None."""
    name = PurePosixPath(path.strip().strip("'\"")).name.lower()
    if name.startswith(".env") or name.endswith((".env", ".envrc")) or name == "environment":
        return "env"
    if name.endswith((".ini", ".toml", ".cfg", ".conf", ".properties")) or name in (".npmrc", ".editorconfig"):
        return "ini"
    if name.endswith((".yaml", ".yml")):
        return "yaml"
    return None


def assignments(text: str, kind: str) -> dict[str, str]:
    """KEY -> value of a config file's text (comments and blanks skipped;
    YAML keys as dotted paths of their nesting)."""
    out: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    section = ""
    for raw in text[:MAX_FILE_CHARS].splitlines():
        line = _READ_PREFIX.sub("", raw, count=1).rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";", "//")):
            continue
        if kind == "env":
            m = re.match(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*)$", stripped)
            if m:
                out[m.group(1)] = _unquote(_strip_comment(m.group(2)))
        elif kind == "ini":
            if stripped.startswith("[") and stripped.endswith("]"):
                section = stripped.strip("[] ")
                continue
            m = re.match(r"^([A-Za-z_][\w.\-]*)\s*[=:]\s*(.*)$", stripped)
            if m:
                key = f"{section}.{m.group(1)}" if section else m.group(1)
                out[key] = _unquote(_strip_comment(m.group(2)))
        else:
            m = re.match(r"^(\s*)(?:- )?([A-Za-z_][\w\-]*):(?:\s+(.*))?$", line)
            if not m:
                continue
            indent = len(m.group(1))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            value = (m.group(3) or "").strip()
            if not value or value[0] in "|>&*{[":
                stack.append((indent, m.group(2)))
                continue
            out[".".join([k for _, k in stack] + [m.group(2)])] = _unquote(_strip_comment(value))
    return {k: v for k, v in out.items() if v != ""}


def _strip_comment(value: str) -> str:
    if value[:1] in "\"'":
        return value
    return re.split(r"\s+#", value, maxsplit=1)[0].strip()


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


class FactExtractor:
    """The rule-based extractor: events in seq order in, fact candidates out."""

    name = NAME
    version = VERSION

    def __init__(self, saved: dict | None = None) -> None:
        self.pending: OrderedDict[str, tuple[str, list[FactCandidate], str | None]] = OrderedDict()
        for call_id, (name, facts, read_path) in ((saved or {}).get("pending") or {}).items():
            self.pending[call_id] = (name, [FactCandidate.from_state(f) for f in facts], read_path)

    def state(self) -> dict:
        """Calls still waiting for their result (the next sweep resumes them)."""
        return {"pending": {cid: [name, [f.as_state() for f in facts], read_path]
                            for cid, (name, facts, read_path) in self.pending.items()}}

    def facts(self, event: dict) -> list[FactCandidate]:
        kind = event.get("kind")
        meta = event.get("meta") or {}
        if kind in ("user", "assistant"):
            if meta.get("injected") or meta.get("thinking") or meta.get("inherited"):
                return []
            found = prose_facts(event.get("text") or "", kind)
        elif kind == "note":
            found = _note_facts(event)
        elif kind == "tool_call":
            found = self._call(event.get("tool") or {})
        elif kind == "tool_result":
            found = self._result(event.get("tool") or {}, event.get("text") or "")
        else:
            return []
        source = {"id": event.get("id"), "seq": event.get("seq"), "session_id": event.get("session_id"),
                  "ts": event.get("ts") or event.get("ingested_at"), "dated": source_time_known(event), "kind": kind}
        for f in found:
            f.source = source
        return found

    # -- calls -------------------------------------------------------------

    def _call(self, tool: dict) -> list[FactCandidate]:
        name = str(tool.get("name") or "")
        data = parsed_input(tool.get("input"))
        now: list[FactCandidate] = []
        later: list[FactCandidate] = []
        read_path = None
        if name in TODO_TOOLS and isinstance(data, dict):
            now.extend(_todo_facts(data))
        if isinstance(data, dict):
            later.extend(_structured_update(name, data))
            path = path_argument(data)
            kind = config_kind(path) if path else None
            if kind and any(isinstance(data.get(k), str) for k in _CONTENT_KEYS + ("edits",)):
                later.extend(_file_change(path, kind, data))
            elif kind:
                read_path = path              # a read: its result shows the file
        command = command_text(data)
        if command:
            later.extend(_command_facts(command))
            printed = None if read_path else printed_file(command)
            if printed and config_kind(printed):
                read_path = printed
        call_id = tool.get("call_id")
        if not call_id:
            return now + later
        if later or read_path or name == "AskUserQuestion":
            self.pending[str(call_id)] = (name, later, read_path)
            while len(self.pending) > MAX_PENDING:
                self.pending.popitem(last=False)
        return now

    def _result(self, tool: dict, text: str) -> list[FactCandidate]:
        name, waiting, read_path = self.pending.pop(str(tool.get("call_id")), ("", [], None))
        if tool.get("is_error") or _ERROR_TEXT.match(text):
            return []
        out = list(waiting)
        if read_path:
            out.extend(_file_facts(read_path, config_kind(read_path), assignments(text, config_kind(read_path)), {},
                                   "file-read", 0.6))
        if name == "AskUserQuestion" or text.startswith("User has answered"):
            out.extend(_answers(text))
        if "\n+++ " in text or text.startswith("diff --git"):
            out.extend(_diff_facts(text, "diff-output"))
        return out


# -- the sources -----------------------------------------------------------------

def _note_facts(event: dict) -> list[FactCandidate]:
    text = event.get("text") or ""
    category = str(((event.get("meta") or {}).get("note") or {}).get("category") or "")
    found = prose_facts(text, "note")
    fact_type = {"decision": "decision", "preference": "preference", "correction": "decision",
                 "task": "task_state"}.get(category)
    if found or fact_type is None:
        return found
    # A note is an explicit "remember this": kept as a fact even when no rule reads its wording.
    head = " ".join(norm_key(text).split()[:5])
    value = clip(text, 120)
    if not head or not good_value(value):
        return []
    return [FactCandidate(type=fact_type, key=f"note: {head}", value=value, text=clip(text),
                          importance=round(TYPE_WEIGHT[fact_type] * 1.1, 3), label=f"note: {head}", rule="note")]


def _todo_facts(data: dict) -> list[FactCandidate]:
    out = []
    for raw, status in todo_items(data) or ():
        text, status = clean(raw), status or "pending"
        if not text or len(text) > 300:
            continue
        key = "task: " + " ".join(norm_key(text).split()[:12])
        weight = 0.2 if status in _DONE else TYPE_WEIGHT["task_state"]
        out.append(FactCandidate(type="task_state", key=key, value=status, text=clip(text),
                                 importance=round(weight * SPEAKER_WEIGHT["tool"], 3), label=clip(text, 100),
                                 rule="todo"))
    return out


def _structured_update(name: str, data: dict) -> list[FactCandidate]:
    lowered = name.lower()
    update, remove = _UPDATE_TOOL.match(lowered), _REMOVE_TOOL.match(lowered)
    if not (update or remove):
        return []
    what = (update or remove).group("what")
    ids = [(k, v) for k, v in data.items() if (k == "id" or k.endswith("_id")) and isinstance(v, (str, int))]
    if not ids:
        return []
    id_key, id_value = next(((k, v) for k, v in ids if k.split("_id")[0] in what), ids[0])
    entity = f"{id_key.removesuffix('_id').removesuffix('id') or what.split('_')[0]} {id_value}".strip()
    text = clip(f"{name} {orjson.dumps(data, default=str).decode()}")
    if remove:
        return [FactCandidate(type="config", key=norm_key(entity), value="removed", text=text, importance=0.5,
                              label=entity, delete=True, prefix=True, rule="tool-remove")]
    out = []
    for field, value in data.items():
        if field == id_key or field.endswith("_id") or field in ("id", "reason", "summary"):
            continue
        shown = _scalar(value)
        if shown is None or not good_value(shown):
            continue
        out.append(FactCandidate(type="config", key=norm_key(f"{entity} {field}"), value=shown, text=text,
                                 importance=round(TYPE_WEIGHT["config"] * SPEAKER_WEIGHT["tool"], 3),
                                 label=f"{entity} {field}", rule="tool-update"))
    return out


def _scalar(value) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        parts = [" ".join(str(x) for x in v.values() if isinstance(x, (str, int, float))) for v in value[:6]]
        return "; ".join(p for p in parts if p)[:120] or None
    if isinstance(value, list) and value and all(isinstance(v, (str, int, float)) for v in value):
        return ", ".join(str(v) for v in value[:8])[:120]
    return None


def _file_change(path: str, kind: str, data: dict) -> list[FactCandidate]:
    new_text = next((data[k] for k in _CONTENT_KEYS if isinstance(data.get(k), str)), "")
    old_text = next((data[k] for k in _OLD_KEYS if isinstance(data.get(k), str)), "")
    for edit in data.get("edits") or ():
        if isinstance(edit, dict):
            new_text += "\n" + str(edit.get("new_string") or "")
            old_text += "\n" + str(edit.get("old_string") or "")
    return _file_facts(path, kind, assignments(new_text, kind), assignments(old_text, kind), "file-edit", 0.8)


def _file_facts(path: str, kind: str | None, new: dict[str, str], old: dict[str, str], rule: str,
                weight: float) -> list[FactCandidate]:
    if kind is None:
        return []
    out = []
    name = PurePosixPath(path.strip()).name
    for k, v in new.items():
        if old.get(k) == v:
            continue
        key = _config_key(name, kind, k)
        if good_value(v):
            out.append(FactCandidate(type="config", key=key, value=v, text=clip(f"{path}: {k}={v}"),
                                     importance=round(TYPE_WEIGHT["config"] * weight, 3), label=k,
                                     replaces=old.get(k), rule=rule))
    for k in old.keys() - new.keys():
        out.append(FactCandidate(type="config", key=_config_key(name, kind, k), value="removed",
                                 text=clip(f"{path}: {k} removed"), importance=round(TYPE_WEIGHT["config"] * weight, 3),
                                 label=k, delete=True, rule=rule))
    return out


def _config_key(file_name: str, kind: str, key: str) -> str:
    """Env keys and compound keys (`max_conns`, `server.port`) are global:
    the setting a chat names is the one in the file. A bare word (`name`,
    `version`) means little without its file, so it is named with it."""
    if kind == "env" or any(c in key for c in "_.-"):
        return norm_key(key)
    return norm_key(f"{file_name} {key}")


def _diff_facts(text: str, rule: str) -> list[FactCandidate]:
    """A unified diff or an apply_patch body: per config file, the
    assignments its + lines add and those its - lines take away."""
    out: list[FactCandidate] = []
    path, kind, added, removed = None, None, [], []

    def flush():
        if path and kind:
            out.extend(_file_facts(path, kind, assignments("\n".join(added), kind),
                                   assignments("\n".join(removed), kind), rule, 0.8))

    for line in text[:MAX_FILE_CHARS].splitlines():
        patch, diff = _PATCH_FILE.match(line), _DIFF_FILE.match(line)
        if patch or diff:
            flush()
            path = patch.group(2).strip() if patch else diff.group(1)
            kind, added, removed = config_kind(path), [], []
            if patch and patch.group(1) == "Delete":
                kind = None
        elif line.startswith("+") and not line.startswith("+++"):
            added.append(line[1:])
        elif line.startswith("-") and not line.startswith("---"):
            removed.append(line[1:])
    flush()
    return out


def _command_facts(command: str) -> list[FactCandidate]:
    out = []
    if "*** Begin Patch" in command or "\n+++ " in command:
        out.extend(_diff_facts(command, "patch"))
        command = command.split("\n", 1)[0]
    for m in _ENV_ASSIGN.finditer(command[:4000]):
        k, v = m.group("k"), _unquote(m.group("v"))
        if k in _TRANSIENT_ENV or not good_value(v) or v.startswith("$"):
            continue
        exported = command[max(0, m.start() - 1):m.start("k")].strip().endswith("export")
        out.append(FactCandidate(type="config", key=norm_key(k), value=v, text=clip(command),
                                 importance=0.55 if exported else 0.45, label=k, rule="command-env"))
    for m in _GIT_CONFIG.finditer(command[:4000]):
        out.append(FactCandidate(type="config", key=norm_key(f"git {m.group('k')}"), value=_unquote(m.group("v")),
                                 text=clip(command), importance=0.5, label=f"git {m.group('k')}", rule="git-config"))
    for pattern, delete in ((_INSTALL, False), (_UNINSTALL, True)):
        for m in pattern.finditer(command[:4000]):
            for token in m.group("pkgs").split():
                if token.startswith("-"):
                    continue
                pkg = _PKG.match(token.strip("'\""))
                if not pkg or len(token) > 80:
                    break
                value = "removed" if delete else (pkg.group("ver") or "added")
                out.append(FactCandidate(type="implementation", key=norm_key(f"dependency {pkg.group('name')}"),
                                         value=value, text=clip(command), importance=0.45,
                                         label=f"dependency {pkg.group('name')}", delete=delete, rule="package"))
    return out


def _answers(text: str) -> list[FactCandidate]:
    out = []
    for m in _QA.finditer(text[:8000]):
        question = m.group("q").rstrip("?").strip()
        subject = _QUESTION_TAIL.sub("", _QUESTION_LEAD.sub("", question))
        key = norm_key(subject)
        if not key or len(key.split()) > 8:
            continue
        out.append(FactCandidate(type="decision", key=key, value=clip(m.group("a"), 120), text=clip(m.group(0)),
                                 importance=round(TYPE_WEIGHT["decision"], 3), label=subject, rule="answer"))
    return out
