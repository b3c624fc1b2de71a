"""Working state (continuity spec, Tier 1): what a session is doing right
now, kept up to date by a deterministic fold over its events — no model.

    state = WorkingState()
    for event in session_events: fold(state, event)
    render(state)          # the text of a `task_state` event

What each field comes from:
- current task: the latest substantive user request (harness-written lines,
  slash commands, "ok"/"thanks" and interruptions are not requests; an IDE
  preamble's "## My request …" section is the request);
- task chain / completed: the latest todo list an agent wrote (TodoWrite,
  update_plan …) split by status; without one, the recent requests; a
  `git commit -m …` that succeeded is a completed step too;
- open files: paths in tool inputs (file_path, path, notebook_path, patch
  headers; not the folder a search looks in) and an IDE preamble's active
  file and open tabs, newest first;
- recent decisions: what the user or agent decided or chose (the decision
  and preference rules of reducers/fact_rules.py), newest first;
- blockers: failed tool calls, each cleared when the same tool on the same
  target later succeeds.

A rewound conversation (Claude Code: a typed prompt whose parent record
already has a typed prompt as its child; an edited first prompt is a
second root prompt after the first one had a reply) describes its live
branch only: each item remembers the seq of the event that put it there,
and a rewind withdraws what the abandoned branch added (its requests,
files, decisions, blockers, a todo list it wrote). The log keeps that
branch; the push pack's pointer names it.

Every list is bounded, so a state stays a few hundred tokens however long
the session. The fold is a left fold over events in seq order: batching
does not change the result."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from reducers.blake2 import blake2b
from reducers.branches import tree_edge
from reducers.recall_block import strip_recalled
from reducers.tasks import TODO_TOOLS, string_items
from reducers.terms import TRIVIAL_WORDS, words
from reducers.tool_inputs import DONE_STATUSES, PATH_KEYS, command_text, parsed_input, todo_items

MAX_TEXT = 200
MAX_CHAIN = 8
MAX_REQUESTS = 5
MAX_SHOWN_PATH = 60
MAX_DONE = 8
MAX_FILES = 10
MAX_DECISIONS = 5
MAX_BLOCKERS = 5
MAX_PENDING_CALLS = 64
MAX_PROMPTS = 64                # typed prompts remembered to find a rewind's fork (by digest: the state stays small)
_DATED = ("requests", "open_files", "decisions", "completed")     # lists whose items remember their seq
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)
_DIFF_FILE = re.compile(r"^\+\+\+ b/(.+)$", re.M)
_REQUEST_HEADING = re.compile(r"^#+\s*(?:my\s+)?request\b[^\n]*\n", re.I | re.M)
_ACTIVE_FILE = re.compile(r"^#+\s*active file:\s*(\S.*)$", re.I | re.M)
_OPEN_TAB = re.compile(r"^- [^:\n]+:\s*(\S+)$", re.M)
_OPEN_TABS = re.compile(r"^#+\s*open tabs:\s*\n((?:- .*\n?)+)", re.I | re.M)
_COMMIT = re.compile(r"""git\s+commit\b[^\n]*?-\w*m\s*(?:"([^"]+)"|'([^']+)'|(\S+))""")
_THANKS = re.compile(r"^(?:thanks?(?: you)?(?: so much| very much| a lot)?|thx|ty|great|perfect|awesome|nice|cool|ok(?:ay)?)"
                     r"\b[^.!?\n]*[.!?]*\s*", re.I)
_NOT_REQUEST = ("caveat:", "[request interrupted", "<local-command", "<command-", "<system-reminder",
                "<user-prompt-submit-hook", "this session is being continued", "<environment_context",
                "<user_instructions", "# agents.md")


