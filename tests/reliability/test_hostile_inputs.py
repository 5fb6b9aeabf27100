"""Hostile tool inputs (issue 5, item 3): what a confused or malicious model can send the tools.

Refused with one clear line, touching nothing: ``..`` escapes, absolute paths outside, symlinks
and symlink loops that point outside, a symlink to ``/dev/zero``, device nodes and FIFOs inside the
workspace (a read would never end / block forever), ``.git`` internals, names longer than the file
system allows and names that are not valid UTF-8. ``run_command`` honours its timeout, kills the
whole process group (a background child never gets to act), and caps huge or binary output; huge
and binary files are read safely.

The tools run in-process here against real files (every case, fast), then the same hostile calls
go through the REAL server and the fake model: each ends as an error tool result the model sees,
the turn and the conversation stay valid, nothing outside the workspace changes.
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import AUTO, model_env, start_editor, stop_editor
from tests.oracles import entries_and_modes
from tests.reliability.conftest import record_figures
from tests.reliability.inputs_support import scripted_model

from retrace.agent.tools import ToolContext, execute
from retrace.engine.config import EngineConfig

pytestmark = pytest.mark.slow

SECRET = "outside-secret-do-not-leak\n"
ESCAPE = Path("/tmp/retrace-escape.txt")
FIGURES: dict[str, int] = {"hostileCallsRefused": 0, "controlsAllowed": 0}


@pytest.fixture
def arena(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with every kind of hostile entry, and a directory outside it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "ok.txt").write_text("fine\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "to_secret").symlink_to(outside / "secret.txt")
    (ws / "to_outside_dir").symlink_to(outside)
    (ws / "to_zero").symlink_to("/dev/zero")
    (ws / "loop_a").symlink_to(ws / "loop_b")
    (ws / "loop_b").symlink_to(ws / "loop_a")
    (ws / "inside_link").symlink_to("ok.txt")
    os.mkfifo(ws / "fifo")
    if os.geteuid() == 0:  # only root may create device nodes; the FIFO covers the rest
        os.mknod(ws / "zero_dev", 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    return ws, outside


def ctx_for(ws: Path, **changes: Any) -> ToolContext:
    return ToolContext(workspace=ws, engine_config=EngineConfig(), **changes)


def outside_state(outside: Path) -> dict[str, bytes]:
    """The files outside the workspace (and the absolute escape target, which must never appear)."""
    state = {p.name: p.read_bytes() for p in outside.iterdir()}
    if ESCAPE.exists():
        state[str(ESCAPE)] = ESCAPE.read_bytes()
    return state


LONG_NAME = "n" * 256
DEEP_PATH = "/".join(["d" * 200] * 25)

REFUSED: list[tuple[str, dict[str, Any], str]] = [
    ("read_file", {"path": "../outside/secret.txt"}, "outside the workspace"),
    ("read_file", {"path": "src/../../outside/secret.txt"}, "outside the workspace"),
    ("read_file", {"path": "/etc/passwd"}, "outside the workspace"),
    ("read_file", {"path": "to_secret"}, "symlink"),
    ("read_file", {"path": "to_outside_dir/secret.txt"}, "symlink"),
    ("read_file", {"path": "to_zero"}, "symlink"),
    ("read_file", {"path": "loop_a"}, "symlink loop"),
    ("read_file", {"path": "fifo"}, "not a regular file"),
    ("read_file", {"path": "ok.txt\x00.png"}, "NUL"),
    ("read_file", {"path": "bad\udcffname.txt"}, "not valid UTF-8"),
    ("read_file", {"path": LONG_NAME}, "too long"),
    ("write_file", {"path": "../escape.txt", "content": "x"}, "outside the workspace"),
    ("write_file", {"path": "/tmp/retrace-escape.txt", "content": "x"}, "outside the workspace"),
    ("write_file", {"path": "to_secret", "content": "pwned"}, "symlink"),
    ("write_file", {"path": "to_outside_dir/new.txt", "content": "pwned"}, "symlink"),
    ("write_file", {"path": "to_zero", "content": "x"}, "symlink"),
    ("write_file", {"path": "loop_b", "content": "x"}, "symlink loop"),
    ("write_file", {"path": "fifo", "content": "x"}, "not a regular file"),
    ("write_file", {"path": ".git/config", "content": "x"}, ".git"),
    ("write_file", {"path": LONG_NAME, "content": "x"}, "too long"),
    ("write_file", {"path": DEEP_PATH, "content": "x"}, "too long"),
    ("write_file", {"path": "caf\udce9.txt", "content": "x"}, "not valid UTF-8"),
    ("write_file", {"path": "src", "content": "x"}, "directory"),
    # The file system refuses (a file where a folder should be): an error result, not a dead turn.
    ("write_file", {"path": "ok.txt/sub.txt", "content": "x"}, "write_file failed"),
    ("edit_file", {"path": "to_secret", "old_string": "outside", "new_string": "x"}, "symlink"),
    ("edit_file", {"path": "fifo", "old_string": "a", "new_string": "b"}, "not a regular file"),
    ("edit_file", {"path": "/etc/hostname", "old_string": "a", "new_string": "b"}, "outside"),
    ("list_files", {"path": "../outside"}, "outside the workspace"),
    ("list_files", {"path": "to_outside_dir"}, "symlink"),
    ("search_text", {"pattern": "secret", "path": "../outside"}, "outside the workspace"),
    ("search_text", {"pattern": "secret", "path": "to_secret"}, "symlink"),
    ("search_text", {"pattern": "x", "path": "fifo"}, "not a regular file"),
    ("read_file", {"path": 5}, "invalid input"),
    ("write_file", {"path": "x.txt"}, "invalid input"),
    ("write_file", {"path": "x.txt", "content": "x", "mode": "0777"}, "invalid input"),
    ("nuke_workspace", {}, "unknown tool"),
]
DEVICE_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("read_file", {"path": "zero_dev"}, "not a regular file"),
    ("write_file", {"path": "zero_dev", "content": "x"}, "not a regular file"),
    ("search_text", {"pattern": "x", "path": "zero_dev"}, "not a regular file"),
]


def process_alive(pid: int) -> bool:
    """A zombie (killed, not yet reaped by init) counts as dead."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize(("tool", "tool_input", "expected"), REFUSED + DEVICE_CASES)
