"""The pure merge of Retrace's hook entries into Claude Code's and Gemini CLI's settings
(``retrace.app.hooks.install``): table tests for each rule, properties over generated documents."""

from __future__ import annotations

import copy
import json
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrace.app.hooks.claude_code import INSTALL as CLAUDE_CODE
from retrace.app.hooks.gemini_cli import INSTALL as GEMINI_CLI
from retrace.app.hooks.install import (
    HOOK_NAME,
    AgentInstall,
    SettingsShapeError,
    hook_command,
    is_ours,
    merge,
    remove,
)
from retrace.app.hooks.registry import INSTALLS, install_for

PY = "/opt/py env/bin/python3"
CMD = {spec.name: hook_command(spec, PY) for spec in INSTALLS.values()}
SPECS = list(INSTALLS.values())
IDS = [spec.name for spec in SPECS]

USER_HOOK = {"type": "command", "command": "npx prettier --write", "timeout": 5}


def _ours(doc: dict[str, Any], spec: AgentInstall) -> list[tuple[str, dict[str, Any]]]:
    return [
        (event, hook)
        for event, groups in doc.get("hooks", {}).items()
        if isinstance(groups, list)
        for group in groups
        if isinstance(group, dict)
        for hook in group.get("hooks", [])
        if is_ours(hook, spec.name)
    ]


