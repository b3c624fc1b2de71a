"""Fuzzing (hypothesis, seeded, bounded): every format parser, the line
reader, the big-line decoder, verify over mutated log bytes, and the
query path. Each property is what a user relies on when the input is
hostile: nothing raises out of the layer that owns it, and one bad record
costs nothing else. `make test` runs few examples per property (derandomized:
the same ones every run); `make soak` runs many more."""
from __future__ import annotations

import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reducers.drafts import BadRecord, Draft, ParseContext
from reducers.event_schema import draft_problem
from reducers.formats.registry import DETECTION_ORDER, format_module
from tests.conftest import SAMPLES
from tests.helpers import cli

QUICK = settings(max_examples=25, deadline=None, derandomize=True,
                 suppress_health_check=list(HealthCheck))
SOAK = settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))

# Keys the parsers look at, so generated records reach past their first checks.
_KEYS = st.sampled_from([
    "type", "role", "content", "text", "message", "messages", "payload", "id", "uuid", "parentUuid", "sessionId",
    "timestamp", "ts", "tool_calls", "tool_use_id", "tool_call_id", "function", "name", "arguments", "input",
    "output", "call_id", "session_id", "kind", "seq", "hash", "source", "meta", "tool", "tokens", "model",
    "request", "response", "body", "choices", "usage", "isSidechain", "subtype", "item", "items", "summary",
    "trajectory", "action", "observation", "history", "instructions", "system", "toolUseResult", "data",
])
_SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2 ** 70), max_value=2 ** 70)
            | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40)
            | st.sampled_from(["user", "assistant", "tool", "system", "tool_use", "tool_result", "text", "message",
                               "function_call", "function_call_output", "response_item", "session_meta",
                               "event_msg", "2026-01-01T00:00:00Z", "input_text", "output_text"]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(_KEYS | st.text(max_size=8), inner, max_size=6), max_leaves=15)
_RECORDS = st.dictionaries(_KEYS, _VALUES, max_size=8)


def _parse_all(fmt: str, records: list) -> list:
    ctx = ParseContext(path="fuzz.jsonl", source_id="/fuzz.jsonl")
    return list(format_module(fmt).parse([(i + 1, r) for i, r in enumerate(records)], ctx))


def _parser_property(fmt: str, records: list) -> None:
    """A parser either yields drafts and bad records (each draft's shape
    judged by the chokepoint's check without error) or raises an ordinary
    Exception, which ingest turns into `file:line: reason` for that record
    alone (see test_one_fuzzed_record_costs_only_itself)."""
    try:
        out = _parse_all(fmt, records)
    except Exception:
        return
    for item in out:
        assert isinstance(item, (Draft, BadRecord))
        if isinstance(item, Draft):
            draft_problem(item)


@pytest.mark.parametrize("fmt", DETECTION_ORDER)
@QUICK
@given(records=st.lists(_RECORDS, min_size=1, max_size=4))
def test_a_parser_never_fails_with_more_than_an_ordinary_error(fmt, records):
    _parser_property(fmt, records)


@pytest.mark.soak
@pytest.mark.parametrize("fmt", DETECTION_ORDER)
@SOAK
@given(records=st.lists(_RECORDS, min_size=1, max_size=8))
def test_a_parser_never_fails_with_more_than_an_ordinary_error_soak(fmt, records):
    _parser_property(fmt, records)


# -- one fuzzed record among good ones, through the real ingest -----------------------

def _good_lines(fmt: str) -> list[str]:
    """Good JSONL lines of the format (from sample_sessions/)."""
    files = {"claude-code": SAMPLES / "claude-code" / "demo-session.jsonl",
             "codex": SAMPLES / "codex" / "rollout-demo.jsonl",
             "openai": SAMPLES / "openai" / "support-chat.jsonl",
             "trace": SAMPLES / "trace" / "billing-handoff.trace.jsonl",
             "gemini-cli": next((SAMPLES / "gemini-cli").glob("*.jsonl"))}
    if fmt == "opencode":                        # an export is one document: as one JSONL line
        (doc,) = (SAMPLES / "opencode").glob("*.json")
        return [json.dumps(json.loads(doc.read_text()))]
    if fmt == "anthropic":
        return [json.dumps({"model": "claude", "messages": [{"role": "user", "content": f"good anthropic {i}"},
                                                           {"role": "assistant", "content": f"reply {i}"}]})
                for i in range(3)]
    return [line for line in files[fmt].read_text().splitlines() if line.strip()]


