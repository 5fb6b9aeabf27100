"""The real ``retrace hook <agent>`` (a subprocess fed the documented hook JSON on stdin) with no
server running: each call opens the store itself (creating it), records what the contract says
and closes it; whatever the input, it exits 0, prints nothing on stdout and logs problems in
``<store>/logs/hooks.log``. The same command with a server running is ``tests/relay``."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tests.app.hook_samples import SESSION, claude, claude_tool, gemini, gemini_tool
from tests.cli import cli_support
from tests.cli.cli_support import RETRACE

from retrace.app.hooks.model import session_id_for
from retrace.cli import hook as hook_cli
from retrace.cli import hook_log
from retrace.engine import Engine
from retrace.engine.store.events import CheckpointEvent, event_json

pytestmark = pytest.mark.slow

SID = session_id_for("claude-code", SESSION)


class Hooks:
    """Runs ``retrace hook`` like an agent does: JSON on stdin, a private environment."""

    def __init__(self, tmp_path: Path) -> None:
        self.ws = tmp_path / "project"
        (self.ws / "src").mkdir(parents=True)
        (self.ws / "src" / "app.py").write_text("print('hi')\n", "utf-8")
        (self.ws / "old.txt").write_text("old\n", "utf-8")
        self.store = tmp_path / "store"
        self.env = {k: v for k, v in os.environ.items() if k not in ("RETRACE_STORE", "CLAUDE_PROJECT_DIR")}
        self.env["XDG_DATA_HOME"] = str(tmp_path / "xdg-data")
        self.env["XDG_STATE_HOME"] = str(tmp_path / "xdg-state")
        self.env["RETRACE_RELAY_DIR"] = str(tmp_path / "relay")  # no server of this test run

    def run(
        self,
        agent: str,
        payload: bytes | dict[str, Any] | list[Any],
        *args: str,
        where: bool = True,
        **env: str,
    ) -> subprocess.CompletedProcess[bytes]:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        cmd = [str(RETRACE), "hook", agent, *args]
        if where:
            cmd += ["--workspace", str(self.ws), "--store", str(self.store)]
        proc = cli_support.run_bytes(cmd, {**self.env, **env}, cwd=self.ws, input=data, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == b""
        assert b"Traceback" not in proc.stderr, proc.stderr
        return proc

    def claude(self, event: str, **fields: Any) -> None:
        self.run("claude-code", claude(event, str(self.ws), **fields))

    def tool(self, event: str, tool: str, tool_input: dict[str, Any], use_id: str) -> None:
        self.run("claude-code", claude_tool(event, str(self.ws), tool, tool_input, use_id))

    def log(self) -> list[dict[str, Any]]:
        cmd = [str(RETRACE), "log", "--json", "--workspace", str(self.ws), "--store", str(self.store)]
        proc = cli_support.run(cmd, self.env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        entries = json.loads(proc.stdout)
        assert isinstance(entries, list)
        return entries

    def hook_log(self) -> str:
        """The store's hook log, and the user's (where lines go while no store exists)."""
        user = Path(self.env["XDG_STATE_HOME"]) / "retrace" / "hooks.log"
        paths = (self.store / "logs" / "hooks.log", user)
        return "".join(p.read_text("utf-8") for p in paths if p.exists())


@pytest.fixture
def hooks(tmp_path: Path) -> Hooks:
    return Hooks(tmp_path)


def changed(cp: dict[str, Any]) -> set[str]:
    return {f["path"] for f in cp["files"]} | {f["oldPath"] for f in cp["files"] if f.get("oldPath")}


def test_a_claude_code_session_without_a_server(hooks: Hooks) -> None:
    ws = hooks.ws
    assert not hooks.store.exists()
    hooks.claude("SessionStart", source="startup")
    assert (hooks.store / "store.json").exists()  # no store yet: created
    hooks.claude("UserPromptSubmit", prompt="Refactor the app")
    hooks.tool("PreToolUse", "Write", {"file_path": f"{ws}/src/util.py", "content": "x = 1\n"}, "toolu_w")
    (ws / "src" / "util.py").write_text("x = 1\n", "utf-8")
    hooks.tool("PostToolUse", "Write", {"file_path": f"{ws}/src/util.py", "content": "x = 1\n"}, "toolu_w")
    hooks.tool("PreToolUse", "Edit", {"file_path": f"{ws}/src/app.py"}, "toolu_e")
    (ws / "src" / "app.py").write_text("print('hello')\n", "utf-8")
    hooks.tool(
        "PostToolUse",
        "Edit",
        {"file_path": f"{ws}/src/app.py", "old_string": "hi", "new_string": "hello"},
        "toolu_e",
    )
    (ws / "notes.md").write_text("the user's own edit\n", "utf-8")  # between two calls
    command = "touch made.txt && rm old.txt && mv src/util.py src/helpers.py"
    hooks.tool("PreToolUse", "Bash", {"command": command}, "toolu_b")
    (ws / "made.txt").write_text("", "utf-8")
    (ws / "old.txt").unlink()
    (ws / "src" / "util.py").rename(ws / "src" / "helpers.py")
    hooks.tool("PostToolUse", "Bash", {"command": command, "description": "shuffle"}, "toolu_b")
    hooks.tool("PreToolUse", "Read", {"file_path": f"{ws}/src/app.py"}, "toolu_r")
    hooks.tool("PostToolUse", "Read", {"file_path": f"{ws}/src/app.py"}, "toolu_r")
    multi = {"file_path": f"{ws}/src/helpers.py", "edits": [{"old_string": "x", "new_string": "y"}]}
    hooks.tool("PreToolUse", "MultiEdit", multi, "toolu_m")
    (ws / "src" / "helpers.py").write_text("y = 1\n", "utf-8")
    hooks.tool("PostToolUse", "MultiEdit", multi, "toolu_m")
    notebook = {"notebook_path": f"{ws}/nb.ipynb", "new_source": "print(1)", "cell_id": "c1"}
    hooks.tool("PreToolUse", "NotebookEdit", notebook, "toolu_n")
    (ws / "nb.ipynb").write_text('{"cells": []}\n', "utf-8")
    hooks.tool("PostToolUse", "NotebookEdit", notebook, "toolu_n")
    hooks.claude("Stop", stop_hook_active=False)

    mine = [e for e in hooks.log() if e["sessionId"] == SID]
    assert [(e["kind"], e["tool"]) for e in mine] == [
        ("tool", "Write"), ("tool", "Edit"), ("external", None), ("tool", "Bash"), ("tool", "Read"),
        ("tool", "MultiEdit"), ("tool", "NotebookEdit"),
    ]  # fmt: skip
    write, edit, external, bash, read, multi_cp, notebook_cp = mine
    assert changed(multi_cp) == {"src/helpers.py"} and changed(notebook_cp) == {"nb.ipynb"}
    assert notebook_cp["label"] == "nb.ipynb"
    assert changed(write) == {"src/util.py"} and write["label"] == "src/util.py"
    assert changed(edit) == {"src/app.py"}
    assert changed(external) == {"notes.md"}  # the user's edit, never the tool's
    assert changed(bash) == {"made.txt", "old.txt", "src/util.py", "src/helpers.py"}
    assert bash["label"] == command
    assert changed(read) == set()
    for cp, use_id in zip(
        (write, edit, bash, read), ("toolu_w", "toolu_e", "toolu_b", "toolu_r"), strict=True
    ):
        assert cp["meta"] == {"agent": "claude-code"}
        assert cp["toolCallId"] == use_id
        assert cp["turnId"] == write["turnId"] is not None
    assert hooks.hook_log() == ""  # nothing went wrong

    with Engine.open(ws, hooks.store, readonly=True) as eng:
        events = [event_json(e) for e in eng.events(SID, skip={CheckpointEvent})]
    assert [e["type"] for e in events] == ["agentSession", "turn", "turnEnd"]
    assert events[1]["text"] == "Refactor the app"
    assert events[0]["agent"] == "claude-code" and events[0]["externalSessionId"] == SESSION


def test_a_gemini_cli_session_without_a_server(hooks: Hooks) -> None:
    ws, cwd = hooks.ws, str(hooks.ws)
    hooks.run("gemini-cli", gemini("BeforeAgent", cwd, prompt="write docs"))
    hooks.run("gemini-cli", gemini_tool("BeforeTool", cwd, "write_file", {"file_path": f"{ws}/DOCS.md"}))
    (ws / "DOCS.md").write_text("# Docs\n", "utf-8")
    hooks.run(
        "gemini-cli",
        gemini_tool("AfterTool", cwd, "write_file", {"file_path": f"{ws}/DOCS.md", "content": "# Docs\n"}),
    )
    replace = {"file_path": f"{ws}/DOCS.md", "old_string": "# Docs", "new_string": "# Guide"}
    hooks.run("gemini-cli", gemini_tool("BeforeTool", cwd, "replace", replace))
    (ws / "DOCS.md").write_text("# Guide\n", "utf-8")
    hooks.run("gemini-cli", gemini_tool("AfterTool", cwd, "replace", replace))
    hooks.run("gemini-cli", gemini_tool("BeforeTool", cwd, "run_shell_command", {"command": "rm old.txt"}))
    (ws / "old.txt").unlink()
    hooks.run("gemini-cli", gemini_tool("AfterTool", cwd, "run_shell_command", {"command": "rm old.txt"}))
    hooks.run("gemini-cli", gemini_tool("AfterTool", cwd, "read_file", {"file_path": f"{ws}/DOCS.md"}))
    hooks.run("gemini-cli", gemini("AfterAgent", cwd, prompt="write docs", prompt_response="done"))
    sid = session_id_for("gemini-cli", "g-" + SESSION)
    mine = [e for e in hooks.log() if e["sessionId"] == sid]
    assert [(e["tool"], changed(e)) for e in mine] == [
        ("write_file", {"DOCS.md"}), ("replace", {"DOCS.md"}), ("run_shell_command", {"old.txt"}),
        ("read_file", set()),
    ]  # fmt: skip
    assert all(e["meta"] == {"agent": "gemini-cli"} and e["kind"] == "tool" for e in mine)
    assert hooks.hook_log() == ""


@pytest.mark.parametrize(
    ("agent", "payload", "logged"),
    [
        ("claude-code", b"{not json", "is not JSON"),
        ("claude-code", b"", "is not JSON"),
        ("claude-code", b"\xff\xfe garbage", "is not JSON"),
        ("claude-code", b"[1, 2]", "JSON list, not an object"),
        ("claude-code", b"[" * 100_000 + b"]" * 100_000, "is not JSON"),
        ("claude-code", {"hook_event_name": "PostToolUse"}, "has no session_id"),
        ("claude-code", {"hook_event_name": 7, "session_id": "s"}, "hook_event_name is a number"),
        (
            "claude-code",
            {"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": "/"},
            "not inside the workspace",
        ),
        (
            "claude-code",
            {"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": ["x"]},
            "tool_name is an array",
        ),
        ("cursor", {"hook_event_name": "Stop", "session_id": "s"}, "unknown agent 'cursor'"),
        ("Not An Agent!", {"hook_event_name": "Stop", "session_id": "s"}, "unknown agent"),
    ],
)
def test_bad_input_exits_0_prints_nothing_and_is_logged(
    hooks: Hooks, agent: str, payload: bytes | dict[str, Any], logged: str
) -> None:
    hooks.run(agent, payload)
    assert logged in hooks.hook_log()
    if not (hooks.store / "store.json").exists():
        assert not hooks.store.exists()  # a log line never creates a store's folder
    else:
        assert all(e["kind"] == "baseline" for e in hooks.log())  # nothing recorded for it


def test_huge_input_is_dropped_with_a_log_line(hooks: Hooks) -> None:
    big = claude_tool(
        "PostToolUse", str(hooks.ws), "Write", {"file_path": "a", "content": "x" * (25 << 20)}, "t"
    )
    hooks.run("claude-code", big)
    assert "hook input over 24 MiB: event dropped" in hooks.hook_log()


def test_events_retrace_does_not_record_never_open_the_store(hooks: Hooks) -> None:
    hooks.claude("Notification", message="Claude needs your permission")
    hooks.run("gemini-cli", gemini("BeforeModel", str(hooks.ws), llm_request={}))
    assert not (hooks.store / "store.json").exists()


def test_usage_errors_and_unknown_options_still_exit_0(hooks: Hooks) -> None:
    proc = hooks.run("claude-code", b"{}", where=False)  # no agent would be worse: see below
    assert proc.stderr == b""
    none = subprocess.run(
        [str(RETRACE), "hook"], input=b"{}", capture_output=True, env=hooks.env, timeout=60, check=False
    )
    assert (none.returncode, none.stdout, none.stderr) == (0, b"", b"")
    assert "required: AGENT" in (Path(hooks.env["XDG_STATE_HOME"]) / "retrace" / "hooks.log").read_text()
    hooks.run("claude-code", claude("UserPromptSubmit", str(hooks.ws), prompt="p"), "--frobnicate")
    assert "ignored arguments: --frobnicate" in hooks.hook_log()
    assert [e["kind"] for e in hooks.log()] == ["baseline"]
    help_text = subprocess.run([str(RETRACE), "hook", "--help"], capture_output=True, text=True, check=False)
    assert help_text.returncode == 0 and "always exits 0" in " ".join(help_text.stdout.lower().split())


def test_the_workspace_comes_from_the_project_variable_or_the_cwds_store(
    hooks: Hooks, tmp_path: Path
) -> None:
    # No --workspace, no --store: Claude Code's $CLAUDE_PROJECT_DIR names the project even when
    # the event's cwd is a subfolder; without it the nearest folder with a store is used.
    sub = hooks.ws / "src"
    event = claude_tool("PostToolUse", str(sub), "Write", {"file_path": "app.py"}, "t1")
    (sub / "app.py").write_text("changed\n", "utf-8")
    hooks.run("claude-code", event, where=False, CLAUDE_PROJECT_DIR=str(hooks.ws))
    xdg_stores = list((tmp_path / "xdg-data" / "retrace" / "stores").iterdir())
    assert len(xdg_stores) == 1 and xdg_stores[0].name.startswith("project-")
    with Engine.open(hooks.ws, xdg_stores[0], readonly=True) as eng:
        assert [c.tool for c in eng.timeline(SID)] == ["Write"]
    event = claude_tool("PostToolUse", str(sub), "Bash", {"command": "true"}, "t2")
    # As `retrace integrate` writes it, with the variable unset: `--workspace ""`, cwd = src/.
    hooks.run("claude-code", event, "--workspace", "", where=False)
    assert len(list((tmp_path / "xdg-data" / "retrace" / "stores").iterdir())) == 1
    with Engine.open(hooks.ws, xdg_stores[0], readonly=True) as eng:
        assert [c.tool for c in eng.timeline(SID)] == ["Write", "Bash"]


def test_a_locked_store_is_waited_for_then_the_event_is_dropped_and_logged(hooks: Hooks) -> None:
    hooks.claude("UserPromptSubmit", prompt="p")
    with Engine.open(hooks.ws, hooks.store, catch_up=False):  # another process's lock, no relay
        started = time.monotonic()
        hooks.tool("PostToolUse", "Bash", {"command": "true"}, "t1")
        waited = time.monotonic() - started
    assert hook_cli.LOCK_WAIT_S <= waited < hook_cli.LOCK_WAIT_S + 20
    assert "store is locked" in hooks.hook_log() and "event dropped" in hooks.hook_log()
    assert [e["tool"] for e in hooks.log() if e["sessionId"] == SID] == []


def test_a_store_released_within_the_wait_gets_the_event(hooks: Hooks) -> None:
    hooks.claude("UserPromptSubmit", prompt="p")
    holder = Engine.open(hooks.ws, hooks.store, catch_up=False)
    threading.Timer(1.0, holder.close).start()
    (hooks.ws / "late.txt").write_text("late\n", "utf-8")
    hooks.tool("PostToolUse", "Write", {"file_path": str(hooks.ws / "late.txt")}, "t1")
    (cp,) = [e for e in hooks.log() if e["sessionId"] == SID]
    assert changed(cp) == {"late.txt"}
    assert hooks.hook_log() == ""


FULL_DISK = """
import errno, sys
from retrace.engine.store import journal
def full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")
journal.JournalWriter.append = full
from retrace.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_full_disk_is_logged_and_loses_nothing_once_space_is_back(hooks: Hooks) -> None:
    hooks.claude("UserPromptSubmit", prompt="p")
    (hooks.ws / "big.bin").write_bytes(b"x" * 1000)
    event = claude_tool("PostToolUse", str(hooks.ws), "Write", {"file_path": str(hooks.ws / "big.bin")}, "t1")
    cmd = [
        sys.executable,
        "-c",
        FULL_DISK,
        "hook",
        "claude-code",
        "--workspace",
        str(hooks.ws),
        "--store",
        str(hooks.store),
    ]
    proc = subprocess.run(
        cmd, input=json.dumps(event).encode(), capture_output=True, env=hooks.env, timeout=120, check=False
    )
    assert (proc.returncode, proc.stdout) == (0, b"")
    assert os.strerror(errno.ENOSPC) in hooks.hook_log()
    # Space is back: the next call records what the failed one could not (nothing lost).
    hooks.tool("PostToolUse", "Bash", {"command": "true"}, "t2")
    (cp,) = [e for e in hooks.log() if e["sessionId"] == SID]
    assert changed(cp) == {"big.bin"}


