"""The rule-based extractor: how people state settings, decisions and
preferences in chat and in what tools do — and what is not a fact."""
from __future__ import annotations

import pytest

from reducers.fact_keys import norm_key, norm_value
from reducers.fact_rules import prose_facts
from reducers.fact_sources import FactExtractor, assignments


def one(text: str, speaker: str = "user"):
    found = prose_facts(text, speaker)
    assert len(found) == 1, (text, [(f.key, f.value) for f in found])
    f = found[0]
    return f.type, f.key, f.value


@pytest.mark.parametrize("text,expected", [
    ("Let's set the API timeout to 30s.", ("config", "api timeout", "30s")),
    ("Please configure the cache TTL as 300 seconds.", ("config", "cache ttl", "300 seconds")),
    ("Bump the request timeout from 30s to 60s for the slow endpoints.", ("config", "request timeout", "60s")),
    ("The default branch is now trunk.", ("config", "branch", "trunk")),
    ("The worker pool size has been raised to 16.", ("config", "worker pool size", "16")),
    ("Log level defaults to warn in production.", ("config", "log level", "warn")),
    ("The max retries should be 5.", ("config", "max retries", "5")),
    ("I switched the ORM to Drizzle.", ("config", "orm", "Drizzle")),
    ("FEATURE_FLAGS_URL=https://flags.internal/v2 is what staging reads.", ("config", "feature flags url", "https://flags.internal/v2")),
    ("We decided to use PostgreSQL for the database.", ("decision", "database", "PostgreSQL")),
    ("Let's go with Stripe for payments.", ("decision", "payments", "Stripe")),
    ("Going forward we'll use Postgres 16 as the primary datastore.", ("decision", "primary datastore", "Postgres 16")),
    ("We settled on pnpm.", ("decision", "decision: pnpm", "pnpm")),
    ("Decision: squash-merge every PR into main", ("decision", "decision: squash merge every pr", "squash-merge every PR into main")),
    ("I prefer tabs over spaces.", ("preference", "prefer: spaces vs tabs", "tabs")),
    ("Always use uv for Python installs.", ("preference", "prefer: use uv for python", "always use uv for Python installs")),
    ("Never push directly to main.", ("preference", "prefer: push directly to main", "never push directly to main")),
    ("The backend uses FastAPI.", ("architecture", "backend", "FastAPI")),
    ("The ingest service is built on Rust and Tokio.", ("architecture", "ingest service", "Rust")),
    ("The webhook endpoint is /api/stripe/webhook.", ("implementation", "webhook endpoint", "/api/stripe/webhook")),
    ("The rate limiter lives in src/middleware/rate_limit.ts.", ("implementation", "rate limiter", "src/middleware/rate_limit.ts")),
    ("There's a bug in the login form: submit does nothing on Safari.", ("issue", "issue: login form", "submit does nothing on Safari")),
    ("The staging deploy is broken.", ("issue", "issue: staging deploy", "broken")),
    ("Fixed the SSL handshake issue.", ("issue", "issue: ssl handshake", "fixed")),
    ("TODO: add refund logic", ("task_state", "task: add refund logic", "open")),
    ("Refund logic is not yet implemented.", ("task_state", "task: refund logic", "not done yet")),
])
def test_how_facts_are_said(text, expected):
    assert one(text) == expected


@pytest.mark.parametrize("text", [
    "Should we set the port to 8080?",                       # a question
    "If you set DEBUG to true, logging gets noisy.",          # a condition
    "Maybe we could use Kafka for the queue.",                # a hedge
    "I'll set the port to 3000.",                             # a plan, not done
    "Let me update the config to use the new key.",           # a plan
    "We did not switch the database to MySQL.",               # negated
    "Update the NavUser component to use those initials.",    # a purpose, not a value
    "The project is now ready for review.",                   # a state, not a setting
    "I need to change my flight to Newark.",                  # a wish
    "Change the flight to Newark.",                           # not a setting: a booking
    "```\nTIMEOUT = 30\nset x to y\n```",                     # code is not prose
    "> set the port to 1234",                                 # a quote
])
def test_what_is_not_a_fact(text):
    assert prose_facts(text, "user") == []


