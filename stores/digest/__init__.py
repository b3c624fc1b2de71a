"""`trace digest` as a function: the bounded digest written where asked,
suggest-only.

    from stores.digest import render_store_digest, write_digest
    render_store_digest(store, max_lines=80)           # -> reducers.digest.Digest (nothing written)
    write_digest(store, "docs/memory.md", max_lines=80)

A page (the digest, or a detail page under `digest.d/` beside it) that was
edited by hand since TRACE last wrote it is never overwritten: the new
version goes to `PAGE.proposed` and the result carries a unified diff.
What TRACE last wrote to each page is remembered by its sha256 in the
store (`digest-pages.json`). Without --out the digest is only returned
(printed), and its detail pages go to the store's own `digest.d/`."""
from __future__ import annotations

import difflib
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from reducers.digest import Digest, render_digest
from stores.api.result import Result
from stores.errors import TraceError, UsageError

DEFAULT_MAX_LINES = 80
RECENT_EPISODES = 100
PAGES = "digest-pages.json"
DETAIL_DIR = "digest.d"


@dataclass
class DigestResult(Result):
    digest: Digest
    path: Path | None = None
    written: list[str] = field(default_factory=list)
    proposed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    diffs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"out": str(self.path) if self.path else None, "lines": self.digest.lines,
                "facts": self.digest.facts, "episodes": self.digest.episodes, "demoted": len(self.digest.demoted),
                "written": self.written, "proposed": self.proposed, "removed": self.removed}


def render_store_digest(store, max_lines: int = DEFAULT_MAX_LINES, link=None) -> Digest:
    """The digest of the facts and episodes the last sweep left (pure
    rendering; nothing is written)."""
    from stores.sweep import episodes, facts
    store.require()
    recent = episodes(store)[-RECENT_EPISODES:]
    try:
        if link is None:
            return render_digest(facts(store), recent, max_lines)
        return render_digest(facts(store), recent, max_lines, link)
    except ValueError as exc:
        raise UsageError(f"--max-lines {max_lines}: {exc}") from None


def write_digest(store, out: str | os.PathLike | None, max_lines: int = DEFAULT_MAX_LINES) -> DigestResult:
    if out is None:
        details_dir = store.dir / DETAIL_DIR
        digest = render_store_digest(store, max_lines, link=lambda topic: str(details_dir / f"{topic}.md"))
        result = DigestResult(digest)
        _write_details(store, result, details_dir)
        return result
    path = Path(out).expanduser().absolute()
    if path.is_dir():
        raise TraceError(f"--out {path} is a directory; name the file to write, e.g. {path / 'MEMORY.md'}")
    if path.exists() and not path.is_file():      # /dev/stdout, /dev/null, a FIFO: no page to keep, no place for digest.d
        raise TraceError(f"--out {path} is not a regular file (a device, a pipe or a socket); TRACE keeps the page "
                         f"and its digest.d/ beside it: name a file, or leave out --out (or give --out -) to print it")
    if not path.parent.is_dir():
        raise TraceError(f"--out {path}: the directory {path.parent} does not exist; create it or choose another path")
    digest = render_store_digest(store, max_lines)
    result = DigestResult(digest, path=path)
    _write_page(store, result, path, digest.text)
    _write_details(store, result, path.parent / DETAIL_DIR)
    return result


def _write_details(store, result: DigestResult, details_dir: Path) -> None:
    wanted = {details_dir / f"{topic}.md": text for topic, text in result.digest.details.items()}
    if wanted:
        details_dir.mkdir(mode=0o700, exist_ok=True)
    for page, text in wanted.items():
        _write_page(store, result, page, text)
    # a page no longer linked goes, unless someone edited it
    pages = _pages(store)
    for stale in sorted(details_dir.glob("*.md")) if details_dir.is_dir() else ():
        if stale not in wanted and pages.get(str(stale)) == _sha(stale.read_bytes()):
            stale.unlink()
            pages.pop(str(stale), None)
            result.removed.append(str(stale))
    _save_pages(store, pages)


def _write_page(store, result: DigestResult, page: Path, text: str) -> None:
    data = text.encode("utf-8")
    pages = _pages(store)
    if page.exists():
        current = page.read_bytes()
        if current == data:
            return
        if pages.get(str(page)) != _sha(current):
            proposed = page.with_name(page.name + ".proposed")
            _atomic(proposed, data)
            result.proposed.append(str(proposed))
            result.diffs.append("".join(difflib.unified_diff(
                current.decode("utf-8", "replace").splitlines(keepends=True), text.splitlines(keepends=True),
                fromfile=str(page), tofile=str(proposed))))
            return
    _atomic(page, data)
    pages[str(page)] = _sha(data)
    _save_pages(store, pages)
    result.written.append(str(page))


def _atomic(path: Path, data: bytes) -> None:
    from stores.sweep.files import write_atomic
    write_atomic(path, [data])


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _pages(store) -> dict[str, str]:
    try:
        data = orjson.loads((store.dir / PAGES).read_bytes())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_pages(store, pages: dict[str, str]) -> None:
    from stores.sweep.files import write_atomic
    write_atomic(store.dir / PAGES, [orjson.dumps(pages, option=orjson.OPT_SORT_KEYS)])
