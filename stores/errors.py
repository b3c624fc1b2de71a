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
