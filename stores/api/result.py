"""The base of every result the Python API returns: `.to_dict()`
(JSON-ready values), `.to_json()` (that dict as a JSON string) and
`.as_json()` (the older name of `.to_dict()`). A module of its own, so a
result type imports only this, not every other command's results."""
from __future__ import annotations

from dataclasses import asdict

import orjson


class Result:
    """The base of every API result."""

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return orjson.dumps(self.to_dict(), option=orjson.OPT_NON_STR_KEYS, default=str).decode()

    def as_json(self) -> dict:
        return self.to_dict()


class Listing(Result):
    """A result that is a list of things (`items` names the field): len() and
    iteration go over them."""
    items = ""

    def __len__(self) -> int:
        return len(getattr(self, self.items))

    def __iter__(self):
        return iter(getattr(self, self.items))
