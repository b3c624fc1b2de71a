"""`trace hooks install|uninstall`: settings files that already hold other
hooks, MCP servers and options keep those bytes; an entry is never added
twice; uninstall restores the file byte for byte; a file that is not valid
JSON/TOML is refused naming its line, with nothing written."""
from __future__ import annotations

import json

import pytest
import tomlkit

from tests.helpers import cli

CLAUDE_SETTINGS = """{
    "model": "claude-opus-4",
    "env": {"HTTPS_PROXY": "http://proxy.local:3128", "NOTE": "caf\\u00e9 \\u2014 1.50"},
    "permissions": {
        "allow": ["Bash(npm run test:*)", "Read(~/.zshrc)"],
        "deny": []
    },
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "~/bin/check-bash.sh", "timeout": 5}]
            }
        ],
        "Stop": [
            {"hooks": [{"type": "command", "command": "notify-send 'claude is done'"}]}
        ]
    },
    "mcpServers": {
        "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"TOKEN": "x"}}
    },
    "cleanupPeriodDays": 30.0
}
"""

CODEX_CONFIG = """# my codex settings
model = "gpt-5-codex"   # the default
approval_policy = "on-request"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]   # keep

[profiles.fast]
model_reasoning_effort = "low"
"""


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def _removed_lines(before: str, after: str) -> list[str]:
    import difflib
    return [l for l in difflib.ndiff(before.splitlines(), after.splitlines()) if l.startswith("- ")]


def test_claude_code_install_keeps_other_hooks_and_mcp_servers_byte_identical_and_uninstall_restores_the_file(home):
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(CLAUDE_SETTINGS)
    assert cli("hooks", "install", "--agent", "claude-code").code == 0
    after = settings.read_text()
    assert _removed_lines(CLAUDE_SETTINGS, after) == []          # every original line is still there, unchanged
    for key in ("model", "env", "permissions", "mcpServers", "cleanupPeriodDays"):
        assert json.loads(after)[key] == json.loads(CLAUDE_SETTINGS)[key]
    assert after.count('"mcpServers": {\n        "github": {"command": "npx", "args": ["-y", '
                       '"@modelcontextprotocol/server-github"], "env": {"TOKEN": "x"}}') == 1
    hooks = json.loads(after)["hooks"]
    assert hooks["PreToolUse"] == json.loads(CLAUDE_SETTINGS)["hooks"]["PreToolUse"]
    assert json.loads(CLAUDE_SETTINGS)["hooks"]["Stop"][0] in hooks["Stop"]
    assert any("hooks run --agent claude-code Stop" in h["command"] for g in hooks["Stop"] for h in g["hooks"])
    assert [g["matcher"] for g in hooks["SessionStart"]] == ["compact"]
    assert {"SessionEnd", "PreCompact"} <= set(hooks) and "UserPromptSubmit" not in hooks
    assert (settings.parent / "settings.json.trace-backup").read_text() == CLAUDE_SETTINGS

    assert cli("hooks", "install", "--agent", "claude-code").code == 0         # again: nothing added twice
    assert settings.read_text() == after

    assert cli("hooks", "uninstall", "--agent", "claude-code").code == 0
    assert settings.read_text() == CLAUDE_SETTINGS


def test_recall_on_prompt_adds_a_gated_user_prompt_hook_and_a_new_path_replaces_the_old_entry(home, tmp_path):
    settings = home / ".claude" / "settings.json"
    assert cli("hooks", "install", "--agent", "claude-code").code == 0
    assert cli("--store", str(tmp_path / "elsewhere"), "hooks", "install", "--agent", "claude-code",
               "--recall-on-prompt", "--min-score", "0.7").code == 0
    hooks = json.loads(settings.read_text())["hooks"]
    stop = [h["command"] for g in hooks["Stop"] for h in g["hooks"]]
    assert len(stop) == 1 and str(tmp_path / "elsewhere") in stop[0]
    prompt = hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert prompt.endswith("UserPromptSubmit --min-score 0.7")
    assert cli("hooks", "uninstall", "--agent", "claude-code").code == 0
    assert not settings.exists()                          # it held nothing but ours


