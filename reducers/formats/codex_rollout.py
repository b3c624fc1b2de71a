"""What parsing one Codex rollout remembers (`Rollout`: its session, turn,
calls, and the texts waiting for their twins in the other streams), and the
drafts of conversation text every stream shares: harness text, thinking,
compaction markers."""
from __future__ import annotations

from collections import deque
from typing import Any, Iterator

from reducers.drafts import Draft, ParseContext
from reducers.formats.common import compact_json, content_digest, to_utc_iso

# Text Codex itself writes into a user-role message (its own list of
# "contextual user fragments"), matched on the start of the message.
HARNESS_PREFIXES = (
    ("<environment_context>", "environment_context"),
    ("<user_instructions>", "user_instructions"),
    ("# agents.md instructions", "agents_md"),
    ("<turn_aborted>", "turn_aborted"),
    ("<user_shell_command>", "user_shell_command"),
    ("<skill>", "skill"),
    ("<subagent_notification>", "subagent_notification"),
    ("<subagents>", "subagents"),
    ("<hook_prompt", "hook_prompt"),            # a hook's prompt (newer versions)
    ("<external_", "external_context"),         # context a client app attached (newer versions)
    ("<instructions>", "agents_md"),            # an AGENTS.md body sent without its heading
)


_TWIN_WINDOW = 64


