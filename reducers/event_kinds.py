"""The kinds of event the log holds: a module of its own, so readers that
only check a kind (recall's filters, the schema) need not build Draft."""

KINDS = (
    "user", "assistant", "tool_call", "tool_result", "system", "persona",
    "task_state", "note", "marker", "artifact_ref",
)

# A system event's subtype for what a runtime wrote about the session beside
# the conversation (Claude Code's prompt to resume with, the PR and artifact
# it linked, the worktree it entered, where it moved; written again on
# resume, kept once each): kept in the log for recall, never sent to the
# model, so neither in a call's replayed context nor in the push pack (the
# last prompt would come back as a system line).
SESSION_STATE = ("last-prompt", "pr-link", "frame-link", "worktree-state", "relocated")
