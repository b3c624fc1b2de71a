"""The record itself: the append-only, segment-rotated event log, the one
way into it (the appender, under the single-writer lock), event ids, reading
events back, and the content-addressed artifact store that holds large tool
outputs whole. Everything else in a store can be rebuilt from these."""
