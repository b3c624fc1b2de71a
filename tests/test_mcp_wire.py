"""`trace mcp` on the wire, spoken to line by line as any client might:
whatever a line holds, the client gets an answer it can match (or none,
for a notification), and stdout carries nothing but JSON-RPC messages."""
from __future__ import annotations

import json
import os
import select
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import cli, openai_conversations
from trace_cli.mcp_wire import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, Wire

TRACE = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "trace"


class Client:
    def __init__(self, store_dir: Path):
        self.proc = subprocess.Popen([str(TRACE), "--store", str(store_dir), "mcp"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.pending = b""
        self.lines: list[bytes] = []

    def send(self, message) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def receive(self, timeout: float = 60.0):
        end = time.monotonic() + timeout
        while b"\n" not in self.pending:
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, end - time.monotonic()))
            if not ready:
                raise AssertionError("the server gave no answer")
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            assert chunk, "the server closed stdout"
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        self.lines.append(line)
        return json.loads(line)

    def initialize(self, version: str) -> dict:
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "wire-test", "version": "1"}}})
        answer = self.receive()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def close(self) -> int:
        self.proc.stdin.close()
        rest = self.proc.stdout.read()
        self.lines += [ln for ln in (self.pending + rest).split(b"\n") if ln.strip()]
        self.stderr = self.proc.stderr.read().decode("utf-8", "replace")
        return self.proc.wait(60)


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("wire")
    src = openai_conversations(root / "chats.jsonl", conversations=1, turns=6, prefix="harbor")
    assert cli("--store", str(root / "store"), "ingest", "--no-embed", str(src)).code == 0
    return root / "store"


@pytest.mark.parametrize("asked, agreed", [("2024-11-05", "2024-11-05"), ("2025-03-26", "2025-03-26"),
                                           ("2025-06-18", "2025-06-18"), ("2025-11-25", "2025-11-25"),
                                           ("2031-01-01", "2025-11-25")])
def test_each_handshake_version_is_agreed_or_answered_with_one_the_server_speaks(store_dir, asked, agreed):
    client = Client(store_dir)
    assert client.initialize(asked)["result"]["protocolVersion"] == agreed
    client.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert "recall" in {t["name"] for t in client.receive()["result"]["tools"]}
    assert client.close() == 0


def test_lines_that_are_not_messages_are_answered_and_the_server_keeps_serving(store_dir):
    client = Client(store_dir)
    client.initialize("2025-06-18")
    client.send(b'{"jsonrpc": "2.0", "id": 7, "method": \n')
    parse = client.receive()
    assert parse["id"] is None and parse["error"]["code"] == PARSE_ERROR
    assert parse["error"]["message"].startswith("Parse error")
    client.send({"jsonrpc": "2.0", "id": 8})                       # JSON, but not a request
    invalid = client.receive()
    assert invalid["id"] == 8 and invalid["error"]["code"] == INVALID_REQUEST
    client.send(b"\n")                                             # a blank line is nothing to answer
    client.send({"jsonrpc": "2.0", "id": 9, "method": "no/such/method"})
    assert client.receive()["error"]["code"] == -32601
    client.send({"jsonrpc": "2.0", "id": 10, "method": "ping"})
    assert client.receive() == {"jsonrpc": "2.0", "id": 10, "result": {}}
    assert client.close() == 0


def test_a_batch_is_answered_as_one_array_where_the_protocol_has_batches(store_dir):
    client = Client(store_dir)
    client.initialize("2025-03-26")
    client.send([{"jsonrpc": "2.0", "id": "a", "method": "ping"},
                 {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}},
                 {"jsonrpc": "2.0", "id": "b", "method": "tools/list"},
                 {"jsonrpc": "2.0", "id": "c"}])
    answers = client.receive()
    assert isinstance(answers, list)
    by_id = {a["id"]: a for a in answers}
    assert set(by_id) == {"a", "b", "c"}                    # the notification gets no answer
    assert by_id["a"]["result"] == {} and by_id["b"]["result"]["tools"]
    assert by_id["c"]["error"]["code"] == INVALID_REQUEST
    client.send([])
    assert client.receive() == {"jsonrpc": "2.0", "id": None, "error": {
        "code": INVALID_REQUEST, "message": "Invalid Request: an empty batch"}}
    assert client.close() == 0


def test_a_batch_after_2025_06_18_is_refused_per_request_not_left_unanswered(store_dir):
    client = Client(store_dir)
    client.initialize("2025-06-18")
    client.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}])
    answers = client.receive()
    assert [a["id"] for a in answers] == [1, 2]
    assert all(a["error"]["code"] == INVALID_REQUEST and "its own line" in a["error"]["message"] for a in answers)
    client.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert client.receive()["id"] == 3
    assert client.close() == 0


