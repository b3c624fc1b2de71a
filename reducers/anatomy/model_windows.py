"""Context windows of models whose window is published and the same
wherever they are served, for `contextUtilPct` when no --window is given.

Matched on the model name lowercased, without a provider prefix
("openai/", "anthropic/", "models/"...) and with a date suffix allowed
("claude-sonnet-4-5-20250929", "gpt-4o-2024-08-06"). A name that matches
no row has no known window: utilisation is then left out, never guessed.
Claude Code's "[1m]" suffix names the 1M-token window."""
from __future__ import annotations

import re
from functools import lru_cache

# (pattern on the whole name, window in tokens); first match wins
_WINDOWS: tuple[tuple[str, int], ...] = (
    (r"claude-3-(?:haiku|sonnet|opus)", 200_000),
    (r"claude-3-[57]-(?:haiku|sonnet|opus)", 200_000),
    (r"claude-(?:sonnet|opus)-4(?:-[015])?", 200_000),
    (r"claude-haiku-4-5", 200_000),
    (r"claude-2(?:\.[01])?", 100_000),
    (r"gpt-4o(?:-mini)?(?:-audio-preview|-search-preview)?", 128_000),
    (r"chatgpt-4o-latest", 128_000),
    (r"gpt-4-turbo(?:-preview)?|gpt-4-\d{4}-preview", 128_000),
    (r"gpt-4\.1(?:-mini|-nano)?", 1_047_576),
    (r"gpt-4\.5-preview", 128_000),
    (r"gpt-4-32k", 32_768),
    (r"gpt-4", 8_192),
    (r"gpt-3\.5-turbo", 16_385),
    (r"gpt-5(?:\.1)?(?:-mini|-nano|-codex|-pro)?", 400_000),
    (r"o1(?:-preview)?", 200_000),
    (r"o1-mini", 128_000),
    (r"o3(?:-mini|-pro)?|o4-mini", 200_000),
    (r"gpt-oss-(?:120b|20b)", 131_072),
    (r"gemini-1\.5-pro", 2_097_152),
    (r"gemini-(?:1\.5|2\.0|2\.5)-flash(?:-lite)?(?:-preview)?", 1_048_576),
    (r"gemini-2\.5-pro(?:-preview)?", 1_048_576),
)
_DATE = r"(?:-\d{4}-?\d{2}-?\d{2}|-\d{2}-\d{2}|-\d{4}|-latest|-exp)?"
_ONE_MILLION = "[1m]"


@lru_cache(maxsize=1)
def _compiled() -> tuple[tuple[re.Pattern, int], ...]:
    # compiled on the first named model: a render (model None) never needs them
    return tuple((re.compile(f"(?:{p}){_DATE}(?:-preview)?"), w) for p, w in _WINDOWS)


@lru_cache(maxsize=256)
def known_window(model: str | None) -> int | None:
    if not isinstance(model, str) or not model.strip():
        return None
    name = model.strip().lower()
    if name.endswith(_ONE_MILLION):
        return 1_000_000
    name = name.rsplit("/", 1)[-1]
    if name.startswith("models/"):
        name = name[len("models/"):]
    for pattern, window in _compiled():
        if pattern.fullmatch(name):
            return window
    return None

