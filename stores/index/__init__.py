"""The derived indexes over the log: the full-text index (Tantivy, built by a
child process), the vector index (hnswlib) and the embedders that feed it.
Each can be rebuilt from the log at any time; none is the record."""
