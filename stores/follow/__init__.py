"""Live follow: tail growing transcripts and ingest what they gain."""
