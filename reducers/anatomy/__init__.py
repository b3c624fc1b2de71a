"""Context anatomy (paper 9.6, Annex A.4): what one model call had in its
context, decomposed into slices, as one record per call.

Pure functions only: a request body or a transcript's drafts in, records
out (decompose, slices, usage, windows, topics, transcript_calls), and the
views replay builds from records (timeline, report_html). Where records
are kept is stores/anatomy/."""