@dataclass
class WorkingState:
    current_task: str | None = None
    task_chain: list[str] = field(default_factory=list)
    completed: list[str] = field(default_factory=list)
    open_files: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    blockers: list[dict] = field(default_factory=list)        # {"on": tool + target, "text": …}
    requests: list[str] = field(default_factory=list)         # recent requests, the chain without a todo list
    todo: bool = False                                         # the chain comes from a todo list
    tools: bool = False                                        # the session has called a tool
    pending: dict[str, list] = field(default_factory=dict)    # call id -> [tool, target, commit message]
    seq: int = 0
    ts: str | None = None
    born: dict[tuple[str, str], int] = field(default_factory=dict)   # (list, item) -> seq of the event that added it
    todo_seq: int = 0                                          # the event that wrote the todo list
    prompts: list[list] = field(default_factory=list)         # recent typed prompts: [uuid, parent ("" a root), seq, replied]
                                                               # (uuids as digests)

    def visible(self) -> dict:
        """What a reader sees (and what decides whether the state changed)."""
        return {"current_task": self.current_task, "task_chain": list(self.task_chain),
                "completed": list(self.completed), "open_files": list(self.open_files),
                "recent_decisions": list(self.decisions), "blockers": [b["text"] for b in self.blockers]}

    def as_json(self) -> dict:
        """Everything needed to resume the fold later (kept in the event's meta)."""
        return {**self.visible(), "blocker_targets": [b["on"] for b in self.blockers],
                "requests": list(self.requests), "todo": self.todo, "tools": self.tools, "pending": dict(self.pending),
                "seq": self.seq, "ts": self.ts, "blocker_seqs": [b.get("seq", 0) for b in self.blockers],
                "born": {name: [self.born.get((name, v), 0) for v in getattr(self, name)] for name in _DATED},
                "todo_seq": self.todo_seq, "prompts": [list(p) for p in self.prompts]}

    @classmethod
    def from_json(cls, data: dict | None) -> "WorkingState":
        if not isinstance(data, dict):
            return cls()
        texts = string_items(data.get("blockers"))
        targets = string_items(data.get("blocker_targets"))
        pending = data.get("pending") if isinstance(data.get("pending"), dict) else {}
        state = cls(current_task=data.get("current_task") if isinstance(data.get("current_task"), str) else None,
                   task_chain=string_items(data.get("task_chain")), completed=string_items(data.get("completed")),
                   open_files=string_items(data.get("open_files")), decisions=string_items(data.get("recent_decisions")),
                   blockers=[{"on": targets[i] if i < len(targets) else "", "text": t} for i, t in enumerate(texts)],
                   requests=string_items(data.get("requests")), todo=bool(data.get("todo")), tools=bool(data.get("tools")),
                   pending={str(k): list(v) for k, v in pending.items() if isinstance(v, list)},
                   seq=int(data.get("seq") or 0), ts=data.get("ts"), todo_seq=_int(data.get("todo_seq")))
        # what a state kept before items remembered their seqs is taken as older than any fork
        seqs = data.get("blocker_seqs") if isinstance(data.get("blocker_seqs"), list) else []
        for b, seq in zip(state.blockers, seqs):
            b["seq"] = _int(seq)
        born = data.get("born") if isinstance(data.get("born"), dict) else {}
        for name in _DATED:
            seqs = born.get(name) if isinstance(born.get(name), list) else []
            state.born.update(((name, v), _int(seq)) for v, seq in zip(getattr(state, name), seqs))
        prompts = data.get("prompts") if isinstance(data.get("prompts"), list) else []
        state.prompts = [list(p) for p in prompts if isinstance(p, list) and len(p) == 4
                         and isinstance(p[0], str) and isinstance(p[1], str)]
        return state

    def worth_keeping(self) -> bool:
        """Only an agent's session (one that used tools) has working state
        to keep: in a plain chat the last request is all there is, and it
        is in the conversation already."""
        return self.tools and any(self.visible().values())


def fold(state: WorkingState, event: dict) -> WorkingState:
    """Advance `state` by one event (in place; returned for chaining)."""
    kind = event.get("kind")
    meta = event.get("meta") or {}
    if meta.get("sidechain") or meta.get("inherited") or meta.get("branch") == "alternate":
        return state                  # a sub-agent's, a parent's, a branch the export left: not this session's own work
    if kind not in ("user", "assistant", "tool_call", "tool_result"):
        return state
    state.seq = max(state.seq, int(event.get("seq") or 0))
    state.ts = event.get("ts") or state.ts
    _replied(state, event)
    if kind == "user":
        if not meta.get("injected"):
            _fork(state, event)
        _user(state, strip_recalled(event.get("text") or ""), meta)     # an injected block is not the request
    elif kind == "assistant" and not meta.get("thinking"):
        _decisions(state, event.get("text") or "", "assistant")
    elif kind == "tool_call":
        _call(state, event.get("tool") or {})
    elif kind == "tool_result":
        _result(state, event.get("tool") or {}, event.get("text") or "")
    return state


def render(state: WorkingState) -> str:
    """The `task_state` event's text: a compact index card."""
    lines = []
    if state.current_task:
        lines.append(f"Current task: {state.current_task}")
    if state.task_chain:
        lines.append(("Open steps: " if state.todo else "Task chain: ") + " → ".join(state.task_chain))
    if state.completed:
        lines.append("Completed: " + "; ".join(state.completed))
    if state.open_files:
        lines.append("Open files: " + ", ".join(_short_path(p) for p in state.open_files))
    if state.decisions:
        lines.append("Recent decisions: " + "; ".join(state.decisions))
    if state.blockers:
        lines.append("Blockers: " + "; ".join(b["text"] for b in state.blockers))
    return "\n".join(lines)