async def test_hostile_call_is_refused_and_changes_nothing(
    arena: tuple[Path, Path], tool: str, tool_input: dict[str, Any], expected: str
) -> None:
    ws, outside = arena
    if "zero_dev" in str(tool_input.get("path")) and not (ws / "zero_dev").exists():
        pytest.skip("device nodes need root")
    before_ws, before_out = entries_and_modes(ws), outside_state(outside)
    # A FIFO or /dev/zero that slipped through would hang or never end: bound the call.
    result = await asyncio.wait_for(execute(tool, tool_input, ctx_for(ws)), 10)
    assert result.is_error, result.output
    assert expected in result.output, result.output
    assert "\n" not in result.output.strip(), "one line"
    assert SECRET.strip() not in result.output
    assert entries_and_modes(ws) == before_ws
    assert outside_state(outside) == before_out
    FIGURES["hostileCallsRefused"] += 1


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("read_file", {"path": "inside_link"}),
        ("read_file", {"path": str(Path("ok.txt"))}),
        ("write_file", {"path": "n" * 255, "content": "max-length name\n"}),
        ("write_file", {"path": "unicodé/名前 😀.txt", "content": "fine\n"}),
        ("list_files", {}),
        ("search_text", {"pattern": "fine"}),
    ],
)
async def test_controls_inside_the_workspace_still_work(
    arena: tuple[Path, Path], tool: str, tool_input: dict[str, Any]
) -> None:
    """The refusals above are not a blanket "no": the same tools work on ordinary paths."""
    ws, _ = arena
    result = await asyncio.wait_for(execute(tool, tool_input, ctx_for(ws)), 10)
    assert not result.is_error, result.output
    assert SECRET.strip() not in result.output
    if tool == "write_file":
        assert (ws / tool_input["path"]).read_text() == tool_input["content"]
    if tool == "list_files":
        # Devices, FIFOs and links out of the workspace are not offered to the model as files.
        listed = set(result.output.splitlines())
        assert "ok.txt" in listed and "fifo" not in listed and "zero_dev" not in listed
    FIGURES["controlsAllowed"] += 1


async def test_absolute_path_inside_the_workspace_is_allowed(arena: tuple[Path, Path]) -> None:
    ws, _ = arena
    result = await execute("read_file", {"path": str(ws / "ok.txt")}, ctx_for(ws))
    assert not result.is_error and "fine" in result.output


async def test_run_command_timeout_kills_the_whole_process_group(arena: tuple[Path, Path]) -> None:
    ws, _ = arena
    pid_file = ws.parent / "child.pid"
    command = (
        f"(trap '' TERM; sleep 4; touch late.txt) & echo $! > '{pid_file}'; bash -c 'sleep 60' & sleep 60"
    )
    started = time.monotonic()
    result = await execute("run_command", {"command": command, "timeout_s": 1}, ctx_for(ws))
    elapsed = time.monotonic() - started
    assert result.is_error and "timed out after 1s" in result.output
    assert result.changed_paths is None
    assert elapsed < 30  # bounded, not the 60 s the command asked for
    child = int(pid_file.read_text())
    await asyncio.sleep(0.2)
    assert not process_alive(child)
    await asyncio.sleep(4.5)  # the background child would have touched late.txt by now
    assert not (ws / "late.txt").exists()


async def test_run_command_background_child_does_not_outlive_a_finished_command(
    arena: tuple[Path, Path],
) -> None:
    ws, _ = arena
    # Detached from the output pipe, so the call returns at once; the child must die with it, or it
    # would change the workspace after the checkpoint, unseen and attributed to nobody.
    command = "(sleep 2; touch late.txt) >/dev/null 2>&1 & echo started"
    started = time.monotonic()
    result = await execute("run_command", {"command": command}, ctx_for(ws))
    assert not result.is_error and "started" in result.output
    assert time.monotonic() - started < 2
    await asyncio.sleep(2.5)
    assert not (ws / "late.txt").exists()