class Rollout:
    """What parsing one file remembers: the session, the turn, the calls
    seen (id -> name) and the texts waiting for their twin."""

    def __init__(self, ctx: ParseContext):
        self.session: str | None = ctx.session
        self.session_fixed = bool(ctx.session)
        self.meta_seen = False
        self.subagent: str | None = None
        self.parent: str | None = None                # the thread that spawned this one
        self.forked_at: str | None = None             # a fork's start: older records are the parent's history
        self.history_from: int | None = None          # ordinals below this are copied from the parent
        self.thread: str | None = None                # the file's own thread id
        self.linked: set[tuple] = set()               # (thread, activity) links to sub-agents already stored
        self.model_items = False                      # a response_item was read: the model's own record
        self.model: str | None = None
        self.bare_time: str | None = None             # the envelope-less layout's latest time (its items have none)
        self.user_turns = 0
        self.opener = ""                              # digest of the record that opened the turn
        self.calls: dict[str, str | None] = {}
        self.searched: set[str] = set()               # web searches whose results were stored
        self.idless_call: str | None = None           # the open call of the id-less legacy layout
        # (channel, text) -> the streams that carried each copy stored in this
        # turn; the oldest of the last _TWIN_WINDOW copies is forgotten first
        self.twins: dict[tuple[str, str], list[set[str]]] = {}
        self.twin_order: deque[tuple[str, str]] = deque()
        self.replies: list[str] = []                  # assistant texts stored in this turn
        self.compaction_open = False                  # a compaction marker is the latest draft
        self.line, self.uuid = 0, None
        self._record: dict = {}                       # the record being read
        self._digest: str | None = None

    # A file normally holds one session_meta, first. A fork or a spawned
    # sub-agent starts its rollout with its own session_meta and then copies
    # the parent's history in — the ancestors' session_meta lines included —
    # so a later session_meta never switches the session: the file is the
    # session of its first one. (Switching would also file the copied lines
    # under the parent's id with this file's line numbers, keys that collide
    # with the parent's own rollout and would be dropped as already ingested.)
    # `codex resume` appends to the same file without a new session_meta.
    def session_meta(self, payload: dict) -> bool:
        """True when this record names the session (the file's first)."""
        sid = payload.get("id") or payload.get("session_id")
        if self.meta_seen or not isinstance(sid, str) or not sid:
            return False
        self.meta_seen = True
        self.thread = sid
        if not self.session_fixed:                    # --session overrides the file's own id
            self.session, self.session_fixed = sid, True
        source = payload.get("source")
        if isinstance(source, dict):
            agent = source.get("subagent", source.get("sub_agent"))
            if isinstance(agent, str) and agent:
                self.subagent = agent
            elif isinstance(agent, dict) and agent:
                variant = next(iter(agent))
                detail = agent[variant]
                # {"other": "guardian", "parent_thread_id": ...}: the variant's value is the label
                self.subagent = detail if variant == "other" and isinstance(detail, str) and detail else variant
                self._spawned_by(detail if isinstance(detail, dict) else agent, payload)
        if self.subagent and self.parent is None and isinstance(payload.get("parent_thread_id"), str):
            self.parent = payload["parent_thread_id"]          # newer versions also put it at the top
        start = payload.get("subagent_history_start_ordinal")
        if isinstance(start, int) and not isinstance(start, bool):
            self.history_from = start
        return True

    def _spawned_by(self, spawn: dict, payload: dict) -> None:
        """A spawned thread names its parent. A forked one (or a spawned one
        given the parent's context) starts with a copy of the parent's
        history, told apart by timestamps older than the thread itself, by
        ordinals below `subagent_history_start_ordinal`, or by items that
        name another thread (paginated rollouts)."""
        if isinstance(spawn.get("parent_thread_id"), str):
            self.parent = spawn["parent_thread_id"]
        self.forked_at = to_utc_iso(payload.get("timestamp")) or self.ts

    def _inherited(self) -> bool:
        ts = self.ts
        if self.forked_at and ts and ts < self.forked_at:
            return True
        ordinal = self._record.get("ordinal")
        if self.history_from is not None and isinstance(ordinal, int) and 0 < ordinal < self.history_from:
            return True
        payload = self._record.get("payload")
        thread = payload.get("thread_id") if isinstance(payload, dict) else None
        return isinstance(thread, str) and self.thread is not None and thread != self.thread

    def at(self, line: int, record: dict, uuid: Any) -> None:
        self.line, self._record, self._digest = line, record, None
        self.uuid = uuid if isinstance(uuid, str) and uuid else None

    @property
    def digest(self) -> str:
        """The record's digest. A line number alone is no identity when two
        rollouts share a session (--session): keys and turns also carry it.
        Worked out only for records that become drafts or open a turn (about
        half of a rollout's records do neither, and the digest of a big
        reasoning record was a third of parsing)."""
        if self._digest is None:
            self._digest = content_digest(self._record)
        return self._digest

    @property
    def ts(self) -> str | None:
        ts = self._record.get("timestamp")
        payload = self._record.get("payload")
        if ts is None and isinstance(payload, dict):
            ts = payload.get("timestamp")        # a line written without the envelope's time: the item's own
        return to_utc_iso(ts if ts is not None else self.bare_time)

    @property
    def turn(self) -> str:
        base = f"{self.session}/t{self.user_turns}"
        return f"{base}-{self.opener}" if self.opener else base

    def new_turn(self) -> None:
        self.user_turns += 1
        self.opener = self.digest
        self.twins.clear()
        self.twin_order.clear()
        self.replies.clear()

    def is_twin(self, channel: str, text: str, source: str) -> bool:
        """True when another stream ("item": response_item, "event":
        event_msg, "completed": item_completed) already stored this text in
        this turn and this stream has not matched that copy yet: each
        stream's copy is matched once (older versions write two of the three
        streams, paginated ones another two)."""
        for sources in self.twins.get((channel, text), ()):
            if source not in sources:
                sources.add(source)
                return True
        return False

    def said(self, text: str) -> bool:
        """True when an assistant text stored in this turn contains `text`."""
        return any(text in t for t in self.replies)

    def first_of_pair(self, channel: str, text: str, source: str) -> bool:
        """True when this text is to be stored: it is not the twin of one
        already stored, and now waits for its twins."""
        if self.is_twin(channel, text, source):
            return False
        key = (channel, text)
        self.twins.setdefault(key, []).append({source})
        self.twin_order.append(key)
        if len(self.twin_order) > _TWIN_WINDOW:
            old = self.twin_order.popleft()
            copies = self.twins[old]
            del copies[0]
            if not copies:
                del self.twins[old]
        if channel == "assistant":
            self.replies.append(text)
        return True

    def draft(self, kind: str, text: str, part: int = 0, *, tool: dict | None = None, meta: dict | None = None,
              by_model: bool = False, compaction: bool = False, media: list[dict] | None = None) -> Draft:
        info = dict(meta or ())
        if by_model and self.model:
            info["model"] = self.model
        if self.subagent:
            info["subagent"] = self.subagent
            if self.parent:
                info["parent_session"] = self.parent
            if self._inherited():
                info["inherited"] = True              # copied from the parent's history
        self.compaction_open = compaction
        return Draft(kind=kind, text=text, session_id=self.session, key=f"codex/{self.session}/{self.digest}/L{self.line}/{part}",
                     turn_id=self.turn, ts=self.ts, tool=tool, line=self.line, uuid=self.uuid, meta=info or None,
                     media=media or None)