# -- user requests -----------------------------------------------------------

def request_text(text: str) -> str | None:
    """The request a user message makes, or None when it makes none."""
    head = text.lstrip()[:40].lower()
    if any(head.startswith(p) for p in _NOT_REQUEST):
        return None
    m = None
    for m in _REQUEST_HEADING.finditer(text):
        pass
    if m is not None:                  # an IDE preamble: the request is the last section
        text = text[m.end():]
    text = " ".join(text.split())
    text = _THANKS.sub("", text, count=1) if _THANKS.match(text) else text     # "Thanks! Now add X" asks for X
    ws = set(words(text))
    if len(ws) < 2 or ws <= TRIVIAL_WORDS or text.startswith("/"):
        return None
    return _clip(text)


def _user(state: WorkingState, text: str, meta: dict) -> None:
    if meta.get("injected"):
        return
    for path in _ide_files(text):
        _push_front(state, "open_files", path, MAX_FILES)
    request = request_text(text)
    if request is None:
        return
    state.current_task = request
    _push_front(state, "requests", request, MAX_REQUESTS)
    if not state.todo:
        state.task_chain = list(reversed(state.requests))
    _decisions(state, text, "user")


def _ide_files(text: str) -> list[str]:
    if "#" not in text[:2000]:
        return []
    head = text[:20_000]
    files = [m.group(1).strip() for m in _ACTIVE_FILE.finditer(head)]
    for block in _OPEN_TABS.finditer(head):
        files.extend(m.group(1) for m in _OPEN_TAB.finditer(block.group(1)))
    return files[:MAX_FILES][::-1]


def _decisions(state: WorkingState, text: str, speaker: str) -> None:
    from reducers.fact_rules import prose_facts      # its rules compile on first use, not on import
    for fact in prose_facts(text[:4000], speaker):
        if fact.type in ("decision", "preference"):
            _push_front(state, "decisions", _clip(fact.text, 160), MAX_DECISIONS)


# -- tools -------------------------------------------------------------------

def _call(state: WorkingState, tool: dict) -> None:
    state.tools = True
    name = str(tool.get("name") or "")
    data = parsed_input(tool.get("input"))
    if name in TODO_TOOLS:
        _todo(state, data)
    files = _paths(data)
    for path in files:
        _push_front(state, "open_files", path, MAX_FILES)
    command = command_text(data)
    call_id = tool.get("call_id")
    if call_id:
        commit = _COMMIT.search(command) if "commit" in command else None
        target = files[0] if files else " ".join(command.split()[:3])
        state.pending[str(call_id)] = [name, target, next((g for g in commit.groups() if g), "") if commit else ""]
        while len(state.pending) > MAX_PENDING_CALLS:
            state.pending.pop(next(iter(state.pending)))


def _result(state: WorkingState, tool: dict, text: str) -> None:
    call = state.pending.pop(str(tool.get("call_id")), None)
    name, target, commit = call if call else [str(tool.get("name") or "tool"), "", ""]
    on = f"{name} {target}".strip()
    if tool.get("is_error"):
        first = next((ln.strip() for ln in _plain(text).splitlines() if ln.strip()), "failed")
        state.blockers = [b for b in state.blockers if b["on"] != on]
        state.blockers.insert(0, {"on": on, "text": _clip(f"{on}: {first}", 160), "seq": state.seq})
        del state.blockers[MAX_BLOCKERS:]
        return
    state.blockers = [b for b in state.blockers if b["on"] != on]
    if commit:
        _push_front(state, "completed", _clip(f"committed: {commit}"), MAX_DONE)


def _todo(state: WorkingState, data) -> None:
    items = todo_items(data)
    if items is None:
        return
    open_steps, done = [], []
    for text, status in items:
        if text.strip():
            (done if status in DONE_STATUSES else open_steps).append(_clip(" ".join(text.split())))
    state.todo, state.todo_seq = True, state.seq
    for gone in state.completed:
        state.born.pop(("completed", gone), None)
    state.task_chain = open_steps[:MAX_CHAIN]
    state.completed = done[-MAX_DONE:]
    state.born.update((("completed", v), state.seq) for v in state.completed)


