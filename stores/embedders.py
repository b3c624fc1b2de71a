"""Embedders for the vector index, chosen by name and recorded with it.

- `wordllama` (default): WordLlama's 256-d l2_supercat model, read straight
  from the files its wheel ships (tokenizer JSON + safetensors weights) and
  pooled exactly as WordLlama does (mean of token embeddings). Reading the
  files directly skips `import wordllama` (~0.4 s of tokenizers, pydantic
  and requests), which matters for a cold `trace recall`; a test checks the
  vectors equal WordLlama's own.
- `hash`: feature hashing (reducers/hash_embed.py), no model at all.
Nothing here downloads anything."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np

from stores.errors import TraceError

DEFAULT_EMBEDDER = "wordllama"
EMBED_MAX_CHARS = 1000        # the head of a long text carries its topic; embedding all of it costs more
_MAX_TOKENS = 512


class HashEmbedder:
    name = "hash"
    dim = 256

    def embed(self, texts: list[str]) -> np.ndarray:
        from reducers.hash_embed import hash_embed
        return hash_embed([t[:EMBED_MAX_CHARS] for t in texts], self.dim)


class WordLlamaEmbedder:
    name = "wordllama"

    def __init__(self, dim: int = 256):
        root = _wordllama_dir()
        from tokenizers import Tokenizer
        self.tokenizer = Tokenizer.from_file(str(root / "tokenizers" / "l2_supercat_tokenizer_config.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        weights = _read_safetensor(root / "weights" / "l2_supercat_256.safetensors", "embedding.weight")
        self.table = np.ascontiguousarray(weights[:, :dim].astype(np.float32))
        self.dim = dim

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch([t[:EMBED_MAX_CHARS] for t in texts], add_special_tokens=False)
        # Mean pooling for the whole batch at once: one gather, one running
        # sum (float64, so long batches lose no precision), then differences
        # at each text's bounds (np.add.reduceat is ~5x slower here).
        lists = [enc.ids[:_MAX_TOKENS] for enc in encodings]
        lengths = np.array([len(x) for x in lists], dtype=np.int64)
        nonempty = lengths > 0
        if nonempty.any():
            ids = np.concatenate([np.asarray(x, dtype=np.int64) for x in lists if x])
            np.clip(ids, 0, self.table.shape[0] - 1, out=ids)
            running = np.zeros((ids.size + 1, self.dim), dtype=np.float64)
            np.cumsum(self.table[ids], axis=0, dtype=np.float64, out=running[1:])
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
    """One tensor from a .safetensors file (8-byte header length, JSON
    header, raw little-endian data)."""
    with open(path, "rb") as f:
        header_len = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(header_len))
        info = header[name]
        start, end = info["data_offsets"]
        f.seek(8 + header_len + start)
        data = f.read(end - start)
    dtype = {"F16": "<f2", "F32": "<f4", "BF16": None}[info["dtype"]]
    if dtype is None:
        raise TraceError(f"{path.name}: bf16 weights are not supported")
    return np.frombuffer(data, dtype=dtype).reshape(info["shape"])


def load_embedder(name: str, dim: int | None = None):
    if name == "hash":
        return HashEmbedder()
    if name == "wordllama":
        return WordLlamaEmbedder(dim or 256)
    raise TraceError(f"unknown embedder {name!r}; choose wordllama or hash")
