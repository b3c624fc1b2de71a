"""Errors the shell maps to exit codes (DESIGN.md): each names the fix."""
from __future__ import annotations


class TraceError(Exception):
    exit_code = 1


class UsageError(TraceError):
    exit_code = 2


class NoResult(TraceError):
    exit_code = 3


class StoreLocked(TraceError):
    """Another process holds the store. `waited`: the seconds this call
    waited for it (None when waiting would not help); each interface says
    how to wait longer in its own terms (the CLI's --wait, a tool call
    made again later)."""
    exit_code = 4

    def __init__(self, message: str, *, waited: float | None = None):
        super().__init__(message)
        self.waited = waited


class IntegrityError(TraceError):
    exit_code = 5


def require_utf8(text: str, what: str) -> None:
    """A usage error when `text` holds a lone surrogate (bytes that were not
    UTF-8, or half of a pair passed through the Python API): nothing past
    this point could write or search it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:            # bytes read from argv (surrogateescape) are shown as the bytes they were
            shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            shown = text.encode("utf-8", "backslashreplace").decode("utf-8")
        raise UsageError(f"{what} '{shown}' is not valid UTF-8; pass text in UTF-8") from None
