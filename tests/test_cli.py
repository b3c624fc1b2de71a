"""The command line contract: JSON Lines when piped, exit codes, one-line
errors, byte-exact artifacts, and no traceback for anything a user types."""
from __future__ import annotations

import json
import os

import orjson
import pytest

import stores.ingest.big_lines
import stores.ingest.sources
from stores.log.segments import list_segments
from tests.helpers import cli, openai_conversations


def _tool_output_conversation(path, output: str):
    path.write_text(json.dumps({"messages": [
        {"role": "user", "content": "run it"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                              "function": {"name": "sh", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": output},
        {"role": "assistant", "content": "done"}]}, ensure_ascii=False) + "\n")
    return path


def test_ingest_prints_one_json_line_per_input_and_exits_0(tmp_path):
    a = openai_conversations(tmp_path / "a.jsonl", 2, prefix="a")
    b = openai_conversations(tmp_path / "b.jsonl", 1, prefix="b")
    run = cli("ingest", str(a), str(b))
    assert run.code == 0, run.err
    lines = run.lines()
    assert [os.path.basename(l["source"]) for l in lines] == ["a.jsonl", "b.jsonl"]
    assert all({"source", "format", "session_id", "added", "skipped", "errors"} <= set(l) for l in lines)


def test_bad_lines_exit_1_with_file_line_reason_on_stderr(tmp_path):
    src = openai_conversations(tmp_path / "a.jsonl", 2)
    with open(src, "a") as f:
        f.write("{oops\n")
    run = cli("ingest", str(src))
    assert run.code == 1
    assert f"{src}:3: not valid JSON" in run.err
    assert run.lines()[0]["added"] > 0 and run.lines()[0]["errors"] == 1
    assert "Traceback" not in run.err


def test_usage_errors_exit_2():
    assert cli("ingest", "--format", "nonsense", "x").code == 2
    assert cli("show").code == 2
    assert cli("show", "12..3").code == 2
    assert cli("no-such-command").code == 2


def test_a_usage_error_is_one_line_that_points_at_help():
    run = cli("ingest", "--no-such-option")
    assert run.code == 2
    assert run.err == "trace: error: No such option: --no-such-option (see `trace ingest --help`)\n"


def test_a_store_path_that_is_a_file_is_a_usage_error_naming_it(tmp_path):
    not_a_dir = tmp_path / "afile"
    not_a_dir.write_text("")
    for command in (("ingest", str(openai_conversations(tmp_path / "a.jsonl", 1))), ("stats",)):
        run = cli("--store", str(not_a_dir), *command)
        assert run.code == 2
        assert run.err == f"trace: error: the store {not_a_dir} is a file, not a directory; point --store at a directory\n"


def test_a_bad_setting_in_the_environment_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACE_SEGMENT_BYTES", "64MB")
    run = cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 1)))
    assert run.code == 2 and run.err.count("\n") == 1 and "TRACE_SEGMENT_BYTES" in run.err


def test_a_path_the_system_refuses_is_one_line_without_a_bug_report_plea(tmp_path):
    a_file = tmp_path / "afile"
    a_file.write_text("")
    run = cli("--store", str(a_file / "store"), "ingest", str(openai_conversations(tmp_path / "a.jsonl", 1)))
    assert run.code == 1 and run.err.count("\n") == 1
    assert "Not a directory" in run.err and "please report" not in run.err


def test_show_by_seq_range_and_id_returns_events_verbatim(tmp_path):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 1)))
    events = cli("show", "1..3").lines()
    assert [e["seq"] for e in events] == [1, 2, 3]
    by_id = cli("show", events[1]["id"]).lines()
    assert by_id == [events[1]]
    assert cli("show", "999").code == 1


def test_show_full_returns_the_original_bytes_exactly(tmp_path):
    output = "".join(f"{i:06d} résultat \"quoted\" \\ tab\there\n" for i in range(4000)) + "no newline at end"
    cli("ingest", str(_tool_output_conversation(tmp_path / "t.jsonl", output)))
    preview = cli("show", "3").lines()[0]
    assert preview["artifact"]["bytes"] == len(output.encode()) and "tokens truncated" in preview["text"]
    raw = cli("show", "3", "--full")
    assert raw.code == 0 and raw.out == output
    as_json = cli("show", "3", "--full", "--json").lines()[0]
    assert as_json["text"] == output and as_json["full"] is True


