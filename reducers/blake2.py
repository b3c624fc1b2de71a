"""BLAKE2b for the digests TRACE keys things by (token counts kept per text,
speaker and session keys in the full-text index), taken from CPython's own
module: `import hashlib` loads OpenSSL (~5 ms of every cold command)."""
try:
    from _blake2 import blake2b
except ImportError:              # a Python built without CPython's private module
    from hashlib import blake2b

__all__ = ["blake2b"]