@pytest.mark.parametrize("text,expected", [
    ("The timeout should be 45s, not 30s.", ("config", "timeout", "45s", "30s")),
    ("No, the log level must be warn, not debug.", ("config", "log level", "warn", "debug")),
    ("No, use yarn, not npm.", ("decision", "npm", "yarn", "npm")),
    ("Revert the API timeout to 30s.", ("config", "api timeout", "30s", None)),
])
def test_a_correction_names_the_value_and_what_it_replaces(text, expected):
    found = prose_facts(text, "user")
    assert [(f.type, f.key, f.value, f.replaces) for f in found] == [expected]


@pytest.mark.parametrize("text", [
    "The timeout should be short, not long?",                 # a question
    "It should be fine, not a problem.",                      # no setting named
])
def test_what_a_correction_is_not(text):
    assert prose_facts(text, "user") == []


@pytest.mark.parametrize("text,expected", [
    ("We decided to deploy on Fridays only.", ("decision", "decision: deploy on fridays only", "deploy on Fridays only")),
    ("I've decided to run the migration in two steps because of the locks.",
     ("decision", "decision: run the migration in", "run the migration in two steps")),
])
def test_a_decision_to_do_something_keeps_the_whole_of_what_is_done(text, expected):
    assert one(text) == expected                 # not cut at its first preposition ("deploy")


@pytest.mark.parametrize("text,expected", [
    ("Set DATABASE_URL to postgres://db-02/app.", ("config", "database url", "postgres://db-02/app")),
    ("Change the API base URL to http://localhost:8080/api.", ("config", "api base url", "http://localhost:8080/api")),
    ("The redis url is now redis://cache:6379/0.", ("config", "redis url", "redis://cache:6379/0")),
    ("Set the backup window to 02:30.", ("config", "backup window", "02:30")),
    ("Bump the proxy address from 10.0.0.1:8080 to 10.0.0.2:8080.", ("config", "proxy address", "10.0.0.2:8080")),
    ("Set the log level to debug: the errors are rare.", ("config", "log level", "debug")),
])
def test_a_value_holding_a_colon_is_kept_whole(text, expected):
    assert one(text) == expected                  # a URL, a time, host:port; a colon before a space still ends it


@pytest.mark.parametrize("text,speaker,expected", [
    ("Set the port to 8080 and the host to 0.0.0.0.", "user", [("port", "8080"), ("host", "0.0.0.0")]),
    ("I changed the retry count from 3 to 5 and the timeout from 10s to 30s.", "assistant",
     [("retry count", "5"), ("timeout", "30s")]),
    ("Set the port to 8080 and the tests to run nightly.", "user", [("port", "8080")]),   # not a setting
    ("Set the port to 8080 and then restart the server.", "user", [("port", "8080")]),
])
def test_a_second_setting_that_shares_the_first_ones_verb_is_found(text, speaker, expected):
    assert [(f.key, f.value) for f in prose_facts(text, speaker)] == expected


def test_two_facts_in_one_sentence_are_both_found():
    found = prose_facts("Switch the deploy region to us-east-2 and increase max retries to 5.", "user")
    assert [(f.key, f.value) for f in found] == [("deploy region", "us-east-2"), ("max retries", "5")]


def test_keys_and_values_compare_loosely():
    assert norm_key("DATABASE_URL") == norm_key("the database URL") == norm_key("`database-url`") == "database url"
    assert norm_value("60 seconds") == norm_value("60s") == norm_value("60 sec") == "60s"
    assert norm_value("512 MB") == norm_value("512mb")
    assert norm_value("`Redis`") == norm_value("redis")


def _call(name, tool_input, call_id="c1", seq=1):
    return {"kind": "tool_call", "seq": seq, "id": f"e{seq}", "session_id": "s", "ts": "2026-05-01T00:00:00Z",
            "text": "", "tool": {"name": name, "call_id": call_id, "input": tool_input}}