def test_the_log_is_capped_and_rotated(hooks: Hooks) -> None:
    hooks.claude("SessionStart", source="startup")  # the store exists: its log is used
    logs = hooks.store / "logs"
    logs.mkdir(parents=True)
    (logs / "hooks.log").write_bytes(b"x" * (hook_log.LOG_MAX_BYTES - 10))
    hooks.run("claude-code", b"nope")
    assert (logs / "hooks.log.1").stat().st_size == hook_log.LOG_MAX_BYTES - 10
    assert "is not JSON" in hooks.hook_log() and hooks.hook_log().count("\n") == 1


def test_the_fast_paths_project_variables_match_the_adapters() -> None:
    from retrace.app.hooks.registry import ADAPTERS

    assert {n: a.project_dir_env for n, a in ADAPTERS.items()} == hook_cli.PROJECT_DIR_ENV


@pytest.mark.parametrize(
    ("argv", "agent", "workspace", "store", "unknown"),
    [
        (["claude-code"], "claude-code", None, None, []),
        (["gemini-cli", "--workspace", "/w", "--store=/s"], "gemini-cli", "/w", "/s", []),
        (["--store", "/s", "claude-code", "--workspace=/w"], "claude-code", "/w", "/s", []),
        (["claude-code", "extra", "-x", "--store"], "claude-code", None, None, ["extra", "-x", "--store"]),
        ([], "", None, None, []),
        (["claude-code", "--workspace", ""], "claude-code", "", None, []),  # "${CLAUDE_PROJECT_DIR:-}" unset
    ],
)
def test_arguments_are_read_without_argparse(
    argv: list[str], agent: str, workspace: str | None, store: str | None, unknown: list[str]
) -> None:
    args = hook_cli.parse_args(argv)
    assert (args.agent, args.workspace, args.store, args.unknown) == (agent, workspace, store, unknown)


def test_concurrent_cold_calls_take_turns_and_lose_nothing(hooks: Hooks) -> None:
    # An agent's parallel tool calls: several hook processes at once, none holding a server.
    hooks.claude("UserPromptSubmit", prompt="p")
    cwd = str(hooks.ws)
    procs = [
        subprocess.Popen(
            [str(RETRACE), "hook", "claude-code", "--workspace", cwd, "--store", str(hooks.store)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=hooks.env,
        )
        for _ in range(4)
    ]
    for n, proc in enumerate(procs):
        event = claude_tool("PostToolUse", cwd, "Read", {"file_path": f"{cwd}/old.txt"}, f"toolu_{n}")
        out, err = proc.communicate(json.dumps(event).encode(), timeout=120)
        assert (proc.returncode, out) == (0, b""), err
    assert sorted(e["toolCallId"] for e in hooks.log() if e["sessionId"] == SID) == [
        f"toolu_{n}" for n in range(4)
    ]
    assert hooks.hook_log() == ""
    with Engine.open(hooks.ws, hooks.store, readonly=True) as eng:
        assert [e.type for e in eng.events(SID, skip={CheckpointEvent})] == ["agentSession", "turn"]