def test_tool_errors_are_the_clis_one_line_naming_the_argument(store_dir):
    client = Client(store_dir)
    client.initialize("2025-11-25")
    client.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "recall",
                                                                                "arguments": {"k": "many"}}})
    refused = client.receive()["result"]
    assert refused["isError"] is True
    text = refused["content"][0]["text"]
    assert text.startswith("trace: error: bad arguments for recall: ") and "\n" not in text
    assert "`query`: Field required" in text and "`k`: " in text and "pydantic" not in text
    client.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "show",
                                                                                "arguments": {"selector": "9..2"}}})
    text = client.receive()["result"]["content"][0]["text"]
    assert text.startswith("trace: error: ") and "runs backwards" in text
    assert client.close() == 0


def test_stdout_carries_only_json_rpc_messages(store_dir):
    client = Client(store_dir)
    client.initialize("2025-06-18")
    for i, (name, args) in enumerate([("recall", {"query": "harbor"}), ("context", {"session": "nope"}),
                                      ("digest", {}), ("show", {"selector": "1..3"})]):
        client.send({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call", "params": {"name": name,
                                                                                          "arguments": args}})
        client.receive()
    assert client.close() == 0
    for line in client.lines:
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0" and ("id" in message or "method" in message)


# -- the wire's bookkeeping, without a server ---------------------------------------------

def test_a_batch_whose_request_is_cancelled_is_sent_with_the_answers_it_has():
    wire = Wire()
    messages, now = wire.read(json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                          {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]).encode())
    assert len(messages) == 2 and now == []
    assert wire.written({"jsonrpc": "2.0", "id": 1, "result": {}}) == []          # held for the batch: nothing written yet
    _, now = wire.read(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                   "params": {"requestId": 2}}).encode())
    assert now == [[{"jsonrpc": "2.0", "id": 1, "result": {}}]]
    assert wire.written({"jsonrpc": "2.0", "id": 5, "result": {}}) == [{"jsonrpc": "2.0", "id": 5, "result": {}}]


def test_the_version_a_request_states_decides_whether_batches_are_served():
    wire = Wire()
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    wire.read(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}).encode())
    messages, now = wire.read(json.dumps([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]).encode())
    assert messages == [] and now[0][0]["id"] == 2 and "2026-07-28" in now[0][0]["error"]["message"]


def test_a_request_before_the_handshake_is_told_to_initialize_and_a_ping_is_answered():
    wire = Wire()
    messages, now = wire.read(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}')
    assert messages == [] and now[0]["id"] == 1 and now[0]["error"]["code"] == INVALID_REQUEST
    assert "initialize first" in now[0]["error"]["message"]
    for allowed in ({"jsonrpc": "2.0", "id": 2, "method": "ping"},
                    {"jsonrpc": "2.0", "id": 3, "method": "tools/list",
                     "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}):
        messages, now = Wire().read(json.dumps(allowed).encode())
        assert len(messages) == 1 and now == []
    wire.read(b'{"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {}}')
    messages, now = wire.read(b'{"jsonrpc": "2.0", "id": 5, "method": "tools/list"}')
    assert len(messages) == 1 and now == []


def test_a_list_with_a_cursor_this_server_never_issued_is_invalid_params_and_a_null_cursor_is_none():
    wire = Wire()
    wire.read(b'{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}')
    for rid, method, cursor in ((1, "tools/list", "bogus"), (2, "resources/list", ""),
                                (3, "resources/templates/list", "eyJwYWdlIjogMn0=")):
        messages, now = wire.read(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                              "params": {"cursor": cursor}}).encode())
        assert messages == [] and now[0]["id"] == rid and now[0]["error"]["code"] == INVALID_PARAMS
        assert repr(cursor) in now[0]["error"]["message"] and "without a cursor" in now[0]["error"]["message"]
    for params in ({"cursor": None}, {}):
        messages, now = wire.read(json.dumps({"jsonrpc": "2.0", "id": 4, "method": "prompts/list",
                                              "params": params}).encode())
        assert len(messages) == 1 and now == []
    # a tool named like a list is not a list request's cursor
    messages, now = wire.read(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                                          "params": {"name": "recall", "arguments": {"cursor": "x"}}}).encode())
    assert len(messages) == 1 and now == []


@pytest.mark.parametrize("rid", [None, 1.5, True, [1], {"n": 1}])
def test_a_request_whose_id_is_no_id_is_refused_not_taken_for_a_notification(rid):
    wire = Wire()
    wire.read(b'{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}')
    messages, now = wire.read(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "ping"}).encode())
    assert messages == [] and now == [{"jsonrpc": "2.0", "id": None, "error": {
        "code": INVALID_REQUEST, "message": now[0]["error"]["message"]}}]
    assert "string or an integer" in now[0]["error"]["message"]
    messages, now = wire.read(json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                                          "params": {"progressToken": 1, "progress": 1}}).encode())
    assert len(messages) == 1 and now == []                          # a real notification still passes


