"""Global options work wherever a user types them, `--version` answers,
and a bare `trace` is help, not an error."""
from __future__ import annotations

import pytest
import typer

from tests.helpers import cli
from trace_cli.app import app
from trace_cli.global_options import hoist_global_options

ROOT = typer.main.get_command(app)


def test_store_after_the_subcommand_means_the_same_as_before(tmp_path, samples):
    store = tmp_path / "elsewhere"
    assert cli("ingest", str(samples / "openai"), "--store", str(store)).code == 0
    assert (store / "segments").is_dir()
    after = cli("stats", "--store", str(store))
    before = cli("--store", str(store), "stats")
    assert after.code == before.code == 0
    assert after.lines()[0]["events"] == before.lines()[0]["events"] > 0


def test_store_equals_form_and_quiet_after_the_subcommand(tmp_path, samples):
    store = tmp_path / "s"
    run = cli("ingest", str(samples / "openai"), f"--store={store}", "--quiet")
    assert run.code == 0 and (store / "segments").is_dir()


def test_a_commands_own_short_q_is_left_to_it():
    # `trace context -q TEXT` is --query, not --quiet.
    args = ["context", "--session", "s", "-q", "payments timeout"]
    assert hoist_global_options(args, ROOT) == args
    assert hoist_global_options(["stats", "-q"], ROOT) == ["-q", "stats"]


def test_values_of_the_commands_options_and_data_after_double_dash_stay_put():
    assert hoist_global_options(["show", "--session", "--store"], ROOT) == ["show", "--session", "--store"]
    assert hoist_global_options(["recall", "--", "--store", "x"], ROOT) == ["recall", "--", "--store", "x"]
    assert hoist_global_options(["--store", "a", "recall", "q"], ROOT) == ["--store", "a", "recall", "q"]


def test_json_before_a_command_that_has_it_goes_to_the_command():
    assert hoist_global_options(["--json", "recall", "x"], ROOT) == ["recall", "x", "--json"]
    assert hoist_global_options(["--json", "recall", "--", "--json"], ROOT) == ["recall", "--json", "--", "--json"]
    assert hoist_global_options(["--store", "--json", "recall", "x"], ROOT) == ["--store", "--json", "recall", "x"]
    assert hoist_global_options(["--json", "cron"], ROOT) == ["--json", "cron"]      # cron has none: Click says so
    assert cli("--json", "cron").code == 2


def test_store_without_its_directory_is_one_usage_error_not_a_command_named_by_accident():
    run = cli("stats", "--store")
    assert run.code == 2 and run.err == "trace: error: --store needs a value: --store DIR (the store directory)\n"


def test_version():
    run = cli("--version")
    assert run.code == 0
    assert run.out.startswith("trace ") and run.out.strip().split()[1][0].isdigit()


def test_bare_trace_prints_help_and_exits_zero():
    run = cli()
    assert run.code == 0
    assert "error" not in run.err


@pytest.mark.parametrize("group", ["state", "note", "hooks", "anatomy", "bench"])
def test_a_command_group_named_alone_prints_its_help_and_no_empty_error_line(group):
    run = cli(group)
    assert run.code == 0 and run.err == ""
    assert "Commands" in run.out and f"trace {group}" in run.out
