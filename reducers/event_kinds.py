"""The kinds of event the log holds: a module of its own, so readers that
only check a kind (recall's filters, the schema) need not build Draft."""

KINDS = (
    "user", "assistant", "tool_call", "tool_result", "system", "persona",
    "task_state", "note", "marker", "artifact_ref",
)