def message_parts(content: Any) -> tuple[list[str], int]:
    """The text parts of a message and its image count. The `<image ...>` /
    `</image>` parts Codex wraps around an attached image are its labels,
    not text anyone wrote (Codex skips them too when it shows the message)."""
    if isinstance(content, str):
        return [content], 0
    if not isinstance(content, list):
        return [], 0
    parts, images = [], 0
    for block in content:
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype in ("input_image", "image", "image_url"):
            images += 1
        elif isinstance(block.get("text"), str):       # input_text, output_text, and any other kind with text
            text = block["text"]
            if not (text in ("<image>", "</image>") or (text.startswith("<image name=") and text.endswith(">"))):
                parts.append(text)
        elif isinstance(btype, str) and isinstance(block.get(btype), str):    # {"type": "refusal", "refusal": ...}
            parts.append(block[btype])
        else:                                          # a block of a kind not known here: kept as written
            parts.append(compact_json(block))
    return parts, images


def texts(blocks: Any) -> list[str]:
    """Readable text of summary / reasoning-content / agent-message blocks
    (encrypted blocks carry none), or of a plain string in their place."""
    if isinstance(blocks, str):
        return [blocks] if blocks else []
    if not isinstance(blocks, list):
        return []
    return [b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str) and b["text"]
            and b.get("type") != "encrypted_content"]


def image_placeholder(images: int) -> str:
    return "\n".join(["[image]"] * images)


def harness_kind(text: str) -> str | None:
    head = text.lstrip()[:40].lower()
    return next((sub for prefix, sub in HARNESS_PREFIXES if head.startswith(prefix)), None)


def harness_draft(st: Rollout, text: str, subtype: str, source: str) -> Iterator[Draft]:
    # an interrupted turn shows as the turn_aborted event and (newer
    # versions) a <turn_aborted> message: one marker, whichever came first
    twin = ("turn_aborted", "") if subtype == "turn_aborted" else ("harness", text)
    if st.first_of_pair(*twin, source):
        yield st.draft("system", text, meta={"subtype": subtype})


def user_prompt(st: Rollout, text: str, images: int, source: str, meta: dict | None,
                media: list[dict] | None) -> Iterator[Draft]:
    """The user's own prompt, stored from whichever stream carries it first;
    it opens a turn."""
    if st.is_twin("user", text, source):
        return
    st.new_turn()
    st.first_of_pair("user", text, source)
    yield st.draft("user", text or image_placeholder(images), meta=meta, media=media)


def thinking(st: Rollout, text: str) -> Draft:
    return st.draft("assistant", f"<thinking>\n{text}\n</thinking>", meta={"thinking": True}, by_model=True)


def compaction(st: Rollout, message: str | None) -> Iterator[Draft]:
    """One compaction shows up as up to three lines (a `compacted` record, a
    context_compacted event, a `compaction` item): one marker, plus the
    summary text whenever a record carries one."""
    if message:
        yield st.draft("system", message, meta={"subtype": "compacted"}, compaction=True)
    elif not st.compaction_open:
        yield st.draft("system", "[compacted]", meta={"subtype": "compacted"}, compaction=True)
