"""Content-addressed, compressed storage for large tool outputs.

An artifact's id is the sha256 of its original bytes; it lives at
artifacts/<id[:2]>/<id>.gz. Writing is streaming (bounded memory for a
100 MB output) and atomic (temp file, fsync, rename). Ids are checked
against ^[0-9a-f]{64}$ before they touch a path, so no id can name a file
outside the store."""
from __future__ import annotations

import hashlib
import os
import re
import zlib
from pathlib import Path
from typing import Iterable, Iterator

from stores.errors import TraceError
from stores.paths import ensure_dir, fsync_dir

_ID = re.compile(r"^[0-9a-f]{64}$")
_LEVEL = 6
_CHUNK = 1 << 20
_PRESENT_MAX = 10_000                # ids remembered (~1.5 MB at most)


class BadArtifactId(TraceError):
    pass


def check_artifact_id(artifact_id: str) -> str:
    if not isinstance(artifact_id, str) or not _ID.match(artifact_id):
        raise BadArtifactId(f"not an artifact id: {artifact_id!r} (expected 64 lowercase hex digits)")
    return artifact_id


class ArtifactStore:
    def __init__(self, store: Path):
        self.root = store / "artifacts"
        self._real_root: Path | None = None
        # Ids this process has stored or found stored. Artifacts are never
        # deleted, so an output seen again (a file read twice) costs one hash.
        self._present: set[str] = set()

    def path_for(self, artifact_id: str) -> Path:
        check_artifact_id(artifact_id)
        path = (self.root / artifact_id[:2] / f"{artifact_id}.gz").resolve()
        if self._real_root is None or self._real_root not in path.parents:
            self._real_root = self.root.resolve()         # (resolved once; again only when a check fails)
            if self._real_root not in path.parents:       # belt and braces: symlinked dirs
                raise BadArtifactId(f"artifact path escapes the store: {artifact_id}")
        return path

    def put_chunks(self, chunks: Iterable[bytes]) -> tuple[str, int]:
        """Store a stream of bytes; returns (artifact id, byte count)."""
        ensure_dir(self.root)
        tmp = self.root / f".incoming-{os.getpid()}-{id(chunks)}"
        digest = hashlib.sha256()
        size = 0
        comp = zlib.compressobj(_LEVEL, zlib.DEFLATED, 31)   # 31: gzip container
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for chunk in chunks:
                digest.update(chunk)
                size += len(chunk)
                os.write(fd, comp.compress(chunk))
            os.write(fd, comp.flush())
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
        artifact_id = digest.hexdigest()
        final = self.path_for(artifact_id)
        if final.exists():
            tmp.unlink()                             # same content already stored
        else:
            ensure_dir(final.parent)
            os.replace(tmp, final)
            fsync_dir(final.parent)
        self._remember(artifact_id)
        return artifact_id, size

    def put(self, data: bytes) -> tuple[str, int]:
        """Store bytes held in memory. Content already stored (the same
        output read again, a re-sent image) costs one hash, not a compression."""
        artifact_id = hashlib.sha256(data).hexdigest()
        if artifact_id in self._present or self.path_for(artifact_id).is_file():
            self._remember(artifact_id)
            return artifact_id, len(data)
        return self.put_chunks([data])

    def _remember(self, artifact_id: str) -> None:
        if len(self._present) >= _PRESENT_MAX:
            self._present.clear()
        self._present.add(artifact_id)

    def exists(self, artifact_id: str) -> bool:
        return self.path_for(artifact_id).is_file()

    def iter_bytes(self, artifact_id: str) -> Iterator[bytes]:
        path = self.path_for(artifact_id)
        if not path.is_file():
            raise TraceError(f"artifact {artifact_id} is missing from {self.root}; "
                             f"run `trace verify` to list every missing artifact")
        decomp = zlib.decompressobj(31)
        with open(path, "rb") as f:
            while True:
                chunk = f.read(_CHUNK)
                if not chunk:
                    break
                out = decomp.decompress(chunk)
                if out:
                    yield out
            tail = decomp.flush()
            if tail:
                yield tail

    def read(self, artifact_id: str) -> bytes:
        return b"".join(self.iter_bytes(artifact_id))

    def check(self, artifact_id: str) -> str | None:
        """None when the artifact is present and matches its id, else why not."""
        try:
            digest = hashlib.sha256()
            for chunk in self.iter_bytes(artifact_id):
                digest.update(chunk)
        except TraceError:
            return "missing"
        except zlib.error as exc:
            return f"corrupt ({exc})"
        return None if digest.hexdigest() == artifact_id else "content does not match its sha256"

    def all_ids(self) -> Iterator[str]:
        if not self.root.is_dir():
            return
        for sub in sorted(self.root.iterdir()):
            if sub.is_dir():
                for f in sorted(sub.glob("*.gz")):
                    if _ID.match(f.name[:-3]):
                        yield f.name[:-3]