def _isolation_property(tmp_path, fmt: str, record: dict, where: int) -> None:
    import shutil
    good = _good_lines(fmt)
    reference, fuzzed = tmp_path / "ref", tmp_path / "fuzzed"
    for d in (reference, fuzzed):
        shutil.rmtree(d, ignore_errors=True)
    (tmp_path / "good.jsonl").write_text("\n".join(good) + "\n")
    at = where % (len(good) + 1)
    (tmp_path / "bad.jsonl").write_text("\n".join(good[:at] + [json.dumps(record)] + good[at:]) + "\n")
    ref = cli("--store", str(reference), "ingest", "--no-embed", "--format", fmt, str(tmp_path / "good.jsonl"))
    run = cli("--store", str(fuzzed), "ingest", "--no-embed", "--format", fmt, str(tmp_path / "bad.jsonl"))
    assert run.code in (0, 1), run.err
    assert "Traceback" not in run.err and "please report" not in run.err, run.err
    from stores.store import Store
    kept = {e["text"] for e in Store(fuzzed).events()} if (fuzzed / "segments").is_dir() else set()
    wanted = {e["text"] for e in Store(reference).events()} if ref.code == 0 else set()
    assert wanted <= kept, sorted(wanted - kept)[:3]
    if (fuzzed / "segments").is_dir():
        report = Store(fuzzed).verify(check_indexes=False)
        assert report.ok, report.problems


@pytest.mark.parametrize("fmt", DETECTION_ORDER)
@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(record=_RECORDS, where=st.integers(min_value=0, max_value=50))
def test_one_fuzzed_record_costs_only_itself(tmp_path_factory, fmt, record, where):
    _isolation_property(tmp_path_factory.mktemp("iso"), fmt, record, where)


def test_a_record_with_null_openai_fields_does_not_make_plain_chat_openais(tmp_path):
    """Found by `make soak`: {"role": null, "tool_calls": null} first in a
    file of plain Messages API bodies made the file read as OpenAI's, so
    `--format anthropic` refused all of it. A record with no role is no
    OpenAI message: it is reported at its line and the rest is read."""
    _isolation_property(tmp_path, "anthropic", {"type": None, "role": None, "tool_calls": None}, 0)


@pytest.mark.parametrize("fmt, record", [
    ("anthropic", {"role": "", "tool_calls": None}),
    ("opencode", {"model": None, "type": None, "content": None, "text": None, "input": ""}),
])
def test_one_stray_record_first_does_not_make_the_named_formats_file_another_formats(tmp_path, fmt, record):
    """Found by `make soak` (twice, with other records each time): one
    record first in the file that another format's detector claims (an
    OpenAI key beside an empty role; a Responses-API `input`) made the
    whole file "another format's", so the --format the user named was
    refused for every line. A file is another format's only when most of
    its records are."""
    _isolation_property(tmp_path, fmt, record, 0)


@pytest.mark.soak
@pytest.mark.parametrize("fmt", DETECTION_ORDER)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(record=_RECORDS, where=st.integers(min_value=0, max_value=50))
def test_one_fuzzed_record_costs_only_itself_soak(tmp_path_factory, fmt, record, where):
    _isolation_property(tmp_path_factory.mktemp("iso"), fmt, record, where)


# -- the line reader and the big-line decoder -------------------------------------------

def _reader_property(tmp_path, data: bytes) -> None:
    from stores.ingest.big_lines import SpillRegistry
    from stores.ingest.sources import Source, SourceError, read_records
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    spills = SpillRegistry(tmp_path / "tmp")
    try:
        for item in read_records(Source(str(path), path, str(path)), spills):
            assert isinstance(item, SourceError) or (isinstance(item, tuple) and type(item[0]) is int)
    finally:
        spills.cleanup()


_BYTES = st.binary(max_size=300) | st.lists(
    st.sampled_from([b"{", b"}", b"[", b"]", b'"', b"\\", b"\\u", b"d800", b":", b",", b"\n", b"1e999", b"9" * 400,
                     b"\xff", b"\xef\xbb\xbf", b"NaN", b'"a"', b" ", b"true"]), max_size=60).map(b"".join)


@QUICK
@given(data=_BYTES)
def test_the_line_reader_turns_any_bytes_into_records_or_reasons(tmp_path_factory, data):
    _reader_property(tmp_path_factory.mktemp("rd"), data)


@pytest.mark.soak
@SOAK
@given(data=_BYTES)
def test_the_line_reader_turns_any_bytes_into_records_or_reasons_soak(tmp_path_factory, data):
    _reader_property(tmp_path_factory.mktemp("rd"), data)