def test_a_huge_single_line_output_streams_to_an_artifact(tmp_path, monkeypatch):
    # Same code path as a 100 MB line (`make soak` runs that one), scaled down
    # (read in pieces smaller than the line, or it is never "big").
    monkeypatch.setattr(stores.ingest.sources, "_READ_CHUNK", 4096)
    monkeypatch.setattr(stores.ingest.sources, "BIG_LINE_BYTES", 20_000)
    monkeypatch.setattr(stores.ingest.big_lines, "SPILL_CHARS", 5_000)
    monkeypatch.setattr(stores.ingest.big_lines, "_CHUNK", 4096)
    output = "".join(f"line {i}: \"x\" \\ é 🙂\n" for i in range(5000)) + "api_key=sk-" + "Q" * 40 + "\n"
    run = cli("ingest", str(_tool_output_conversation(tmp_path / "t.jsonl", output)))
    assert run.code == 0, run.err
    assert run.lines()[0]["artifacts"] == 1 and run.lines()[0]["redacted"] == 1
    full = cli("show", "3", "--full").out
    assert full == output.replace("sk-" + "Q" * 40, "[REDACTED:openai_key]")
    assert cli("verify").code == 0


def test_stats_reports_kinds_sessions_segments(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACE_SEGMENT_BYTES", "2000")
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 3, tool_every=1)))
    (s,) = cli("stats").lines()
    assert s["events"] == sum(s["by_kind"].values()) and s["sessions"] == 3
    assert s["segments"] > 1 and s["by_kind"]["tool_call"] == s["by_kind"]["tool_result"] == 9


@pytest.mark.parametrize("argv", [["stats"], ["sessions"], ["export"], ["note", "list"]], ids=" ".join)
def test_a_store_that_is_not_there_is_one_line_naming_it_not_an_empty_answer(tmp_path, argv):
    """A mistyped --store or TRACE_HOME must not read as an empty store."""
    run = cli("--store", str(tmp_path / "typo"), *argv)
    assert run.code == 1 and run.out == ""
    assert run.err == (f"trace: error: no TRACE store at {tmp_path / 'typo'}; create one with `trace ingest PATH` "
                       f"(or point --store / TRACE_HOME at an existing store)\n")
    assert not (tmp_path / "typo").exists()


def test_verify_exits_5_and_names_segment_and_line(tmp_path, trace_home):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 1)))
    seg = list_segments(trace_home / "segments")[0].path
    lines = seg.read_bytes().splitlines(keepends=True)
    event = orjson.loads(lines[2])
    event["text"] = "rewritten history"
    lines[2] = orjson.dumps(event) + b"\n"
    seg.write_bytes(b"".join(lines))
    run = cli("verify")
    assert run.code == 5
    assert f"{seg.name}:3:" in run.err
    assert run.lines()[0]["ok"] is False


def test_an_unexpected_error_is_one_line_and_trace_debug_shows_the_traceback(tmp_path, monkeypatch):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 1)))

    def boom(*a, **k):
        raise RuntimeError("disk on fire")
    monkeypatch.setattr("stores.store.Store.stats", boom)
    run = cli("stats")
    assert run.code == 1 and run.err.count("\n") == 1 and "disk on fire" in run.err and "TRACE_DEBUG" in run.err
    monkeypatch.setenv("TRACE_DEBUG", "1")
    assert "Traceback" in cli("stats").err


def test_help_explains_every_command():
    run = cli("--help")
    for command in ("ingest", "show", "export", "stats", "verify", "bench"):
        assert command in run.out
    assert "cron" in cli("ingest", "--help").out


def test_each_command_summary_in_the_list_is_a_whole_sentence():
    # The command list shows a help text's first paragraph; one that ends
    # mid-thought ("Register it with your agent, e.g.") needs a short_help.
    import click
    import typer.main
    from trace_cli.app import app
    group = typer.main.get_command(app)
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        summary = command.short_help or (command.help or "").split("\n\n")[0]
        summary = summary.rstrip()
        assert summary.endswith((".", ")")) and not summary.endswith(("e.g.", "i.e.")), (name, summary[-60:])


@pytest.mark.parametrize("query", ["", "   ", "\x00", "🙂" * 50, "../../etc/passwd"])
def test_odd_selectors_never_raise(query, tmp_path):
    cli("ingest", str(openai_conversations(tmp_path / "a.jsonl", 1)))
    run = cli("show", query)
    assert run.code in (1, 2) and "Traceback" not in run.err


