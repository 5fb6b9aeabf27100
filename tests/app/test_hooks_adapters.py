"""The hook adapters (pure): each agent's documented JSON → a HookEvent, table-tested; bad input
→ one clear error naming the field; the session id rule."""

from __future__ import annotations

from typing import Any

import pytest
from tests.app.hook_samples import SESSION, claude, claude_tool, gemini, gemini_tool

from retrace.app.hooks.model import HookInputError, session_id_for
from retrace.app.hooks.registry import ADAPTERS, adapter_for

CWD = "/home/u/project"
CLAUDE = adapter_for("claude-code")
GEMINI = adapter_for("gemini-cli")


@pytest.mark.parametrize(
    ("raw", "kind", "tool", "paths", "summary"),
    [
        (claude("SessionStart", CWD, source="startup"), "sessionStart", None, None, ""),
        (claude("UserPromptSubmit", CWD, prompt="fix the bug"), "prompt", None, None, ""),
        (
            claude_tool("PreToolUse", CWD, "Bash", {"command": "rm a.txt"}, "t1"),
            "preTool",
            "Bash",
            None,
            "rm a.txt",
        ),
        (
            claude_tool("PostToolUse", CWD, "Write", {"file_path": f"{CWD}/src/a.py", "content": "x"}, "t2"),
            "postTool",
            "Write",
            (f"{CWD}/src/a.py",),
            "src/a.py",
        ),
        (
            claude_tool(
                "PostToolUse",
                CWD,
                "Edit",
                {"file_path": f"{CWD}/a.py", "old_string": "a", "new_string": "b"},
                "t3",
            ),
            "postTool",
            "Edit",
            (f"{CWD}/a.py",),
            "a.py",
        ),
        (
            claude_tool("PostToolUse", CWD, "MultiEdit", {"file_path": "/elsewhere/b.py", "edits": []}, "t4"),
            "postTool",
            "MultiEdit",
            ("/elsewhere/b.py",),
            "/elsewhere/b.py",
        ),
        (
            claude_tool(
                "PostToolUse",
                CWD,
                "NotebookEdit",
                {"notebook_path": f"{CWD}/n.ipynb", "new_source": "1"},
                "t5",
            ),
            "postTool",
            "NotebookEdit",
            (f"{CWD}/n.ipynb",),
            "n.ipynb",
        ),
        (
            claude_tool("PostToolUse", CWD, "Read", {"file_path": f"{CWD}/a.py"}, "t6"),
            "postTool",
            "Read",
            (),
            "a.py",
        ),
        (claude_tool("PostToolUse", CWD, "Grep", {"pattern": "TODO"}, "t7"), "postTool", "Grep", (), "TODO"),
        (
            claude_tool("PostToolUse", CWD, "mcp__db__query", {"sql": "select 1", "limit": 5}, "t8"),
            "postTool",
            "mcp__db__query",
            None,
            "sql=select 1 limit=5",
        ),
        (claude("Stop", CWD, stop_hook_active=False), "stop", None, None, ""),
        (claude("SessionEnd", CWD, reason="logout"), "sessionEnd", None, None, ""),
        (claude("Notification", CWD, message="needs permission"), "ignored", None, None, ""),
        (claude("PreCompact", CWD, trigger="auto"), "ignored", None, None, ""),
        (gemini("SessionStart", CWD, source="startup"), "sessionStart", None, None, ""),
        (gemini("BeforeAgent", CWD, prompt="add tests"), "prompt", None, None, ""),
        (
            gemini_tool("BeforeTool", CWD, "run_shell_command", {"command": "mv a b"}),
            "preTool",
            "run_shell_command",
            None,
            "mv a b",
        ),
        (
            gemini_tool("AfterTool", CWD, "write_file", {"file_path": f"{CWD}/a.md", "content": "x"}),
            "postTool",
            "write_file",
            (f"{CWD}/a.md",),
            "a.md",
        ),
        (
            gemini_tool(
                "AfterTool",
                CWD,
                "replace",
                {"file_path": f"{CWD}/a.md", "old_string": "x", "new_string": "y"},
            ),
            "postTool",
            "replace",
            (f"{CWD}/a.md",),
            "a.md",
        ),
        (
            gemini_tool("AfterTool", CWD, "read_file", {"absolute_path": f"{CWD}/a.md"}),
            "postTool",
            "read_file",
            (),
            "a.md",
        ),
        (gemini("AfterAgent", CWD, prompt="add tests", prompt_response="done"), "stop", None, None, ""),
        (gemini("SessionEnd", CWD, reason="exit"), "sessionEnd", None, None, ""),
        (gemini("BeforeModel", CWD, llm_request={}), "ignored", None, None, ""),
    ],
    ids=lambda v: v["hook_event_name"] + ":" + str(v.get("tool_name", "")) if isinstance(v, dict) else None,
)
def test_documented_events_parse(
    raw: dict[str, Any], kind: str, tool: str | None, paths: tuple[str, ...] | None, summary: str
) -> None:
    adapter = GEMINI if "timestamp" in raw else CLAUDE
    event = adapter.parse(raw)
    assert event.agent == adapter.name
    assert event.kind == kind
    assert event.tool == tool
    assert event.changed_paths == paths
    assert event.summary == summary
    assert event.cwd == CWD
    if kind != "ignored":
        assert event.external_session_id == raw["session_id"]
    assert event.warnings == ()