def test_dry_run_prints_the_diff_and_writes_nothing(home):
    run = cli("hooks", "install", "--agent", "claude-code", "--dry-run")
    assert run.code == 0 and run.out.startswith("---") and '+    "SessionEnd": [' in run.out
    assert not (home / ".claude").exists()


def test_project_scope_writes_the_projects_settings(home, tmp_path, monkeypatch):
    project = tmp_path / "repo"
    project.mkdir()
    monkeypatch.chdir(project)
    assert cli("hooks", "install", "--agent", "claude-code", "--scope", "project").code == 0
    assert (project / ".claude" / "settings.json").is_file() and not (home / ".claude").exists()


def test_invalid_settings_json_is_refused_naming_file_and_line_and_nothing_is_written(home):
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    broken = '{\n  "model": "opus",\n  "hooks": {,\n}\n'
    settings.write_text(broken)
    run = cli("hooks", "install", "--agent", "claude-code")
    assert run.code == 1 and f"{settings}:3: not valid JSON" in run.err
    assert settings.read_text() == broken and not (settings.parent / "settings.json.trace-backup").exists()


def test_codex_install_adds_hooks_json_and_the_feature_flag_keeping_config_toml_and_uninstall_restores_it(home):
    config = _codex_config(home, CODEX_CONFIG)
    assert cli("hooks", "install", "--agent", "codex", "--codex-version", "codex-cli 0.152.1").code == 0
    after = config.read_text()
    assert after.startswith(CODEX_CONFIG)                  # the user's file is a prefix: only added to
    assert tomlkit.parse(after)["features"]["hooks"] is True
    hooks = json.loads((home / ".codex" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"Stop", "PreCompact", "SessionStart"}
    assert hooks["SessionStart"][0]["matcher"] == "compact"
    assert cli("hooks", "install", "--agent", "codex", "--codex-version", "0.152.1").code == 0
    assert config.read_text() == after
    assert cli("hooks", "uninstall", "--agent", "codex").code == 0
    assert config.read_text() == CODEX_CONFIG
    assert not (home / ".codex" / "hooks.json").exists()


def test_codex_versions_choose_what_is_installed(home):
    assert cli("hooks", "install", "--agent", "codex", "--codex-version", "0.120.0").code == 0
    hooks = json.loads((home / ".codex" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"Stop"}                          # no compact hooks before 0.130
    assert tomlkit.parse((home / ".codex" / "config.toml").read_text())["features"]["codex_hooks"] is True
    assert cli("hooks", "uninstall", "--agent", "codex").code == 0
    assert not (home / ".codex" / "config.toml").exists()

    assert cli("hooks", "install", "--agent", "codex", "--codex-version", "0.100.2").code == 0
    notify = tomlkit.parse((home / ".codex" / "config.toml").read_text())["notify"]
    assert list(notify)[-3:] == ["--agent", "codex", "notify"]
    assert not (home / ".codex" / "hooks.json").exists()


def _codex_config(home, text: str):
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(text)
    return config


def test_codex_notify_owned_by_another_program_is_not_replaced(home):
    config = _codex_config(home, 'notify = ["python3", "/home/me/notify.py"]\n')
    run = cli("hooks", "install", "--agent", "codex", "--codex-version", "0.100.0")
    assert run.code == 1 and "already sets notify" in run.err
    assert config.read_text() == 'notify = ["python3", "/home/me/notify.py"]\n'


def test_invalid_config_toml_is_refused_naming_file_and_line(home):
    config = _codex_config(home, 'model = "x"\n[features\nhooks = true\n')
    run = cli("hooks", "install", "--agent", "codex", "--codex-version", "0.152.1")
    assert run.code == 1 and f"{config}:2: not valid TOML" in run.err
    assert not (home / ".codex" / "hooks.json").exists()


def test_an_explicit_hooks_false_is_left_alone_with_a_note(home):
    config = _codex_config(home, "[features]\nhooks = false\n")
    run = cli("hooks", "install", "--agent", "codex", "--codex-version", "0.152.1")
    assert run.code == 0 and "hooks = false" in run.err
    assert config.read_text() == "[features]\nhooks = false\n"


def test_unknown_agent_is_a_usage_error():
    run = cli("hooks", "install", "--agent", "cursor")
    assert run.code == 2 and "unknown --agent 'cursor'" in run.err


def test_installing_again_without_recall_on_prompt_takes_that_hook_away(home):
    settings = home / ".claude" / "settings.json"
    assert cli("hooks", "install", "--agent", "claude-code", "--recall-on-prompt").code == 0
    assert "UserPromptSubmit" in json.loads(settings.read_text())["hooks"]
    assert cli("hooks", "install", "--agent", "claude-code").code == 0
    assert "UserPromptSubmit" not in json.loads(settings.read_text())["hooks"]


def test_a_crlf_settings_file_keeps_its_line_endings_and_uninstall_restores_it(home, tmp_path):
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = CLAUDE_SETTINGS.replace("\n", "\r\n").encode()
    settings.write_bytes(original)
    assert cli("--store", str(tmp_path / "store"), "hooks", "install", "--agent", "claude-code").code == 0
    installed = settings.read_bytes()
    assert installed.count(b"\n") == installed.count(b"\r\n")          # what was added follows the file
    assert "Stop" in json.loads(installed)["hooks"] and b"hooks run --agent claude-code" in installed
    assert cli("hooks", "uninstall", "--agent", "claude-code").code == 0
    assert settings.read_bytes() == original


@pytest.mark.parametrize("text, where", [
    ('{\n  "model": "opus",\n  "hooks": null\n}\n', ":3: `hooks` is null, not an object"),
    ('{"hooks": {\n  "Stop": {"hooks": []}\n}}\n', ":2: `hooks.Stop` is an object, not a list"),
])
def test_hooks_of_the_wrong_shape_are_refused_not_shadowed(home, tmp_path, text, where):
    # adding beside them would write a second "hooks" (or "Stop") member, which the agent reads instead
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(text)
    run = cli("--store", str(tmp_path / "store"), "hooks", "install", "--agent", "claude-code")
    assert run.code == 1 and f"{settings}{where}" in run.err and "nothing was written" in run.err
    assert settings.read_text() == text and not settings.with_name("settings.json.trace-backup").exists()


@pytest.mark.parametrize("original", ['{\n  "hooks": {}\n}\n', "", '{"model": "opus"}'])
def test_uninstall_gives_back_a_file_whose_hooks_were_empty_byte_for_byte(home, tmp_path, original):
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(original)
    assert cli("--store", str(tmp_path / "store"), "hooks", "install", "--agent", "claude-code").code == 0
    assert cli("hooks", "uninstall", "--agent", "claude-code").code == 0
    assert settings.exists() and settings.read_text() == original


def test_uninstall_keeps_what_the_user_changed_after_install(home, tmp_path):
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n  "hooks": {}\n}\n')
    assert cli("--store", str(tmp_path / "store"), "hooks", "install", "--agent", "claude-code").code == 0
    edited = settings.read_text().replace('{\n  "hooks": {', '{\n  "model": "sonnet",\n  "hooks": {', 1)
    settings.write_text(edited)
    assert cli("hooks", "uninstall", "--agent", "claude-code").code == 0
    assert json.loads(settings.read_text()) == {"model": "sonnet"}      # not the backup from before the edit


@pytest.mark.parametrize("version", ["0.100.0", "0.152.0"])
def test_a_crlf_codex_config_keeps_its_line_endings_and_round_trips(home, tmp_path, version):
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    original = 'model = "o3"\r\n[tui]\r\nnotifications = true\r\n'.encode()
    config.write_bytes(original)
    assert cli("--store", str(tmp_path / "store"), "hooks", "install", "--agent", "codex",
               "--codex-version", version).code == 0
    installed = config.read_bytes()
    assert installed != original and installed.count(b"\n") == installed.count(b"\r\n")
    assert tomlkit.parse(installed.decode())["tui"]["notifications"] is True
    assert cli("hooks", "uninstall", "--agent", "codex").code == 0
    assert config.read_bytes() == original


def _settings_file(home, name: str, text: str):
    """`text` as the file `name` (under HOME) holds it before anything is installed."""
    path = home / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("original", ['{}\n', '', '  \n', '{"model": "opus"}'])
def test_uninstall_with_nothing_of_traces_installed_leaves_the_file_alone(home, original):
    settings = _settings_file(home, ".claude/settings.json", original)
    for _ in range(2):                                   # before any install, and again after a round trip
        assert cli("hooks", "uninstall", "--agent", "claude-code").code == 0
        assert settings.exists() and settings.read_text() == original
        assert cli("hooks", "install", "--agent", "claude-code").code == 0
        assert cli("hooks", "uninstall", "--agent", "claude-code").code == 0
        assert settings.read_text() == original


@pytest.mark.parametrize("original", ['{\n\t"hooks": {\n\t\t"Stop": []\n\t}\n}\n',
                                      '{"hooks": {"SessionStart": [], "Stop": []}, "model": "opus"}\n'])
def test_uninstall_gives_back_event_lists_the_user_left_empty(home, original):
    settings = _settings_file(home, ".claude/settings.json", original)
    assert cli("hooks", "install", "--agent", "claude-code").code == 0
    assert cli("hooks", "uninstall", "--agent", "claude-code").code == 0
    assert settings.exists() and settings.read_text() == original


def test_a_settings_file_naming_hooks_twice_is_edited_where_the_agent_reads_it(home):
    # JSON readers keep the last of two members of one name: ours must go there, once, and come out again
    original = '{"hooks": {}, "model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}\n'
    settings = _settings_file(home, ".claude/settings.json", original)
    assert cli("hooks", "install", "--agent", "claude-code").code == 0
    installed = settings.read_text()
    assert "hooks run --agent claude-code" in json.dumps(json.loads(installed)["hooks"]["SessionStart"])
    assert cli("hooks", "install", "--agent", "claude-code").code == 0 and settings.read_text() == installed
    assert cli("hooks", "uninstall", "--agent", "claude-code").code == 0
    assert settings.read_text() == original


@pytest.mark.parametrize("agent, name, text", [("claude-code", ".claude/settings.json", CLAUDE_SETTINGS),
                                               ("codex", ".codex/config.toml", CODEX_CONFIG)])
def test_a_settings_file_linked_from_elsewhere_stays_a_link(home, tmp_path, agent, name, text):
    kept = tmp_path / "dotfiles" / name.split("/")[-1]
    kept.parent.mkdir()
    kept.write_text(text)
    link = home / name
    link.parent.mkdir()
    link.symlink_to(kept)
    extra = ["--codex-version", "0.130.0"] if agent == "codex" else []
    assert cli("hooks", "install", "--agent", agent, *extra).code == 0
    assert link.is_symlink() and "hooks" in kept.read_text()
    assert cli("hooks", "uninstall", "--agent", agent).code == 0
    assert link.is_symlink() and kept.read_text() == text


def test_an_inline_features_table_is_not_edited_so_uninstall_leaves_nothing_behind(home):
    original = 'features = { web_search_request = true }\nmodel = "gpt-5"\n'
    config = _settings_file(home, ".codex/config.toml", original)
    run = cli("hooks", "install", "--agent", "codex", "--codex-version", "0.130.0")
    assert run.code == 0 and "inline table" in run.err and "hooks = true" in run.err
    assert config.read_text() == original
    assert cli("hooks", "uninstall", "--agent", "codex").code == 0
    assert config.read_text() == original and not (home / ".codex" / "hooks.json").exists()
