"""Claude Code's hooks (https://docs.claude.com/en/docs/claude-code/hooks).

Every event carries ``session_id``, ``transcript_path``, ``cwd`` and ``hook_event_name``;
``UserPromptSubmit`` adds ``prompt``; ``PreToolUse`` / ``PostToolUse`` (and
``PostToolUseFailure``, a call that failed) add ``tool_name``, ``tool_input`` and
``tool_use_id`` (``PostToolUse`` also ``tool_response``); ``SessionEnd`` adds ``reason``. Hooks
run with the project folder as working directory and ``$CLAUDE_PROJECT_DIR`` set to it.
File-writing tools name their file in ``tool_input.file_path`` (``Write``, ``Edit``,
``MultiEdit``) or ``tool_input.notebook_path`` (``NotebookEdit``); ``Bash`` runs
``tool_input.command`` (what it changed is detected).
"""

from __future__ import annotations

from retrace.app.hooks.adapter import TableAdapter
from retrace.app.hooks.install import HOOK_TIMEOUT_S, AgentInstall, HookRegistration

INSTALL = AgentInstall(
    name="claude-code",
    title="Claude Code",
    settings_dir=".claude",
    settings_file="settings.local.json",
    project_dir_variable="CLAUDE_PROJECT_DIR",
    events=(
        HookRegistration("SessionStart", None),
        HookRegistration("UserPromptSubmit", None),
        HookRegistration("PreToolUse", "*"),
        HookRegistration("PostToolUse", "*"),
        HookRegistration("PostToolUseFailure", "*"),  # a failed call may still have changed files
        HookRegistration("Stop", None),
        HookRegistration("StopFailure", None),  # a turn ended by an API error: not left running
        HookRegistration("SessionEnd", None),
    ),
    timeout=HOOK_TIMEOUT_S,
    named=False,
    enable_switch=None,
    disable_all_key="disableAllHooks",
)
"""Where ``retrace integrate claude-code`` writes the hooks: the project-local settings file."""

ADAPTER = TableAdapter(
    name="claude-code",
    title="Claude Code",
    project_dir_env=("CLAUDE_PROJECT_DIR",),
    events={
        "SessionStart": "sessionStart",
        "UserPromptSubmit": "prompt",
        "PreToolUse": "preTool",
        "PostToolUse": "postTool",
        "PostToolUseFailure": "postTool",
        "Stop": "stop",
        "StopFailure": "stop",
        "SessionEnd": "sessionEnd",
    },
    failed_events=frozenset({"PostToolUseFailure"}),
    stop_reasons={"Stop": "stop", "StopFailure": "error"},
    file_tools={
        "Write": ("file_path",),
        "Edit": ("file_path",),
        "MultiEdit": ("file_path",),
        "NotebookEdit": ("notebook_path",),
    },
    install=INSTALL,
    read_only_tools=frozenset(
        {
            "Read",
            "Glob",
            "Grep",
            "LS",
            "NotebookRead",
            "WebFetch",
            "WebSearch",
            "TodoWrite",
            "TodoRead",
            "BashOutput",
            "ExitPlanMode",
            "AskUserQuestion",
        }
    ),
)