def test_prompt_reason_use_id_and_failure_are_carried() -> None:
    assert CLAUDE.parse(claude("UserPromptSubmit", CWD, prompt="hi\nthere")).prompt == "hi\nthere"
    assert CLAUDE.parse(claude("SessionEnd", CWD, reason="clear")).reason == "clear"
    assert CLAUDE.parse(claude("Stop", CWD)).reason == "stop"
    assert CLAUDE.parse(claude("StopFailure", CWD, error="overloaded")).reason == "error"
    ok = CLAUDE.parse(claude_tool("PostToolUse", CWD, "Bash", {"command": "true"}, "toolu_1"))
    assert (ok.tool_use_id, ok.failed) == ("toolu_1", False)
    failed = CLAUDE.parse(
        claude_tool("PostToolUseFailure", CWD, "Bash", {"command": "false"}, "toolu_2", error="exit 1")
    )
    assert (failed.kind, failed.failed) == ("postTool", True)
    g = GEMINI.parse(
        gemini_tool("AfterTool", CWD, "run_shell_command", {"command": "x"}, tool_response={"error": "boom"})
    )
    assert g.failed is True and g.tool_use_id is not None and g.tool_use_id.startswith("gemini-cli_")


def test_an_agent_without_call_ids_gets_one_per_stamped_event() -> None:
    # Gemini CLI sends no tool_use_id: the same event delivered twice (a retry) names one call.
    after = gemini_tool("AfterTool", CWD, "write_file", {"file_path": f"{CWD}/a"})
    first, again = GEMINI.parse(after).tool_use_id, GEMINI.parse(dict(after)).tool_use_id
    later = GEMINI.parse({**after, "timestamp": "2026-12-06T07:00:00.001Z"}).tool_use_id
    other = GEMINI.parse(gemini_tool("AfterTool", CWD, "write_file", {"file_path": f"{CWD}/b"})).tool_use_id
    assert first == again and len({first, later, other}) == 3
    unstamped = {
        k: v for k, v in claude_tool("PostToolUse", CWD, "Read", {}, "x").items() if k != "tool_use_id"
    }
    assert CLAUDE.parse(unstamped).tool_use_id is None  # two identical calls must stay two


def test_summary_is_one_redacted_capped_line() -> None:
    secret = "ghp_" + "a1B2" * 9
    event = CLAUDE.parse(
        claude_tool(
            "PreToolUse",
            CWD,
            "Bash",
            {"command": f"curl -H 'x: {secret}'\n\x1b[31m echo  hi\t" + "y" * 500},
            "t",
        )
    )
    assert secret not in event.summary
    assert "[redacted" in event.summary
    assert "\n" not in event.summary and "\x1b" not in event.summary and "\t" not in event.summary
    assert len(event.summary) <= 200 and event.summary.endswith("…")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([1, 2], "must be a JSON object"),
        ({}, "no hook_event_name"),
        ({"hook_event_name": 5}, "hook_event_name is a number"),
        ({"hook_event_name": ""}, "hook_event_name is empty"),
        ({"hook_event_name": "Stop"}, "no session_id"),
        ({"hook_event_name": "Stop", "session_id": ["x"]}, "session_id is an array"),
        ({"hook_event_name": "Stop", "session_id": "s" * 257}, "over 256"),
        ({"hook_event_name": "PostToolUse", "session_id": "s"}, "no tool_name"),
        (
            {"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": {"a": 1}},
            "tool_name is an object",
        ),
    ],
)
def test_bad_input_is_one_clear_error(raw: Any, message: str) -> None:
    with pytest.raises(HookInputError, match=message):
        CLAUDE.parse(raw)


def test_unusable_optional_fields_are_warnings_not_failures() -> None:
    raw = claude_tool("PostToolUse", CWD, "Write", {"file_path": 7}, use_id="t")
    raw["tool_use_id"] = 12
    raw["transcript_path"] = {"x": 1}
    event = CLAUDE.parse(raw)
    assert event.changed_paths is None  # no usable path: detected, nothing lost
    assert event.tool_use_id is None
    assert event.transcript_path is None
    assert len(event.warnings) == 4, event.warnings
    odd = CLAUDE.parse({**claude("PostToolUse", CWD), "tool_name": "Bash", "tool_input": "ls"})
    assert odd.changed_paths is None and "tool_input" in odd.warnings[0]


def test_session_id_rule() -> None:
    assert session_id_for("claude-code", SESSION) == f"claude-code-{SESSION}"
    long_or_odd = ["x" * 101, "a/b", "../x", "é", " "]
    ids = {session_id_for("gemini-cli", e) for e in long_or_odd}
    assert len(ids) == len(long_or_odd)
    for sid in ids:
        assert sid.startswith("gemini-cli-") and len(sid) == len("gemini-cli-") + 32


def test_registry_names_follow_the_journal_rule() -> None:
    import re

    from retrace.engine.store.events import AGENT_NAME

    assert set(ADAPTERS) == {"claude-code", "gemini-cli"}
    for name, adapter in ADAPTERS.items():
        assert adapter.name == name and re.fullmatch(AGENT_NAME, name)
        assert adapter.title and adapter.project_dir_env
    with pytest.raises(HookInputError, match=r"unknown agent 'cursor'.*claude-code, gemini-cli"):
        adapter_for("cursor")


def test_a_huge_prompt_is_kept_capped_and_a_tool_name_is_one_line() -> None:
    prompt = CLAUDE.parse(claude("UserPromptSubmit", CWD, prompt="p" * 100_000)).prompt or ""
    assert len(prompt) < 70_000 and prompt.endswith(f"[… {100_000 - (64 << 10)} more characters]")
    odd = CLAUDE.parse(claude_tool("PostToolUse", CWD, "mcp__x\n\x1b[2Jevil", {}, "t"))
    assert odd.tool == "mcp__x [2Jevil"
