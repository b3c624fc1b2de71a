"""Reading one of the store's small JSON records (a checksum list, the
vector index's description, a context cache, overflow tries) the way every
checker needs it: a missing file is no damage, an unreadable one is."""
from __future__ import annotations

from pathlib import Path

import orjson

from stores.integrity.regular_files import read_regular


ABSENT = object()      # no content: the file is missing or unreadable (a file may hold `null`)


def read_record(path: Path) -> tuple[object, str | None]:
    """(the parsed content, None); (ABSENT, None) when the file is not
    there; (ABSENT, "cannot be read (why)") when it cannot be read or parsed."""
    try:
        return orjson.loads(read_regular(path)), None
    except FileNotFoundError:
        return ABSENT, None
    except (OSError, orjson.JSONDecodeError) as exc:
        return ABSENT, f"cannot be read ({exc})"
