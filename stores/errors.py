"""Errors the shell maps to exit codes (DESIGN.md): each names the fix."""
from __future__ import annotations


class TraceError(Exception):
    exit_code = 1


class UsageError(TraceError):
    exit_code = 2


class NoResult(TraceError):
    exit_code = 3


class StoreLocked(TraceError):
    exit_code = 4


class IntegrityError(TraceError):
    exit_code = 5