@QUICK
@given(body=st.text(max_size=200), cut=st.integers(min_value=0, max_value=400))
def test_the_big_line_decoder_decodes_or_says_why(tmp_path_factory, body, cut):
    from stores.ingest.big_lines import BigLineError, SpillRegistry, decode_big_line
    raw = json.dumps({"content": body * 50, "n": [1, {"a": body}]}).encode()[: cut * 50 or None]
    spills = SpillRegistry(tmp_path_factory.mktemp("bl"))
    try:
        value = decode_big_line(io.BytesIO(raw), len(raw), spills)
        assert value is not None or raw.strip() == b"null"
    except BigLineError:
        pass
    finally:
        spills.cleanup()


# -- verify over mutated log bytes --------------------------------------------------------

@pytest.fixture(scope="module")
def sealed_log(tmp_path_factory):
    from stores.log.event_log import EventLog
    root = tmp_path_factory.mktemp("log")
    log = EventLog(root)
    log.append([{"session_id": "s", "turn_id": f"t{i}", "ts": None, "kind": "user", "text": f"event {i}",
                 "tokens": 2, "source": {"key": f"k{i}"}} for i in range(8)])
    log.close()
    return (root / "segments" / "00000000000000000001.jsonl").read_bytes()


def _verify_property(tmp_path, original: bytes, edits: list[tuple[int, int]]) -> None:
    from stores.store import Store
    data = bytearray(original)
    for pos, value in edits:
        data[pos % len(data)] = value
    seg = tmp_path / "segments" / "00000000000000000001.jsonl"
    seg.parent.mkdir(parents=True, exist_ok=True)
    seg.write_bytes(bytes(data))
    report = Store(tmp_path).verify(check_indexes=False)
    if bytes(data) != original:                 # damage, or a last line cut short (a torn write, noted)
        assert not report.ok or report.notes, "a changed line passed verify"


@QUICK
@given(edits=st.lists(st.tuples(st.integers(min_value=0, max_value=10 ** 6), st.integers(min_value=0, max_value=255)),
                      min_size=1, max_size=5))
def test_verify_reports_any_byte_changed_in_a_line_and_never_raises(tmp_path_factory, sealed_log, edits):
    _verify_property(tmp_path_factory.mktemp("vf"), sealed_log, edits)


# -- the query path ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def recaller(tmp_path_factory):
    from stores.recall import Recaller
    from stores.store import Store
    root = tmp_path_factory.mktemp("q")
    store = Store(root / "store")
    list(store.ingest([str(SAMPLES)]))
    r = Recaller(store)
    r.prepare("hybrid")
    return r


_QUERY_TEXT = st.text(max_size=200) | st.lists(st.sampled_from(
    ["gateway", "port", "\"", "(", ")", ":", "*", "AND", "OR", "NOT", "-", "+", "~", "^2", "\\", "/", "?", "%", "\x00",
     "é", "日本", "config.yaml", "sk-", " ", "::", "[", "]", "{", "}", "'"]), max_size=30).map("".join)


def _query_property(recaller, query: str, k: int, mode: str, hops: int, kinds, since) -> None:
    from stores.errors import NoResult, UsageError
    from stores.recall import RecallQuery
    q = RecallQuery(query=query, k=k, mode=mode, hops=hops, kinds=kinds, since=since)
    try:
        q.validate()
    except (UsageError, NoResult):      # documented answers: exit 2, or exit 3 for a query of stop words only
        return
    hits = recaller.recall(q)
    assert len(hits) <= k and [h.rank for h in hits] == list(range(1, len(hits) + 1))


_QUERY_ARGS = dict(query=_QUERY_TEXT, k=st.integers(min_value=1, max_value=30),
                   mode=st.sampled_from(["hybrid", "fulltext", "vector"]), hops=st.sampled_from([1, 2]),
                   kinds=st.none() | st.lists(st.sampled_from(["user", "assistant", "tool_result", "bogus"]), max_size=2),
                   since=st.none() | st.sampled_from(["3d", "2026-01-01", "garbage", "99999999999d", "0s"]))


@QUICK
@given(**_QUERY_ARGS)
def test_no_query_breaks_recall(recaller, query, k, mode, hops, kinds, since):
    _query_property(recaller, query, k, mode, hops, kinds, since)


@pytest.mark.soak
@SOAK
@given(**_QUERY_ARGS)
def test_no_query_breaks_recall_soak(recaller, query, k, mode, hops, kinds, since):
    _query_property(recaller, query, k, mode, hops, kinds, since)
