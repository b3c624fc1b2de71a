"""The directories under a transcript folder, as `trace ingest DIR` and
`trace ingest --follow DIR` walk them.

A symlink to a directory is descended, as the directory it names: agents'
session folders are often links (a projects folder moved to another disk,
a workspace shared between machines), and a link no one follows would be
a session nobody is told was skipped. Each real directory is walked once,
under the first path (in sorted order) that reaches it, so a link back to
an ancestor (a cycle) or a second link to the same folder adds nothing;
a link out of the tree is followed like any other, once."""
from __future__ import annotations

import os
from typing import Callable, Iterator


def walk_tree(top: str | os.PathLike, onerror: Callable[[OSError], None] | None = None
              ) -> Iterator[tuple[str, list[str]]]:
    """(directory, its file names sorted) for `top` and every directory
    under it, links to directories descended once per real directory."""
    seen = {os.path.realpath(top)}
    for root, dirs, files in os.walk(top, onerror=onerror, followlinks=True):
        dirs.sort()
        kept = []
        for name in dirs:
            real = os.path.realpath(os.path.join(root, name))
            if real not in seen:
                seen.add(real)
                kept.append(name)
        dirs[:] = kept
        yield root, sorted(files)