async def test_run_command_caps_huge_and_binary_output(arena: tuple[Path, Path]) -> None:
    ws, _ = arena
    ctx = ctx_for(ws, output_cap_bytes=4000)
    result = await execute("run_command", {"command": "yes 'line of output' | head -c 50000000"}, ctx)
    assert not result.is_error
    assert len(result.output.encode()) < 4000 + 300
    assert "bytes omitted" in result.output and "[exit code 0]" in result.output
    binary = await execute("run_command", {"command": "head -c 200000 /dev/urandom; exit 3"}, ctx)
    assert binary.is_error and "[exit code 3]" in binary.output
    assert len(binary.output.encode()) < 3 * 4000 + 300  # replacement characters are 3 bytes
    binary.output.encode("utf-8")  # what goes to the model and the journal is valid text


async def test_binary_and_huge_files_are_read_safely(arena: tuple[Path, Path]) -> None:
    ws, _ = arena
    (ws / "blob.bin").write_bytes(bytes(range(256)) * 100)
    result = await execute("read_file", {"path": "blob.bin"}, ctx_for(ws))
    assert not result.is_error and "binary file (25600 bytes)" in result.output
    (ws / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    latin = await execute("read_file", {"path": "latin1.txt"}, ctx_for(ws))
    assert "binary file" in latin.output
    line = b"0123456789" * 9 + b"\n"
    with (ws / "huge.log").open("wb") as f:
        for _ in range(24):  # 24 MB, more than read_file ever loads
            f.write(line * 10486)
    huge = await execute("read_file", {"path": "huge.log", "offset": 5, "limit": 3}, ctx_for(ws))
    assert not huge.is_error
    assert huge.output.count("0123456789") == 27 and "larger than 16 MB" in huge.output
    edit = await execute("edit_file", {"path": "blob.bin", "old_string": "a", "new_string": "b"}, ctx_for(ws))
    assert edit.is_error and "not a UTF-8 text file" in edit.output
    search = await execute("search_text", {"pattern": "012345", "glob": "*.log"}, ctx_for(ws))
    assert not search.is_error and len(search.output.encode()) <= 30_000 + 300


async def test_shell_made_hostile_names_do_not_break_the_session(tmp_path: Path) -> None:
    """Through the real server: hostile tool calls are answered with errors, a shell command
    creates a non-UTF-8 name, a FIFO and a link out of the workspace; the turn ends normally, the
    history stays valid (the fake model validates every request) and nothing outside changes."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "ok.txt").write_text("fine\n")
    (ws / "to_secret").symlink_to(outside / "secret.txt")
    calls = [
        {"name": "write_file", "input": {"path": "../escape.txt", "content": "x"}},
        {"name": "write_file", "input": {"path": "to_secret", "content": "pwned"}},
        {"name": "read_file", "input": {"path": "to_secret"}},
        {"name": "write_file", "input": {"path": "n" * 300, "content": "x"}},
        {"name": "edit_file", "input": {"path": "ok.txt", "old_string": 7, "new_string": "x"}},
        {
            "name": "run_command",
            "input": {
                "command": "touch $'bad\\xffname.txt' && mkfifo pipe && ln -s /etc/passwd pw && echo made"
            },
        },
        {"name": "read_file", "input": {"path": "pipe"}},
        {"name": "list_files", "input": {}},
        {"name": "search_text", "input": {"pattern": "fine"}},
        {"name": "write_file", "input": {"path": "after.txt", "content": "still working\n"}},
    ]
    model = scripted_model([{"text": "Trying things.", "toolCalls": calls}, {"text": "Done."}])
    editor = await start_editor(ws, tmp_path / "store", env=model_env(model), settings=AUTO)
    try:
        await editor.run_turn("go", limit_s=60)
        finished = editor.events_of("toolCallFinished")
        assert len(finished) == len(calls)
        statuses = [e["status"] for e in finished]
        assert statuses[:5] == ["error"] * 5
        assert statuses[5] == "ok" and statuses[6] == "error"
        assert statuses[7:] == ["ok", "ok", "ok"]
        assert "pwned" not in (outside / "secret.txt").read_text()
        assert not (tmp_path / "escape.txt").exists()
        assert all(SECRET.strip() not in e["output"] for e in finished)
        assert (ws / "after.txt").read_text() == "still working\n"
        assert model.statuses and set(model.statuses) == {200}, model.statuses
        turn_errors = [e for e in editor.events_of("error") if not e.get("retrying")]
        finish = editor.events_of("turnFinished")[-1]
        assert finish["stopReason"] == "end_turn", (finish, turn_errors)
        timeline = await editor.request("retrace/timeline/get", {})
        assert timeline["checkpoints"], "the session still checkpoints"
    finally:
        await stop_editor(editor)
        model.stop()
    FIGURES["hostileCallsRefused"] += 6


def test_zz_record_figures() -> None:
    """Runs last in this module (name order within the file): records what was exercised."""
    record_figures("hostile-inputs", "ci", dict(FIGURES))
    assert FIGURES["hostileCallsRefused"] > 0