def test_a_lone_surrogate_escape_is_read_so_its_request_is_answered_under_its_own_id(store_dir):
    # JavaScript's JSON.stringify writes a lone surrogate as an escape; orjson refuses such text
    client = Client(store_dir)
    client.initialize("2025-11-25")
    client.send(b'{"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"name": "note_add", '
                b'"arguments": {"text": "half a pair \\ud83d here"}}}\n')
    answer = client.receive()
    assert answer["id"] == 41 and answer["result"]["isError"]
    assert answer["result"]["content"] == [{"type": "text", "text": (       # the CLI's line, not pydantic's
        "trace: error: note_add argument `text`: 'half a pair \\ud83d here' is not valid UTF-8; pass text in UTF-8")}]
    client.send(b'{"jsonrpc": "2.0", "id": 44, "method": "tools/call", "params": {"name": "recall", '
                b'"arguments": {"query": "harbor", "session": "s\\udc00"}}}\n')
    answer = client.receive()
    assert answer["id"] == 44 and answer["result"]["isError"]
    assert answer["result"]["content"][0]["text"] == (
        "trace: error: recall argument `session`: 's\\udc00' is not valid UTF-8; pass text in UTF-8")
    client.send(b'{"jsonrpc": "2.0", "id": 42, "method": "ping", "params": {"_meta": {"note": "\\udc00"}}}\n')
    assert client.receive() == {"jsonrpc": "2.0", "id": 42, "result": {}}
    client.send(b'{"jsonrpc": "2.0", "id": 43, "method": "ping", "params": {"x": NaN}}\n')
    assert client.receive()["error"]["code"] == PARSE_ERROR               # NaN is not JSON, from either reader
    assert client.close() == 0


def test_the_initialize_id_used_again_later_does_not_undo_the_agreed_version():
    wire = Wire()
    wire.read(b'{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}')
    wire.written({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25"}})
    wire.read(b'{"jsonrpc": "2.0", "id": 0, "method": "ping"}')
    wire.written({"jsonrpc": "2.0", "id": 0, "result": {}})
    messages, now = wire.read(b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]')
    assert messages == [] and "not part of MCP 2025-11-25" in now[0][0]["error"]["message"]


def test_a_client_that_stops_reading_mid_call_ends_the_server_quietly(store_dir):
    client = Client(store_dir)
    client.initialize("2025-11-25")
    client.proc.stdout.close()                                       # the client went away
    client.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                 "params": {"name": "recall", "arguments": {"query": "harbor", "k": 50}}})
    client.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    client.proc.stdin.close()
    assert client.proc.wait(60) == 0
    assert client.proc.stderr.read() == b""


@pytest.mark.parametrize("version, resource_code", [("2025-06-18", -32002), ("2025-11-25", -32002),
                                                    ("2026-07-28", INVALID_PARAMS)])
def test_unknown_tools_prompts_and_resources_get_the_specs_error_codes_and_stderr_stays_one_line(
        store_dir, version, resource_code):
    client = Client(store_dir)
    meta = {}
    if version == "2026-07-28":                 # no handshake: each request names its version
        meta = {"_meta": {"io.modelcontextprotocol/protocolVersion": version,
                          "io.modelcontextprotocol/clientInfo": {"name": "wire-test", "version": "1"},
                          "io.modelcontextprotocol/clientCapabilities": {}}}
    else:
        assert client.initialize(version)["result"]["protocolVersion"] == version
    asks = [("prompts/get", {"name": "nope"}, INVALID_PARAMS, "prompts"),
            ("tools/call", {"name": "nope", "arguments": {}}, INVALID_PARAMS, "recall"),
            ("resources/read", {"uri": "file:///nope"}, resource_code, "file:///nope")]
    for rid, (method, params, code, named) in enumerate(asks, 1):
        client.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, **meta}})
        answer = client.receive()
        assert answer["id"] == rid and answer["error"]["code"] == code, answer
        assert named in answer["error"]["message"]
    client.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call",       # and the server keeps serving
                 "params": {"name": "recall", "arguments": {"query": "harbor"}, **meta}})
    assert "hits" in json.loads(client.receive()["result"]["content"][0]["text"])
    assert client.close() == 0
    assert "Traceback" not in client.stderr and "│" not in client.stderr, client.stderr


def test_an_error_code_0_from_the_sdk_goes_out_as_internal_error():
    from trace_cli.mcp_errors import defined_codes
    reply = {"jsonrpc": "2.0", "id": 3, "error": {"code": 0, "message": "boom"}}
    assert defined_codes(reply)["error"] == {"code": -32603, "message": "boom"}
    fine = {"jsonrpc": "2.0", "id": 4, "error": {"code": -32601, "message": "Method not found"}}
    assert defined_codes(fine) is fine


def test_an_argument_a_tool_does_not_take_is_refused_naming_it_not_dropped(store_dir):
    client = Client(store_dir)
    client.initialize("2025-11-25")
    client.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",      # `sesion`: the filter misspelt
                 "params": {"name": "recall", "arguments": {"query": "harbor", "sesion": "nope"}}})
    result = client.receive()["result"]
    assert result["isError"] is True
    said = result["content"][0]["text"]
    assert said.startswith("trace: error: bad arguments for recall: `sesion`: no such argument")
    assert "session" in said.split("recall takes", 1)[1]
    client.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "digest"}})  # no arguments at all
    assert client.receive()["result"].get("isError") is not True
    assert client.close() == 0