def _result(text, call_id="c1", seq=2, error=False):
    return {"kind": "tool_result", "seq": seq, "id": f"e{seq}", "session_id": "s", "ts": "2026-05-01T00:00:01Z",
            "text": text, "tool": {"call_id": call_id, "is_error": error}}


def _facts(*events):
    x = FactExtractor()
    return [(f.rule, f.key, f.value, f.delete) for e in events for f in x.facts(e)]


def test_facts_from_config_files_wait_for_the_edit_to_succeed():
    edit = _call("Edit", {"file_path": "/app/.env.production", "old_string": "API_URL=http://a\nDEBUG=1\n",
                          "new_string": "API_URL=https://b\n"})
    assert _facts(edit, _result("error: file changed", error=True)) == []
    assert _facts(edit, _result("updated")) == [("file-edit", "api url", "https://b", False),
                                                 ("file-edit", "debug", "removed", True)]
    toml = _call("Write", {"file_path": "conf/app.toml", "content": "[server]\nport = 9000\nname = \"api\"\n"})
    assert _facts(toml, _result("ok")) == [("file-edit", "server.port", "9000", False),
                                            ("file-edit", "server.name", "api", False)]
    assert assignments("db:\n  pool:\n    size: 20\n  host: pg\n", "yaml") == {"db.pool.size": "20", "db.host": "pg"}


def test_facts_from_commands_patches_and_diff_output():
    cmd = _call("Bash", {"command": "export NODE_ENV=production && PORT=8080 npm start; git config user.email dev@x.io"})
    assert _facts(cmd, _result("ok")) == [("command-env", "node env", "production", False),
                                          ("command-env", "port", "8080", False),
                                          ("git-config", "git user.email", "dev@x.io", False)]
    deps = _call("Bash", {"command": "pnpm add zod@3.23.8 && npm uninstall left-pad"})
    assert _facts(deps, _result("ok")) == [("package", "dependency zod", "3.23.8", False),
                                           ("package", "dependency left pad", "removed", True)]
    patch = _call("apply_patch", "*** Begin Patch\n*** Update File: deploy/.env\n@@\n-REPLICAS=2\n+REPLICAS=4\n*** End Patch")
    assert _facts(patch, _result("Success")) == [("patch", "replicas", "4", False)]
    diff = _call("Bash", {"command": "git diff"})
    out = "diff --git a/.env b/.env\n--- a/.env\n+++ b/.env\n@@ -1,2 +1,2 @@\n-REGION=eu\n+REGION=us\n"
    assert _facts(diff, _result(out)) == [("diff-output", "region", "us", False)]


@pytest.mark.parametrize("command", ["cat .env", "cat ./deploy/.env.production", "cd /srv/app && cat config/app.ini",
                                     "bash -lc 'cat .env'", "less -N .env"])
def test_a_config_file_printed_by_a_shell_command_is_read_like_a_read_tools(command):
    # `cat .env` in a shell shows the file as a Read tool's result does
    text = "DATABASE_URL=postgres://db-b/shop\nLOG_LEVEL=debug\n" if "ini" not in command else "[db]\nhost = db-b\n"
    want = ([("file-read", "database url", "postgres://db-b/shop", False), ("file-read", "log level", "debug", False)]
            if "ini" not in command else [("file-read", "db.host", "db-b", False)])
    assert _facts(_call("Bash", {"command": command}), _result(text)) == want


@pytest.mark.parametrize("command", ["cat .env | grep -v SECRET > /tmp/x", "cat a.env b.env", "cat README.md",
                                     "echo cat .env", "cat .env && rm .env"])
def test_a_shell_command_that_does_more_than_print_one_config_file_is_not_a_read(command):
    assert _facts(_call("Bash", {"command": command}), _result("PORT=1\n")) == []


