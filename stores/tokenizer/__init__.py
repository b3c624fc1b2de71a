"""What the token counter (reducers/tokens.py) needs from disk: cl100k's
ranks, from a per-user cache laid out for a fast start."""