def test_size_aware_reconciler_drops_repeated_output_once_over_budget(tmp_path, monkeypatch):
    import json as _json
    turns = []
    for i in range(6):                       # the same directory listing, read six times
        turns += [{"role": "user", "content": f"list it again ({i})"},
                  {"role": "assistant", "tool_calls": [{"id": f"c{i}", "type": "function",
                                                        "function": {"name": "ls", "arguments": "{}"}}]},
                  {"role": "tool", "tool_call_id": f"c{i}", "content": "a.txt\nb.txt\nc.txt\n" * 20}]
    (tmp_path / "s.json").write_text(_json.dumps(turns))
    monkeypatch.setenv("TRACE_RECONCILE", "size")
    monkeypatch.setenv("TRACE_RECONCILE_BUDGET", "50")
    (result,) = cli("ingest", str(tmp_path / "s.json")).lines()
    assert result["dropped"] > 0 and result["added"] + result["dropped"] == len(turns)
    kinds = [e["kind"] for e in cli("export").lines()]
    assert kinds.count("user") == 6 and kinds.count("tool_call") == kinds.count("tool_result")
    monkeypatch.setenv("TRACE_RECONCILE", "psychic")
    assert cli("ingest", str(tmp_path / "s.json")).code == 2


def test_text_arguments_that_are_not_utf8_are_a_usage_error():
    run = cli("show", "--session", b"caf\xe9".decode("utf-8", "surrogateescape"))
    assert run.code == 2
    assert run.err == "trace: error: argument 'caf\\xe9' is not valid UTF-8; pass text in UTF-8\n"


@pytest.mark.parametrize("args, env", [(("ingest", "--wait", "nan", "x"), {}),
                                       (("ingest", "x"), {"TRACE_SEGMENT_BYTES": "0"})])
def test_settings_that_cannot_work_are_usage_errors(args, env, monkeypatch):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    run = cli(*args)
    assert run.code == 2 and run.err.count("\n") == 1


def test_ingest_goes_on_when_the_reader_of_its_output_leaves(tmp_path, monkeypatch):
    # `trace ingest DIR | head -1`: the first line is read, then the pipe closes
    import trace_cli.output as output
    (tmp_path / "in").mkdir()
    for i in range(5):
        openai_conversations(tmp_path / "in" / f"c{i}.jsonl", 2, prefix=f"c{i}")
    real_write, written = output._write, []

    def closing_pipe(data: bytes) -> None:
        if written:
            raise output.ReaderGone()
        written.append(data)
        real_write(data)
    monkeypatch.setattr(output, "_write", closing_pipe)
    run = cli("ingest", str(tmp_path / "in"))
    monkeypatch.setattr(output, "_write", real_write)
    assert run.code == 0 and len(written) == 1
    assert cli("stats").lines()[0]["sessions"] == 10          # every file ingested, not just the first


def test_a_terminal_table_shows_markup_and_control_characters_as_plain_text():
    import io
    from rich.console import Console
    from trace_cli.output import Output
    out = Output()
    out._out_console = Console(file=io.StringIO(), width=80, color_system=None)
    out.table(["session"], [["[/]weird"], ["red \x1b[31malert"]], title="[bold]x[/bold")
    shown = out._out_console.file.getvalue()
    assert "[/]weird" in shown and "red [31malert" in shown and "\x1b" not in shown


@pytest.mark.parametrize("case", ["missing", "empty", "unknown format", "strict"])
def test_bad_input_through_the_command_line_is_one_line_and_writes_nothing(case, tmp_path):
    path = tmp_path / "in.jsonl"
    args = ["ingest", str(path)]
    if case == "empty":
        path.write_bytes(b"")
    elif case == "unknown format":
        path.write_text('{"kind_of": "thing"}\n{"kind_of": "other"}\n')
    elif case == "strict":
        openai_conversations(path, 3)
        with open(path, "a") as f:
            f.write("{oops\n")
        args.append("--strict")
    run = cli(*args)
    expected_code, expected_lines = {"missing": (1, 1), "empty": (3, 1), "unknown format": (1, 1),
                                     "strict": (1, 2)}[case]            # strict: the bad line, then the verdict
    assert run.code == expected_code and run.err.count("\n") == expected_lines, run.err
    assert "Traceback" not in run.err and "please report" not in run.err
    assert cli("stats").lines()[0]["events"] == 0


@pytest.mark.parametrize("argv", [
    ("context", "--session", "s", "--recall-min-score", "50"),
    ("hooks", "install", "--agent", "claude", "--recall-on-prompt", "--min-score", "3", "--dry-run"),
])
def test_a_score_gate_above_one_is_a_usage_error_not_silence(argv):
    # Scores are probabilities: a gate over 1 would keep nothing, without a word.
    run = cli(*argv)
    assert run.code == 2 and "0.0<=x<=1.0" in run.err
