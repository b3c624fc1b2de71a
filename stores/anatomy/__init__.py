"""The anatomy records on disk (`anatomy/`, one file per session) and the
functions behind `trace anatomy record|replay|diff` and the records that
`trace ingest` and `trace context` write. The decomposition itself is pure
(reducers/anatomy/)."""