def _paths(data) -> list[str]:
    out: list[str] = []
    if isinstance(data, dict):
        searching = any(k in data for k in _SEARCH_KEYS)
        for key in PATH_KEYS:
            value = data.get(key)
            if isinstance(value, str) and _looks_like_path(value) and not (searching and _folder_like(value)):
                out.append(value)
        changes = data.get("changes")
        if isinstance(changes, list):
            out.extend(c for c in changes if isinstance(c, str) and _looks_like_path(c))
        elif isinstance(changes, dict):
            out.extend(c for c in changes if _looks_like_path(c))
    command = command_text(data)
    if "*** " in command or "+++ b/" in command:
        out.extend(m.group(1).strip() for m in _PATCH_FILE.finditer(command))
        out.extend(m.group(1).strip() for m in _DIFF_FILE.finditer(command))
    return list(dict.fromkeys(out))


# A search's `path` is where it looks (Glob, Grep, glob, grep …): a folder
# there is not a file the agent has open; a file it searches is.
_SEARCH_KEYS = ("pattern", "query", "regex", "glob", "include")


def _folder_like(path: str) -> bool:
    """No extension on its last part (`/srv/app`, `./.claude/commands`)."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return "." not in name.lstrip(".")


def _looks_like_path(value: str) -> bool:
    return 0 < len(value) <= 300 and "\n" not in value and ("/" in value or "." in value) and "*" not in value


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_TAGS = re.compile(r"</?[a-z_]+>")


def _plain(text: str) -> str:
    return _TAGS.sub("", _ANSI.sub("", text[:4000]))


def _short_path(path: str) -> str:
    """A long absolute path shown by its tail (the state's JSON keeps it whole)."""
    if len(path) <= MAX_SHOWN_PATH:
        return path
    parts = path.split("/")
    tail = parts[-1]
    for part in reversed(parts[:-1]):
        if len(part) + len(tail) + 2 > MAX_SHOWN_PATH:
            break
        tail = f"{part}/{tail}"
    return f"…/{tail}"


def _push_front(state: WorkingState, name: str, value: str, limit: int) -> None:
    items = getattr(state, name)
    if value in items:
        items.remove(value)
    items.insert(0, value)
    for gone in items[limit:]:
        state.born.pop((name, gone), None)
    del items[limit:]
    state.born[(name, value)] = state.seq


def _int(value) -> int:
    return value if type(value) is int else 0


# -- rewinds -----------------------------------------------------------------

def _edge(event: dict) -> tuple[str, str] | None:
    """(uuid, parent; "" for a root) of an event placed in its source's
    tree (reducers/branches.tree_edge), each as a short digest."""
    edge = tree_edge(event)
    if edge is None or edge[1] is None:
        return None
    uuid, parent = edge
    return _digest(uuid), _digest(parent) if parent else ""


def _digest(uuid: str) -> str:
    return blake2b(uuid.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def _replied(state: WorkingState, event: dict) -> None:
    """A remembered prompt something follows has started a branch (a root
    prompt nothing follows, as in a file whose lines all lack a parent, has not)."""
    edge = _edge(event)
    if edge is not None and edge[1]:
        for p in state.prompts:
            if p[0] == edge[1]:
                p[3] = True


def _fork(state: WorkingState, event: dict) -> None:
    """A typed prompt: when it shares its parent with an earlier typed
    prompt (for two roots: once the earlier one was replied to), the
    branch from that prompt on is abandoned and withdrawn."""
    edge = _edge(event)
    if edge is None:
        return
    uuid, parent = edge
    for p in state.prompts:
        if p[1] == parent and p[0] != uuid and p[2] < state.seq and (parent or p[3]):
            _withdraw(state, p[2])
            break
    if not any(p[0] == uuid for p in state.prompts):
        state.prompts.append([uuid, parent, state.seq, False])
        del state.prompts[:-MAX_PROMPTS]


def _withdraw(state: WorkingState, since: int) -> None:
    """Take back what events from seq `since` on added."""
    for name in _DATED:
        setattr(state, name, [v for v in getattr(state, name) if state.born.get((name, v), 0) < since])
    state.born = {k: seq for k, seq in state.born.items() if seq < since}
    state.blockers = [b for b in state.blockers if b.get("seq", 0) < since]
    state.prompts = [p for p in state.prompts if p[2] < since]
    if state.todo and state.todo_seq >= since:
        state.todo, state.todo_seq = False, 0      # the list before it is not known: the requests stand in
    if not state.todo:
        state.task_chain = list(reversed(state.requests))
    state.current_task = state.requests[0] if state.requests else None


def _clip(text: str, limit: int = MAX_TEXT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"
