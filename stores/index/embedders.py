"""Embedders for the vector index, chosen by name and recorded with it.

- `wordllama` (default): WordLlama's 256-d l2_supercat model, read straight
  from the files its wheel ships (tokenizer JSON + safetensors weights) and
  pooled exactly as WordLlama does (mean of token embeddings). Reading the
  files directly skips `import wordllama` (~0.4 s of tokenizers, pydantic
  and requests), which matters for a cold `trace recall`; a test checks the
  vectors equal WordLlama's own.
- `hash`: feature hashing (reducers/hash_embed.py), no model at all.
Both read a text with its accents folded, case kept (reducers/folding.py
`unaccented`): WordLlama's tokenizer cuts "café" and "cafe" into different
pieces (cosine 0.67), so a query typed without accents missed the text
written with them, which full text finds.
Nothing here downloads anything."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np

from reducers.folding import unaccented
from stores.errors import TraceError

TOKENIZER_FILE = "l2_supercat_tokenizer_config.json"
EMBED_MAX_CHARS = 1000        # the head of a long text carries its topic; embedding all of it costs more
_MAX_TOKENS = 512


class HashEmbedder:
    name = "hash"
    dim = 256

    def embed(self, texts: list[str]) -> np.ndarray:
        from reducers.hash_embed import hash_embed
        return hash_embed([unaccented(t[:EMBED_MAX_CHARS]) for t in texts], self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


class WordLlamaEmbedder:
    name = "wordllama"

    def __init__(self, dim: int = 256):
        self.root = _wordllama_dir()
        # Memory-mapped: a query reads the rows of its few tokens, not the
        # whole 16 MB table (a cold `trace recall` embeds one short text).
        self.weights = _read_safetensor(self.root / "weights" / "l2_supercat_256.safetensors", "embedding.weight")
        self.dim = dim
        self._tokenizer = None
        self._bpe: tuple | None = None

    @property
    def tokenizer(self):
        """The Rust tokenizer, for batches (built on first use: ~0.1 s)."""
        if self._tokenizer is None:
            from tokenizers import Tokenizer
            self._tokenizer = Tokenizer.from_file(str(self.root / "tokenizers" / TOKENIZER_FILE))
            self._tokenizer.no_padding()
            self._tokenizer.no_truncation()
        return self._tokenizer

    def embed_query(self, text: str) -> np.ndarray:
        """One text's vector, tokenized in Python (reducers/bpe.py): the
        same ids as the Rust tokenizer without building it."""
        from reducers.bpe import bpe_ids
        if self._bpe is None:
            from stores.tokenizer.wordllama_tables import bpe_tables
            self._bpe = bpe_tables(self.root / "tokenizers" / TOKENIZER_FILE)      # cached flat tables (~45 ms less)
        ids = bpe_ids(unaccented(text[:EMBED_MAX_CHARS]), *self._bpe)[:_MAX_TOKENS]
        out = np.zeros(self.dim, dtype=np.float32)
        if ids:
            rows = self.weights[np.clip(np.asarray(ids, dtype=np.int64), 0, self.weights.shape[0] - 1), :self.dim]
            out[:] = rows.astype(np.float64).sum(0) / len(ids)
            norm = np.linalg.norm(out)
            if norm > 0:
                out /= norm
        return out

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch([unaccented(t[:EMBED_MAX_CHARS]) for t in texts],
                                                add_special_tokens=False)
        # Mean pooling for the whole batch at once: one gather, one running
        # sum (float64, so long batches lose no precision), then differences
        # at each text's bounds (np.add.reduceat is ~5x slower here).
        lists = [enc.ids[:_MAX_TOKENS] for enc in encodings]
        lengths = np.array([len(x) for x in lists], dtype=np.int64)
        nonempty = lengths > 0
        if nonempty.any():
            ids = np.concatenate([np.asarray(x, dtype=np.int64) for x in lists if x])
            np.clip(ids, 0, self.weights.shape[0] - 1, out=ids)
            running = np.zeros((ids.size + 1, self.dim), dtype=np.float64)
            np.cumsum(self.weights[ids, :self.dim], axis=0, dtype=np.float64, out=running[1:])
            ends = np.cumsum(lengths)[nonempty]
            starts = ends - lengths[nonempty]
            out[nonempty] = (running[ends] - running[starts]) / lengths[nonempty, None]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


def _wordllama_dir() -> Path:
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise TraceError("the wordllama package is not installed; run `make install`, or use --embedder hash")
    return Path(list(spec.submodule_search_locations)[0])


def _read_safetensor(path: Path, name: str) -> np.ndarray:
    """One tensor of a .safetensors file (8-byte header length, JSON
    header, raw little-endian data), memory-mapped, read-only."""
    with open(path, "rb") as f:
        header_len = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(header_len))
    info = header[name]
    start, end = info["data_offsets"]
    dtype = {"F16": "<f2", "F32": "<f4", "BF16": None}[info["dtype"]]
    if dtype is None:
        raise TraceError(f"{path.name}: bf16 weights are not supported")
    return np.memmap(path, dtype=dtype, mode="r", offset=8 + header_len + start, shape=tuple(info["shape"]))


def load_embedder(name: str, dim: int | None = None):
    if name == "hash":
        return HashEmbedder()
    if name == "wordllama":
        return WordLlamaEmbedder(dim or 256)
    raise TraceError(f"unknown embedder {name!r}; choose wordllama or hash")