def test_facts_from_todo_lists_structured_tools_and_answers():
    todo = _call("TodoWrite", {"todos": [{"content": "Write the migration", "status": "completed"},
                                         {"content": "Backfill old rows", "status": "pending"}]})
    assert _facts(todo) == [("todo", "task: write the migration", "completed", False),
                            ("todo", "task: backfill old rows", "pending", False)]
    update = _call("update_order_address", {"order_id": "A-17", "city": "Lyon", "zip": "69001", "reason": "moved"})
    assert _facts(update, _result('{"ok": true}')) == [("tool-update", "order a 17 city", "Lyon", False),
                                                        ("tool-update", "order a 17 zip", "69001", False)]
    cancel = _call("cancel_order", {"order_id": "A-17"}, call_id="c2", seq=3)
    assert _facts(cancel, _result("cancelled", call_id="c2", seq=4)) == [("tool-remove", "order a 17", "removed", True)]
    ask = _call("AskUserQuestion", {"questions": []}, call_id="q", seq=5)
    answer = _result('User has answered your questions: "Which database should we use?"="SQLite". Continue.',
                     call_id="q", seq=6)
    assert _facts(ask, answer) == [("answer", "database", "SQLite", False)]


def test_a_call_waiting_for_its_result_survives_the_extractors_state():
    x = FactExtractor()
    x.facts(_call("Write", {"file_path": ".env", "content": "PORT=1\n"}))
    resumed = FactExtractor(x.state())
    assert [(f.key, f.value) for f in resumed.facts(_result("ok"))] == [("port", "1")]


@pytest.mark.parametrize("text, expected", [
    ("For the message queue we'll go with RabbitMQ.", ("decision", "message queue", "RabbitMQ")),
    ("We decided to use NATS for the message queue after all.", ("decision", "message queue", "NATS")),
    ("We're standardizing on pnpm as the package manager.", ("decision", "package manager", "pnpm")),
    ("Going with Terraform for infra.", ("decision", "infra", "Terraform")),
    ("The staging database host is db-staging-01.", ("config", "staging database host", "db-staging-01")),
    ("Also the staging database host moved to db-staging-02.", ("config", "staging database host", "db-staging-02")),
    ("The API timeout was raised to 30s.", ("config", "api timeout", "30s")),
    ("Let's make the retry count 5.", ("config", "retry count", "5")),
    ("Update: cache TTL is 10 minutes now.", ("config", "cache ttl", "10 minutes")),
    ("Max connections: 500", ("config", "max connections", "500")),
])
def test_subjects_fronted_stated_plainly_or_told_in_the_past_keep_their_key(text, expected):
    found = [(f.type, f.key, f.value) for f in prose_facts(text, "user")]
    assert found == [expected]


@pytest.mark.parametrize("text, expected", [
    ("The deploy target is now Render, not Fly.io.", ("config", "deploy target", "Render")),
    ("The port is 8080, not 80.", ("config", "port", "8080")),
    ("Set the timeout to 30 seconds, not 60.", ("config", "timeout", "30 seconds")),
    ("The cache TTL is 60 seconds — not 600.", ("config", "cache ttl", "60 seconds")),
])
def test_a_setting_corrected_with_a_trailing_not_keeps_its_new_value(text, expected):
    # the "not" names only the value being corrected; it does not negate the setting
    assert [(f.type, f.key, f.value) for f in prose_facts(text, "user")] == [expected]


@pytest.mark.parametrize("text", ["We are not moving the deploy target to Heroku, not now.",
                                  "The queue is empty, not full.", "Don't set the pool size to 50, not yet."])
def test_a_trailing_not_does_not_lift_a_negation_earlier_in_the_sentence(text):
    assert [f for f in prose_facts(text, "user") if f.type == "config"] == []


@pytest.mark.parametrize("text", [
    "The queue is empty.", "The cache is stale now.", "The main branch is protected.", "For now, use the old client.",
    "Make the tests pass.", "Step 2: Run the tests", ".env: apps/web/.env", "I moved to Berlin last year.",
])
def test_states_listings_and_asides_are_not_settings(text):
    assert [f for f in prose_facts(text, "user") if f.type == "config" or f.key == "now"] == []
