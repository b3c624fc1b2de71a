"""Token counts are tiktoken's cl100k counts, however a process gets them:
the pure-Python counter a short-lived process starts with, tiktoken's own
encoder, and the encoder built from the cached ranks all agree; the rank
cache is only ever a shortcut."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reducers import tokens
from reducers.byte_bpe import counter
from stores.tokenizer import rank_cache
from tests.conftest import REPO, SAMPLES


@pytest.fixture(scope="module")
def tiktoken_encoding():
    import tiktoken
    return tiktoken.get_encoding(tokens.ENCODING_NAME)


@pytest.fixture(scope="module")
def pure(tiktoken_encoding):
    return counter(tiktoken_encoding._pat_str, tiktoken_encoding._mergeable_ranks)


def _texts_of(path):
    for line in path.read_text(errors="replace").splitlines():
        yield line
        try:
            record = json.loads(line)
        except ValueError:
            continue
        yield json.dumps(record, ensure_ascii=False, indent=1)


def test_the_pure_counter_agrees_with_tiktoken_on_every_sample_session(pure, tiktoken_encoding):
    texts = [t for path in sorted(SAMPLES.rglob("*")) if path.is_file() for t in _texts_of(path)]
    assert len(texts) > 50
    assert [pure(t) for t in texts] == [len(tiktoken_encoding.encode_ordinary(t)) for t in texts]


@pytest.mark.shared
def test_the_pure_counter_agrees_with_tiktoken_on_real_transcripts(pure, tiktoken_encoding, shared_transcripts):
    texts = [line[:3000] for path in sorted(shared_transcripts.rglob("*.jsonl"))[:12]
             for line in path.read_text(errors="replace").splitlines()[:150]]
    assert len(texts) > 200
    assert [pure(t) for t in texts] == [len(tiktoken_encoding.encode_ordinary(t)) for t in texts]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)
       | st.text(alphabet="ab 1\n\t'sllvé中🙂<|>_-/.", max_size=80))
def test_the_pure_counter_agrees_with_tiktoken_on_any_text(text):
    import tiktoken
    enc = tiktoken.get_encoding(tokens.ENCODING_NAME)
    assert counter(enc._pat_str, enc._mergeable_ranks)(text) == len(enc.encode_ordinary(text))


def test_lone_surrogates_count_as_tiktoken_counts_them(pure, tiktoken_encoding):
    text = "before \ud800 after \udfff end"
    assert pure(text) == len(tiktoken_encoding.encode_ordinary(text))


def test_a_special_token_in_text_is_counted_as_plain_text(pure, tiktoken_encoding):
    text = "end of it <|endoftext|> and on"
    assert pure(text) == len(tiktoken_encoding.encode_ordinary(text)) > 3


def test_the_rank_cache_round_trips_and_builds_the_same_encoder(tmp_path, monkeypatch, tiktoken_encoding):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = rank_cache.load_tables(tokens.ENCODING_NAME)
    assert first[3] is not None                         # nothing cached yet: tiktoken built the encoder
    [cached] = (tmp_path / "trace").iterdir()
    assert oct(cached.stat().st_mode & 0o777) == "0o600"
    pat_str, ranks, special, built = rank_cache.load_tables(tokens.ENCODING_NAME)
    assert built is None                                # the second process reads the cache
    assert (pat_str, special) == (tiktoken_encoding._pat_str, tiktoken_encoding._special_tokens)
    assert ranks.to_dict() == tiktoken_encoding._mergeable_ranks
    assert all(ranks.get(t) == r for t, r in list(tiktoken_encoding._mergeable_ranks.items())[::97])
    assert ranks.get(b"no such token \xff\xfe") is None and ranks.get(b"\xff\xfe\xfd\xfc") is None
    count = counter(pat_str, ranks)
    for text in ("The payments timeout moved to 45 s", "naïve café 東京 🙂 x=1e-9", "  indented\n\tcode()"):
        assert count(text) == len(tiktoken_encoding.encode_ordinary(text))


def test_reinstalls_do_not_pile_up_cache_files(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cache = tmp_path / "trace"
    cache.mkdir()
    for i in range(5):                                   # files earlier installs left
        old = cache / f"{tokens.ENCODING_NAME}-old{i}.ranks"
        old.write_bytes(b"x")
        os.utime(old, (1_000_000 + i, 1_000_000 + i))
    rank_cache.load_tables(tokens.ENCODING_NAME)
    left = sorted(p.name for p in cache.iterdir())
    assert len(left) == 3 and f"{tokens.ENCODING_NAME}-old4.ranks" in left and f"{tokens.ENCODING_NAME}-old0.ranks" not in left


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_a_damaged_rank_cache_is_ignored_and_rewritten(tmp_path, monkeypatch, damage, tiktoken_encoding):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    rank_cache.load_tables(tokens.ENCODING_NAME)
    [cached] = (tmp_path / "trace").iterdir()
    data = cached.read_bytes()
    cached.write_bytes({"truncate": data[:len(data) // 2], "garbage": b"\x00not a cache\n" * 50, "empty": b"",
                        "flip": data[:-100] + bytes([data[-100] ^ 0xFF]) + data[-99:]}[damage])
    pat_str, ranks, special, built = rank_cache.load_tables(tokens.ENCODING_NAME)
    assert built is not None and ranks == tiktoken_encoding._mergeable_ranks
    assert cached.read_bytes() == data                  # rewritten whole


def test_an_unwritable_cache_directory_only_costs_speed(tmp_path, monkeypatch, tiktoken_encoding):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    _, ranks, _, built = rank_cache.load_tables(tokens.ENCODING_NAME)
    assert built is not None and ranks == tiktoken_encoding._mergeable_ranks


def test_a_cache_file_that_cannot_be_put_in_place_leaves_no_temporary_copy(tmp_path, monkeypatch, tiktoken_encoding):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    rank_cache.load_tables(tokens.ENCODING_NAME)
    [cached] = (tmp_path / "trace").iterdir()
    cached.unlink()
    cached.mkdir()                                      # its name taken by a directory: the rename fails
    _, ranks, _, built = rank_cache.load_tables(tokens.ENCODING_NAME)
    assert built is not None and ranks == tiktoken_encoding._mergeable_ranks
    assert [p.name for p in (tmp_path / "trace").iterdir()] == [cached.name]


def test_ranks_that_do_not_run_0_to_n_are_not_laid_out():
    from reducers.rank_table import layout
    assert layout({b"a": 0, b"b": 2}) is None
    body, count, slots = layout({b"a": 0, b"bc": 1})
    assert (count, slots) == (2, 4)


def test_a_new_process_counts_the_same_with_and_without_the_cache(tmp_path):
    """The first process writes the cache, the second reads it; both count
    in pure Python over the rank table until PURE_CHARS, then build
    tiktoken's encoder, with the same counts."""
    texts = {"short": "The payments timeout moved to 45 s — see commit 9f3e2a1.",
             "medium": " ".join(f"step{i}: check é中 {i * 7}" for i in range(2500)),
             "long": " ".join(f"word{i} é中" for i in range(12000))}
    assert len(texts["short"]) + len(texts["medium"]) < tokens.PURE_CHARS < len(texts["long"])
    script = ("import json, sys, stores; from reducers import tokens\n"
              "texts = json.load(sys.stdin); out = []\n"
              "for name in ('short', 'medium', 'long'):\n"
              "    out.append([tokens.count_tokens(texts[name]), tokens.encoding.cache_info().currsize])\n"
              "print(json.dumps(out))\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    runs = [json.loads(subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, input=json.dumps(texts),
                                      capture_output=True, text=True, check=True).stdout) for _ in range(2)]
    import tiktoken
    enc = tiktoken.get_encoding(tokens.ENCODING_NAME)
    expected = [len(enc.encode_ordinary(texts[name])) for name in ("short", "medium", "long")]
    assert [n for n, _ in runs[0]] == [n for n, _ in runs[1]] == expected
    assert [built for _, built in runs[1]] == [0, 0, 1]      # only the long text needed the encoder


def test_a_long_unbroken_run_is_left_to_the_encoder_with_the_same_count(tiktoken_encoding):
    """Pure merging is quadratic in a piece's length (an 80 kB run of "x" in a
    tool call's arguments kept an ingest busy for minutes): with a limit, a
    text holding a longer piece is declined, and count_tokens gives the
    encoder's count for it."""
    limited = counter(tiktoken_encoding._pat_str, tiktoken_encoding._mergeable_ranks, max_piece=64)
    assert limited("x" * 64) == len(tiktoken_encoding.encode_ordinary("x" * 64))
    assert limited("ok " + "x" * 65) is None and limited("─" * 30) is None       # 90 bytes of box drawing
    assert limited("plain words, short pieces") == len(tiktoken_encoding.encode_ordinary("plain words, short pieces"))
    for text in ("x" * 5000, "=" * 3000 + " done", "━" * 2000):
        assert tokens.count_tokens(text) == len(tiktoken_encoding.encode_ordinary(text))