# ---------------------------------------------------------------- the command


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
@pytest.mark.parametrize(
    "python", ["/usr/bin/python3", "/opt/my env/bin/python", "/tmp/it's/py", "/a/$(x)/py"]
)
def test_command_runs_the_interpreter_quoted_for_a_posix_shell(spec: AgentInstall, python: str) -> None:
    command = hook_command(spec, python)
    words = shlex.split(command)
    assert words[0] == python
    assert words[1:6] == ["-P", "-m", "retrace", "hook", spec.name]
    assert words[6] == "--workspace"
    assert is_ours({"command": command}, spec.name)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_command_names_the_project_folder_the_agent_sets_else_nothing(
    spec: AgentInstall, tmp_path: Path
) -> None:
    stand_in = tmp_path / "my env" / "python"  # a stand-in interpreter that prints its arguments
    stand_in.parent.mkdir()
    stand_in.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    stand_in.chmod(0o755)
    command = hook_command(spec, str(stand_in))
    env = {"PATH": "/usr/bin:/bin", spec.project_dir_variable: "/proj with space"}
    out = subprocess.run(["sh", "-c", command], env=env, capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "/proj with space"
    env.pop(spec.project_dir_variable)
    out = subprocess.run(["sh", "-c", command], env=env, capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == ""  # empty: ``retrace hook`` falls back to the event's cwd


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_command_survives_gemini_clis_textual_replacement_of_the_bare_variables(spec: AgentInstall) -> None:
    # Gemini CLI rewrites `$GEMINI_PROJECT_DIR` and `$CLAUDE_PROJECT_DIR` (bare) in a hook command.
    command = hook_command(spec, "/py")
    assert re.search(r"\$(GEMINI|CLAUDE)_PROJECT_DIR", command) is None


@pytest.mark.parametrize(
    ("command", "agent", "expected"),
    [
        ("'/x/python' -P -m retrace hook claude-code --workspace .", "claude-code", True),
        ("/old/python3 -m retrace hook claude-code", "claude-code", True),
        ("python -m  retrace   hook\tclaude-code", "claude-code", True),
        ("'/x/python' -m retrace hook gemini-cli", "claude-code", False),
        ("'/x/python' -m retrace hook claude-codex", "claude-code", False),
        ("echo -m retrace hook claude-code-ish", "claude-code", False),
        ("npx prettier --write", "claude-code", False),
        ("python -m retracer hook claude-code", "claude-code", False),
    ],
)
def test_retrace_entries_are_recognised_by_their_command(command: str, agent: str, expected: bool) -> None:
    assert is_ours({"type": "command", "command": command}, agent) is expected


@pytest.mark.parametrize("hook", [None, "x", 3, [], {"command": 3}, {"type": "command"}])
def test_odd_hook_entries_are_never_ours(hook: object) -> None:
    assert not is_ours(hook, "claude-code")


def test_unknown_agent_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(SettingsShapeError, match="claude-code, gemini-cli"):
        install_for("cline")


# ---------------------------------------------------------------- merge: the table


def test_claude_code_empty_document_gets_the_documented_shape() -> None:
    plan = merge({}, CLAUDE_CODE, CMD["claude-code"])
    hook = {"type": "command", "command": CMD["claude-code"], "timeout": 10}
    assert plan.action == "added"
    assert plan.doc == {
        "hooks": {
            "SessionStart": [{"hooks": [hook]}],
            "UserPromptSubmit": [{"hooks": [hook]}],
            "PreToolUse": [{"matcher": "*", "hooks": [hook]}],
            "PostToolUse": [{"matcher": "*", "hooks": [hook]}],
            "PostToolUseFailure": [{"matcher": "*", "hooks": [hook]}],
            "Stop": [{"hooks": [hook]}],
            "StopFailure": [{"hooks": [hook]}],
            "SessionEnd": [{"hooks": [hook]}],
        }
    }


def test_gemini_cli_empty_document_gets_milliseconds_a_name_and_the_hooks_switch() -> None:
    plan = merge({}, GEMINI_CLI, CMD["gemini-cli"])
    assert plan.doc is not None
    assert plan.doc["hooksConfig"] == {"enabled": True}
    assert list(plan.doc["hooks"]) == [
        "SessionStart",
        "BeforeAgent",
        "BeforeTool",
        "AfterTool",
        "AfterAgent",
        "SessionEnd",
    ]
    group = plan.doc["hooks"]["AfterTool"][0]
    assert group["matcher"] == "*"
    assert group["hooks"][0]["timeout"] == 10_000
    assert group["hooks"][0]["name"] == HOOK_NAME
    assert "matcher" not in plan.doc["hooks"]["BeforeAgent"][0]


def test_other_keys_events_groups_and_hooks_stay_in_order() -> None:
    doc = {
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {
            "PostToolUse": [{"matcher": "Write|Edit", "hooks": [USER_HOOK]}],
            "Notification": [{"hooks": [USER_HOOK]}],
        },
        "env": {"A": "1"},
    }
    before = copy.deepcopy(doc)
    plan = merge(doc, CLAUDE_CODE, CMD["claude-code"])
    assert doc == before  # the input is never mutated
    assert plan.doc is not None
    assert list(plan.doc) == ["permissions", "hooks", "env"]
    assert list(plan.doc["hooks"]) == [
        "PostToolUse",
        "Notification",
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUseFailure",
        "Stop",
        "StopFailure",
        "SessionEnd",
    ]
    assert plan.doc["hooks"]["PostToolUse"][0] == {"matcher": "Write|Edit", "hooks": [USER_HOOK]}
    assert is_ours(plan.doc["hooks"]["PostToolUse"][1]["hooks"][0], "claude-code")
    assert plan.doc["hooks"]["Notification"] == [{"hooks": [USER_HOOK]}]


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_merge_twice_is_unchanged(spec: AgentInstall) -> None:
    first = merge({"hooks": {spec.events[0].name: [{"hooks": [USER_HOOK]}]}}, spec, CMD[spec.name])
    assert first.doc is not None
    second = merge(first.doc, spec, CMD[spec.name])
    assert second.action == "unchanged"
    assert second.doc == first.doc


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_a_stale_entry_from_another_interpreter_is_replaced_not_duplicated(spec: AgentInstall) -> None:
    old = merge({}, spec, hook_command(spec, "/old/venv/bin/python")).doc
    assert old is not None
    plan = merge(old, spec, CMD[spec.name])
    assert plan.action == "updated"
    assert plan.doc is not None
    ours = _ours(plan.doc, spec)
    assert [event for event, _ in ours] == spec.event_names
    assert {hook["command"] for _, hook in ours} == {CMD[spec.name]}


def test_retrace_entry_sharing_a_users_group_leaves_the_users_hook_there() -> None:
    doc = {
        "hooks": {
            "PostToolUse": [
                {"matcher": "*", "hooks": [USER_HOOK, {"command": "/old/py -m retrace hook claude-code"}]}
            ]
        }
    }
    plan = merge(doc, CLAUDE_CODE, CMD["claude-code"])
    assert plan.action == "updated"
    assert plan.doc is not None
    groups = plan.doc["hooks"]["PostToolUse"]
    assert groups[0] == {"matcher": "*", "hooks": [USER_HOOK]}
    assert len(_ours(plan.doc, CLAUDE_CODE)) == len(CLAUDE_CODE.events)


def test_retrace_entry_under_an_event_it_no_longer_uses_is_taken_out() -> None:
    doc = {"hooks": {"PreCompact": [{"hooks": [{"command": "py -m retrace hook claude-code"}]}]}}
    plan = merge(doc, CLAUDE_CODE, CMD["claude-code"])
    assert plan.doc is not None
    assert "PreCompact" not in plan.doc["hooks"]
    assert plan.action == "updated"


def test_another_agents_retrace_entry_is_not_touched() -> None:
    gemini = {"command": "py -m retrace hook gemini-cli"}
    doc = {"hooks": {"Stop": [{"hooks": [gemini]}]}}
    plan = merge(doc, CLAUDE_CODE, CMD["claude-code"])
    assert plan.doc is not None
    assert plan.doc["hooks"]["Stop"][0] == {"hooks": [gemini]}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"hooks": []}, "'hooks' .* is not an object"),
        ({"hooks": "on"}, "'hooks' .* is not an object"),
        ({"hooks": None}, "'hooks' .* is not an object"),
        ({"hooks": {"Stop": {"hooks": []}}}, r"'hooks\.Stop' .* is not a list"),
        ({"hooks": {"PostToolUse": "x"}}, r"'hooks\.PostToolUse' .* is not a list"),
    ],
)
def test_wrong_typed_hooks_are_refused(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(SettingsShapeError, match=message):
        merge(doc, CLAUDE_CODE, CMD["claude-code"])
    with pytest.raises(SettingsShapeError, match=message):
        remove(doc, CLAUDE_CODE)


def test_odd_values_retrace_does_not_need_are_kept_as_they_are() -> None:
    doc = {"hooks": {"Notification": "x", "PostToolUse": [3, {"hooks": "no"}, {"matcher": "*"}]}}
    plan = merge(doc, CLAUDE_CODE, CMD["claude-code"])
    assert plan.doc is not None
    assert plan.doc["hooks"]["Notification"] == "x"
    assert plan.doc["hooks"]["PostToolUse"][:3] == [3, {"hooks": "no"}, {"matcher": "*"}]


@pytest.mark.parametrize(
    ("config", "action", "note"),
    [
        ({"hooksConfig": {"enabled": False}}, "added", "hooksConfig.enabled is False"),
        ({"hooksConfig": {"notifications": True}}, "added", None),
        ({"hooksConfig": "yes"}, "added", "'hooksConfig' is not an object"),
    ],
)
def test_gemini_hooks_switch(config: dict[str, Any], action: str, note: str | None) -> None:
    plan = merge(config, GEMINI_CLI, CMD["gemini-cli"])
    assert plan.action == action
    assert plan.doc is not None
    if note is None:
        assert plan.doc["hooksConfig"] == {"notifications": True, "enabled": True}
        assert not [n for n in plan.notes if "hooksConfig" in n]
    else:
        assert plan.doc["hooksConfig"] == config["hooksConfig"]
        assert any(note in n for n in plan.notes)


def test_gemini_switch_added_to_an_otherwise_integrated_file_is_an_update() -> None:
    doc = merge({}, GEMINI_CLI, CMD["gemini-cli"]).doc
    assert doc is not None
    del doc["hooksConfig"]
    plan = merge(doc, GEMINI_CLI, CMD["gemini-cli"])
    assert plan.action == "updated"


def test_gemini_disabled_hook_name_is_reported() -> None:
    plan = merge({"hooks": {"disabled": [HOOK_NAME]}}, GEMINI_CLI, CMD["gemini-cli"])
    assert any("hooks.disabled" in n for n in plan.notes)
    assert plan.doc is not None
    assert plan.doc["hooks"]["disabled"] == [HOOK_NAME]


# ---------------------------------------------------------------- remove: the table


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_remove_from_a_file_retrace_created_deletes_it(spec: AgentInstall) -> None:
    created = merge({}, spec, CMD[spec.name]).doc
    assert created is not None
    plan = remove(created, spec)
    assert plan.action == "removed"
    assert plan.doc is None


def test_remove_keeps_users_hooks_and_drops_only_what_it_emptied() -> None:
    doc = {
        "model": "opus",
        "hooks": {
            "Stop": [],
            "PostToolUse": [
                {"matcher": "Write", "hooks": [USER_HOOK]},
                {"matcher": "*", "hooks": [{"command": "/p -m retrace hook claude-code"}, USER_HOOK]},
                {"matcher": "*", "hooks": [{"command": "/p -m retrace hook claude-code"}]},
            ],
            "UserPromptSubmit": [{"hooks": [{"command": "/p -m retrace hook claude-code"}]}],
        },
    }
    plan = remove(doc, CLAUDE_CODE)
    assert plan.action == "removed"
    assert plan.doc == {
        "model": "opus",
        "hooks": {
            "Stop": [],
            "PostToolUse": [
                {"matcher": "Write", "hooks": [USER_HOOK]},
                {"matcher": "*", "hooks": [USER_HOOK]},
            ],
        },
    }


@pytest.mark.parametrize("doc", [{}, {"hooks": {}}, {"hooks": {"Stop": [{"hooks": [USER_HOOK]}]}}, {"a": 1}])
def test_remove_without_retrace_entries_is_unchanged(doc: dict[str, Any]) -> None:
    plan = remove(doc, CLAUDE_CODE)
    assert plan.action == "unchanged"
    assert plan.doc == doc


def test_remove_keeps_the_gemini_switch_when_the_user_has_other_settings() -> None:
    doc = merge({"theme": "dark"}, GEMINI_CLI, CMD["gemini-cli"]).doc
    assert doc is not None
    plan = remove(doc, GEMINI_CLI)
    assert plan.doc == {"theme": "dark", "hooksConfig": {"enabled": True}}


# ---------------------------------------------------------------- properties

_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8))
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_names = st.sampled_from(
    ["PreToolUse", "PostToolUse", "Stop", "Notification", "BeforeTool", "AfterAgent", "x"]
)
_user_hook = st.fixed_dictionaries(
    {"type": st.just("command"), "command": st.sampled_from(["a.sh", "npx x", "retrace log", "echo hook"])},
    optional={"timeout": st.integers(1, 60)},
)
_group = st.fixed_dictionaries(
    {"hooks": st.lists(_user_hook, min_size=1, max_size=3)},
    optional={"matcher": st.sampled_from(["*", "Write", "Bash", ""])},
)
_hooks = st.dictionaries(_names, st.lists(_group, min_size=1, max_size=3), max_size=4)
_docs = st.builds(
    lambda extra, hooks: {**extra, **({"hooks": hooks} if hooks else {})},
    st.dictionaries(st.sampled_from(["env", "model", "permissions", "theme"]), _json, max_size=3),
    _hooks,
)
_specs = st.sampled_from(SPECS)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(doc=_docs, spec=_specs)
def test_merge_is_idempotent_and_remove_gives_back_the_users_document(
    doc: dict[str, Any], spec: AgentInstall
) -> None:
    command = CMD[spec.name]
    first = merge(doc, spec, command)
    assert first.doc is not None
    assert first.action == "added"
    again = merge(first.doc, spec, command)
    assert again.action == "unchanged"
    assert json.dumps(again.doc) == json.dumps(first.doc)  # same bytes, same key order
    assert sorted(e for e, _ in _ours(first.doc, spec)) == sorted(spec.event_names)
    back = remove(first.doc, spec)
    assert back.action == "removed"
    expected = dict(doc)
    if spec.enable_switch is not None:
        expected.setdefault("hooksConfig", {"enabled": True})
    if back.doc is None:
        assert expected in ({}, {"hooksConfig": {"enabled": True}})
    else:
        assert json.dumps(back.doc) == json.dumps(expected)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(doc=_docs, spec=_specs, old=st.sampled_from(["/old/python", "/usr/bin/python3.11", "'/q x/py'"]))
