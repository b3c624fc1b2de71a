"""Content-addressed, compressed storage for large tool outputs.

An artifact's id is the sha256 of its original bytes; it lives at
artifacts/<id[:2]>/<id>.gz. Writing is streaming (bounded memory for a
100 MB output) and atomic (temp file, fsync, rename); so is reading, which
checks the bytes against their id as they stream. Ids are checked against
^[0-9a-f]{64}$ before they touch a path, so no id can name a file outside
the store."""
from __future__ import annotations

import os
import re
import zlib
from pathlib import Path
from typing import Iterable, Iterator

from stores.errors import IntegrityError, TraceError
from stores.paths import ensure_dir, fsync_dir

_ID = re.compile(r"^[0-9a-f]{64}$")
_LEVEL = 6
_CHUNK = 1 << 20
_PRESENT_MAX = 10_000                # ids remembered (~1.5 MB at most)


class BadArtifactId(TraceError):
    pass


class ArtifactDamaged(IntegrityError):
    """An artifact whose stored bytes are not what its id promises."""
    def __init__(self, artifact_id: str, why: str):
        self.why = why
        super().__init__(f"artifact {artifact_id} {why}; run `trace verify` to list every damaged artifact")


class ArtifactMissing(ArtifactDamaged):
    """An artifact the log refers to whose file is gone: damage as much as
    altered bytes are (exit 5), not a runtime error."""
    def __init__(self, artifact_id: str, root: Path):
        self.why = "is missing"
        IntegrityError.__init__(self, f"artifact {artifact_id} is missing from {root}; "
                                      f"run `trace verify` to list every missing artifact")


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
        from hashlib import sha256        # here: hashlib loads OpenSSL (~5 ms a cold recall never needs)
        digest = sha256()
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

    def sweep_incoming(self) -> int:
        """Remove partial writes a killed writer left behind; call only under
        the writer lock (its holder is the one process writing artifacts)."""
        removed = 0
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return 0
        for name in names:
            if name.startswith(".incoming-"):
                (self.root / name).unlink(missing_ok=True)
                removed += 1
        return removed

    def put(self, data: bytes) -> tuple[str, int]:
        """Store bytes held in memory. Content already stored (the same
        output read again, a re-sent image) costs one hash, not a compression."""
        from hashlib import sha256
        artifact_id = sha256(data).hexdigest()
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
        """The original bytes, in pieces of at most 1 MiB, checked as they
        stream: a corrupt gzip, or bytes whose sha256 is not the id, raise
        ArtifactDamaged. The last piece is held back until the check passes,
        so whoever reads to the end never gets a complete-looking altered copy."""
        path = self.path_for(artifact_id)
        if not path.is_file():
            raise ArtifactMissing(artifact_id, self.root)
        from hashlib import sha256
        digest = sha256()
        held = b""
        for piece in _gunzip(path, artifact_id):
            digest.update(piece)
            if held:
                yield held
            held = piece
        if digest.hexdigest() != artifact_id:
            raise ArtifactDamaged(artifact_id, "does not match its sha256 (its content was altered)")
        if held:
            yield held

    def read(self, artifact_id: str) -> bytes:
        return b"".join(self.iter_bytes(artifact_id))

    def check(self, artifact_id: str) -> str | None:
        """None when the artifact is present and matches its id, else why not."""
        try:
            for _ in self.iter_bytes(artifact_id):
                pass
        except ArtifactDamaged as exc:           # altered, corrupt, cut short or missing
            return exc.why
        return None

    def all_ids(self) -> Iterator[str]:
        if not self.root.is_dir():
            return
        for sub in sorted(self.root.iterdir()):
            if sub.is_dir():
                for f in sorted(sub.glob("*.gz")):
                    if _ID.match(f.name[:-3]):
                        yield f.name[:-3]


def _gunzip(path: Path, artifact_id: str) -> Iterator[bytes]:
    """The decompressed content of one gzip file, at most _CHUNK bytes at a
    time however well it compressed (a 100 MB run of one byte is a 100 KB file)."""
    decomp = zlib.decompressobj(31)                  # 31: gzip container, its CRC checked at the end
    try:
        with open(path, "rb") as f:
            while not decomp.eof:
                data = decomp.unconsumed_tail or f.read(_CHUNK)
                out = decomp.decompress(data, _CHUNK) if data else decomp.flush()
                if out:
                    yield out
                if not data:                         # the file has ended
                    break
            trailing = decomp.unused_data or f.read(1)
    except zlib.error as exc:
        raise ArtifactDamaged(artifact_id, f"is corrupt (gzip: {exc})") from None
    if not decomp.eof:
        raise ArtifactDamaged(artifact_id, "is cut short (its gzip stream ends early)")
    if trailing:
        raise ArtifactDamaged(artifact_id, "has bytes after the end of its gzip stream")
