"""Gemini CLI's hooks (github.com/google-gemini/gemini-cli, docs/hooks/reference.md).

Every event carries ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name`` and
``timestamp``; ``BeforeAgent`` (a prompt) and ``AfterAgent`` (the turn's final answer) add
``prompt``; ``BeforeTool`` / ``AfterTool`` add ``tool_name`` and ``tool_input`` (``AfterTool``
also ``tool_response``, with ``error`` when the call failed); ``SessionEnd`` adds ``reason``.
Hooks run with ``$GEMINI_PROJECT_DIR`` (and, for compatibility, ``$CLAUDE_PROJECT_DIR``) set to
the project folder. ``write_file`` and ``replace`` name their file in ``tool_input.file_path``
(older releases: ``absolute_path`` / ``path``); ``run_shell_command`` runs ``command`` (what it
changed is detected).
"""

from __future__ import annotations

from retrace.app.hooks.adapter import TableAdapter
from retrace.app.hooks.install import HOOK_TIMEOUT_S, AgentInstall, HookRegistration

INSTALL = AgentInstall(
    name="gemini-cli",
    title="Gemini CLI",
    settings_dir=".gemini",
    settings_file="settings.json",
    project_dir_variable="GEMINI_PROJECT_DIR",
    events=(
        HookRegistration("SessionStart", None),
        HookRegistration("BeforeAgent", None),
        HookRegistration("BeforeTool", "*"),
        HookRegistration("AfterTool", "*"),
        HookRegistration("AfterAgent", None),
        HookRegistration("SessionEnd", None),
    ),
    timeout=HOOK_TIMEOUT_S * 1000,
    named=True,
    enable_switch=("hooksConfig", "enabled"),
    shared_file=True,
)
"""Where ``retrace integrate gemini-cli`` writes the hooks (timeouts in milliseconds)."""

ADAPTER = TableAdapter(
    name="gemini-cli",
    title="Gemini CLI",
    project_dir_env=("GEMINI_PROJECT_DIR", "CLAUDE_PROJECT_DIR"),
    events={
        "SessionStart": "sessionStart",
        "BeforeAgent": "prompt",
        "BeforeTool": "preTool",
        "AfterTool": "postTool",
        "AfterAgent": "stop",
        "SessionEnd": "sessionEnd",
    },
    stop_reasons={"AfterAgent": "stop"},
    file_tools={
        "write_file": ("file_path", "absolute_path", "path"),
        "replace": ("file_path", "absolute_path", "path"),
    },
    install=INSTALL,
    read_only_tools=frozenset(
        {
            "read_file",
            "read_many_files",
            "list_directory",
            "glob",
            "search_file_content",
            "grep_search",
            "google_web_search",
            "web_fetch",
            "write_todos",
        }
    ),
)