def test_a_stale_install_anywhere_ends_as_exactly_one_current_entry_per_event(
    doc: dict[str, Any], spec: AgentInstall, old: str
) -> None:
    stale = merge(doc, spec, hook_command(spec, old)).doc
    assert stale is not None
    plan = merge(stale, spec, CMD[spec.name])
    assert plan.doc is not None
    ours = sorted((e, h["command"]) for e, h in _ours(plan.doc, spec))
    assert ours == sorted((e, CMD[spec.name]) for e in spec.event_names)
    assert merge(plan.doc, spec, CMD[spec.name]).action == "unchanged"


def test_claude_codes_disable_all_hooks_is_reported_and_kept() -> None:
    plan = merge({"disableAllHooks": True}, CLAUDE_CODE, CMD["claude-code"])
    assert plan.doc is not None and plan.doc["disableAllHooks"] is True
    assert any("disableAllHooks is true" in n for n in plan.notes)
    assert merge({"disableAllHooks": False}, CLAUDE_CODE, CMD["claude-code"]).notes == ()


def test_adding_to_a_file_that_is_often_committed_says_so_once() -> None:
    plan = merge({}, GEMINI_CLI, CMD["gemini-cli"])
    assert any("often committed" in n for n in plan.notes)
    assert plan.doc is not None
    assert merge(plan.doc, GEMINI_CLI, CMD["gemini-cli"]).notes == ()
    assert merge({}, CLAUDE_CODE, CMD["claude-code"]).notes == ()  # settings.local.json stays local


def test_every_event_an_agent_is_installed_for_is_one_its_adapter_records() -> None:
    """One adapter per agent: ``retrace integrate`` registers exactly events the parser reads,
    so no hook call is spent on an event that would be dropped as ``ignored``."""
    from retrace.app.hooks.registry import ADAPTERS

    for name, adapter in ADAPTERS.items():
        assert adapter.install.name == name
        assert adapter.install.title == adapter.title
        assert adapter.install.project_dir_variable in adapter.project_dir_env
        for registration in adapter.install.events:
            event = adapter.parse(
                {"hook_event_name": registration.name, "session_id": "s1", "tool_name": "Read"}
            )
            assert event.kind != "ignored", (name, registration.name)
