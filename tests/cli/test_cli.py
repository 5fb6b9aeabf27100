"""The ``retrace`` console script, run as a real subprocess on temporary workspaces and stores.

Covers the ``--json`` contract (camelCase engine models), exit codes (0 / 1 / 2 / 3), every
expected error as one ``retrace: error:`` line with nothing changed, and a full checkpoint → edit →
restore → undo round trip in a workspace whose path has spaces and non-ASCII characters.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.cli.cli_support import RETRACE, Cli
from tests.oracles import file_bytes
from tests.process_support import dies
from tests.workspaces import project

from retrace.engine import Engine

pytestmark = pytest.mark.slow

ID = re.compile(r"^[0-9a-z]{6,40}$")


def assert_one_error_line(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("retrace: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    files = {
        "src/app.py": "def main():\n    return 1\n",
        "notes ü.txt": "first notes\n",
        "gone.txt": "delete me\n",
    }
    return project(tmp_path, "my wörk space", files)


@pytest.fixture
def cli(workspace: Path, tmp_path: Path) -> Cli:
    assert RETRACE.exists(), f"console script missing: {RETRACE} (run scripts/setup-python.sh)"
    return Cli(workspace, tmp_path / "store")


@pytest.fixture
def initialised(cli: Cli) -> Cli:
    cli("init")
    return cli


# --------------------------------------------------------------------------- init, checkpoint, log


def test_init_creates_the_store_once(cli: Cli) -> None:
    first = cli.json("init")
    assert first["created"] is True
    assert first["head"]["kind"] == "baseline"
    assert Path(first["store"]) == cli.store
    assert (cli.store / "store.json").exists()
    again = cli("init")
    assert "Already initialised" in again.stdout
    assert first["head"]["id"] in again.stdout


def test_checkpoint_prints_the_id_and_log_json_marks_the_head(initialised: Cli) -> None:
    cli = initialised
    (cli.workspace / "src" / "app.py").write_text("def main():\n    return 2\n")
    cp_id = cli("checkpoint", "--label", "second version").stdout.strip()
    assert ID.match(cp_id), cp_id

    log = cli.json("log")
    assert isinstance(log, list) and len(log) >= 2
    assert log[0]["kind"] == "baseline" and log[0]["parent"] is None
    assert log[-1]["id"] == cp_id and log[-1]["label"] == "second version" and log[-1]["kind"] == "manual"
    assert [c["head"] for c in log] == [False] * (len(log) - 1) + [True]
    for cp in log:
        assert {
            "id",
            "parent",
            "label",
            "kind",
            "files",
            "recoverability",
            "createdAt",
            "sessionId",
        } <= cp.keys()
        assert not any("_" in key for key in cp), cp.keys()  # camelCase on the wire
    changed = {f["path"] for cp in log for f in cp["files"]}
    assert "src/app.py" in changed

    text = cli("log").stdout.splitlines()
    assert text[-1].startswith("* ") and cp_id in text[-1] and "second version" in text[-1]
    assert all(not line.startswith("*") for line in text[:-1])


def test_checkpoint_json_is_the_checkpoint(initialised: Cli) -> None:
    cp = initialised.json("checkpoint", "--label", "mark")
    assert ID.match(cp["id"]) and cp["label"] == "mark" and cp["kind"] == "manual"
    assert initialised.json("show", cp["id"])["head"] is True


def test_show_accepts_head_and_prefixes(initialised: Cli) -> None:
    cli = initialised
    (cli.workspace / "gone.txt").unlink()
    cp_id = cli("checkpoint", "--label", "removed").stdout.strip()
    shown = cli.json("show", "head")
    assert shown["id"] == cp_id and shown["head"] is True
    assert cli.json("show", cp_id[:8])["id"] == cp_id
    text = cli("show", cp_id).stdout
    assert f"checkpoint {cp_id}" in text and "(head)" in text and "removed" in text


def test_log_says_what_cannot_be_restored(initialised: Cli) -> None:
    cli = initialised
    (cli.workspace / "huge.bin").write_bytes(os.urandom(9 * 1024 * 1024))  # over the 8 MiB default cap
    cli("checkpoint", "--label", "huge")
    log = cli.json("log")
    lossy = [c for c in log if c["recoverability"] != "full"]
    assert lossy and all(u["path"] == "huge.bin" for c in lossy for u in c["unrecoverable"])
    line = next(line for line in cli("log").stdout.splitlines() if lossy[0]["id"] in line)
    assert f"[{lossy[0]['recoverability']}: huge.bin: " in line and "size cap" in line


# --------------------------------------------------------------------------- diff


def test_diff_patch_stat_and_json(initialised: Cli) -> None:
    cli = initialised
    base = cli.json("log")[0]["id"]
    (cli.workspace / "src" / "app.py").write_text("def main():\n    return 42\n")
    (cli.workspace / "notes ü.txt").write_text("first notes\nsecond line ✓\n")
    (cli.workspace / "gone.txt").unlink()
    (cli.workspace / "new dir").mkdir()
    (cli.workspace / "new dir" / "fresh file.md").write_text("# fresh\n")
    after = cli("checkpoint", "--label", "edits").stdout.strip()

    patch = cli("diff", base, after).stdout
    assert "-    return 1" in patch and "+    return 42" in patch
    assert "+second line ✓" in patch

    changes = {c["path"]: c for c in cli.json("diff", base, after)}
    assert changes["src/app.py"]["status"] == "modified"
    assert changes["src/app.py"]["additions"] == 1 and changes["src/app.py"]["deletions"] == 1
    assert changes["notes ü.txt"]["status"] == "modified"
    assert changes["gone.txt"]["status"] == "deleted"
    assert changes["new dir/fresh file.md"]["status"] == "added"

    stat = cli("diff", base, after, "--stat").stdout
    assert "M src/app.py  +1 -1" in stat and "D gone.txt" in stat and "A new dir/fresh file.md" in stat

    # Without B: against the workspace as it is now, including unrecorded edits.
    (cli.workspace / "src" / "app.py").write_text("def main():\n    return 43\n")
    assert "+    return 43" in cli("diff", after).stdout
    assert cli("diff", after, after).stdout == ""


# --------------------------------------------------------------------------- restore


def test_round_trip_checkpoint_edit_restore_undo(initialised: Cli) -> None:
    cli = initialised
    original = file_bytes(cli.workspace)
    base = cli.json("log")[0]["id"]

    (cli.workspace / "src" / "app.py").write_text("def main():\n    return 'changed'\n")
    (cli.workspace / "gone.txt").unlink()
    (cli.workspace / "src" / "zusätzlich.py").write_text("EXTRA = True\n")
    edited_id = cli("checkpoint", "--label", "agent work").stdout.strip()
    edited = file_bytes(cli.workspace)
    assert edited != original

    # `retrace checkpoint` claims what changed since the last checkpoint as the caller's own
    # work, so restoring over it needs no force. A change made AFTER that checkpoint is nobody's
    # recorded work: restoring over it is refused until the user decides, and nothing changes.
    (cli.workspace / "late.txt").write_text("written after the checkpoint\n")
    refused = cli("restore", base, code=3)
    assert "--force" in refused.stdout and "--resolve" in refused.stdout
    assert "(1 conflicting file)" in refused.stdout
    conflicts = [
        line.split()[1] for line in refused.stdout.splitlines() if line.strip().startswith("conflict ")
    ]
    assert conflicts == ["late.txt"], refused.stdout
    (cli.workspace / "late.txt").unlink()
    assert file_bytes(cli.workspace) == edited

    preview = cli.json("restore", base, "--dry-run")
    assert preview["dryRun"] is True and preview["kind"] == "preview"
    planned = {f["path"]: f["action"] for f in preview["plan"]["files"]}
    assert planned == {"src/app.py": "overwrite", "gone.txt": "create", "src/zusätzlich.py": "delete"}
    assert file_bytes(cli.workspace) == edited

    applied = cli.json("restore", base)
    assert applied["kind"] == "applied" and applied["dryRun"] is False
    assert {f["path"] for f in applied["files"]} == set(planned)
    assert file_bytes(cli.workspace) == original
    restore_cp = applied["checkpoint"]
    assert restore_cp["kind"] == "restore" and restore_cp["restoredFrom"] == base

    # Undo = restore the checkpoint the restore was taken from; it is never a conflict.
    undo = cli("restore", restore_cp["parent"])
    assert undo.stdout.startswith("Restored ") and "Undo with: retrace restore" in undo.stdout
    assert file_bytes(cli.workspace) == edited
    log = cli.json("log")
    assert (
        log[-1]["head"] and log[-1]["kind"] == "restore" and log[-1]["restoredFrom"] == restore_cp["parent"]
    )
    assert edited_id in {c["id"] for c in log}


def test_conflicting_user_edit_is_kept_unless_resolved(initialised: Cli) -> None:
    cli = initialised
    base = cli.json("log")[0]["id"]
    (cli.workspace / "notes ü.txt").write_text("my own notes, not the agent's\n")
    before = file_bytes(cli.workspace)

    preview = cli.json("restore", base, "--dry-run")  # a dry run always exits 0, conflicts or not
    assert preview["kind"] == "conflict" and preview["dryRun"] is True
    refused = cli.json("restore", base, code=3)
    assert refused["kind"] == "conflict"
    conflict = next(f for f in refused["plan"]["files"] if f["path"] == "notes ü.txt")
    assert conflict["action"] == "conflict" and conflict["conflict"]["reason"] in ("external", "unrecorded")
    assert file_bytes(cli.workspace) == before

    kept = cli.json("restore", base, "--resolve", "notes ü.txt=skip")
    assert kept["kind"] in ("applied", "nothingToRestore")
    assert (cli.workspace / "notes ü.txt").read_text() == "my own notes, not the agent's\n"

    forced = cli("restore", base, "--resolve", "notes ü.txt=overwrite")
    assert forced.returncode == 0
    assert (cli.workspace / "notes ü.txt").read_text() == "first notes\n"


def test_restore_of_the_head_is_nothing_to_restore(initialised: Cli) -> None:
    out = initialised.json("restore", "head")
    assert out["kind"] == "nothingToRestore"
    assert "Nothing to restore" in initialised("restore", "head").stdout


def test_restore_path_scope(initialised: Cli) -> None:
    cli = initialised
    base = cli.json("log")[0]["id"]
    (cli.workspace / "src" / "app.py").write_text("changed\n")
    (cli.workspace / "notes ü.txt").write_text("changed too\n")
    cli("checkpoint")
    cli("restore", base, "--force", "--path", "src/app.py")
    assert (cli.workspace / "src" / "app.py").read_text() == "def main():\n    return 1\n"
    assert (cli.workspace / "notes ü.txt").read_text() == "changed too\n"


def test_conversation_mode_is_honest_without_a_conversation(initialised: Cli) -> None:
    cli = initialised
    base = cli.json("log")[0]["id"]
    (cli.workspace / "src" / "app.py").write_text("changed\n")
    cli("checkpoint")
    before = file_bytes(cli.workspace)
    out = cli.json("restore", base, "--mode", "conversation")
    assert out["kind"] == "nothingToRestore" and out["mode"] == "conversation"
    assert out["conversation"]["restored"] is False and out["conversation"]["message"]
    assert file_bytes(cli.workspace) == before  # a conversation restore never touches files
    assert "has no conversation" in cli("restore", base, "--mode", "conversation").stdout


def test_headless_run_then_restore_both(initialised: Cli) -> None:
    """`retrace run` against the local fake model, then code + conversation back to its first call."""
    cli = initialised
    cli.env = {k: v for k, v in cli.env.items() if not k.startswith("ANTHROPIC_")}
    cli.env["RETRACE_FAKE_MODEL"] = "e2e"
    before = file_bytes(cli.workspace)
    run = cli("run", "make the e2e changes")
    assert "session " in run.stdout
    tools = [c for c in cli.json("log") if c["kind"] == "tool"]
    assert tools and all(c["conversation"] for c in tools)
    assert file_bytes(cli.workspace) != before

    first = tools[0]["id"]
    both = cli.json("restore", first, "--mode", "both")
    assert both["kind"] in ("applied", "nothingToRestore")
    assert both["conversation"]["restored"] is True and both["conversation"]["head"]
    assert both["conversation"]["sessionId"] == tools[0]["sessionId"]
    assert cli.json("diff", first) == []  # the workspace is the first call's state again
    after_restore = file_bytes(cli.workspace)

    conv_only = cli("restore", tools[-1]["id"], "--mode", "conversation")
    assert "moved to checkpoint" in conv_only.stdout and "Files were left as they are." in conv_only.stdout
    assert file_bytes(cli.workspace) == after_restore
    # The command line's restores are journaled for the editor's "undo last restore", whatever the
    # mode: the last one is the conversation-only restore, with the head it moved away from.
    from retrace.app.restore_undo import last_restore
    from retrace.engine import Engine

    with Engine.open(cli.workspace, cli.store, readonly=True) as engine:
        last = last_restore(engine)
    assert last is not None and last.mode == "conversation" and last.code_before is None
    assert last.session_id == tools[0]["sessionId"]
    assert last.conversation_before == both["conversation"]["head"]


# --------------------------------------------------------------------------- stats, gc


def test_stats_and_gc(initialised: Cli) -> None:
    cli = initialised
    (cli.workspace / "src" / "app.py").write_text("changed\n")
    cli("checkpoint")
    stats = cli.json("stats")
    assert stats["checkpoints"] >= 2 and stats["totalBytes"] > 0
    assert {"p50Ms", "p95Ms", "p99Ms", "count"} <= stats["capture"].keys()
    text = cli("stats").stdout
    assert "storage:" in text and "capture latency: p50" in text and "restore success" in text
    assert re.search(r"\d+(\.\d)? (B|KiB|MiB)", text)
    report = cli.json("gc")
    assert {"checkpointsDropped", "blobsRemoved", "bytesFreed"} <= report.keys()
    assert cli("gc").stdout.startswith("Dropped ")


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "command", [["log"], ["show", "abcdef"], ["diff", "abcdef"], ["stats"], ["checkpoint"]]
)
def test_uninitialised_store_is_one_line_and_creates_nothing(cli: Cli, command: list[str]) -> None:
    proc = cli(*command, code=1)
    assert_one_error_line(proc, "retrace init")
    assert not cli.store.exists()


def test_unknown_checkpoint(initialised: Cli) -> None:
    before = initialised.json("log")
    for command in (["show", "zzzzzzzz"], ["diff", "zzzzzzzz"], ["restore", "zzzzzzzz"]):
        assert_one_error_line(initialised(*command, code=1), "zzzzzzzz")
    assert initialised.json("log") == before


def test_missing_workspace(tmp_path: Path) -> None:
    cli = Cli(tmp_path / "does not exist", tmp_path / "store")
    for command in (["init"], ["log"]):
        assert_one_error_line(cli(*command, code=1), "does not exist")
    assert not (tmp_path / "store").exists()


def test_path_outside_the_workspace(initialised: Cli, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("x\n")
    before = initialised.json("log")
    proc = initialised("checkpoint", "--path", str(outside), code=1)
    assert_one_error_line(proc, "outside the workspace")
    assert initialised.json("log") == before


def test_locked_store_refuses_writers_but_not_readers(initialised: Cli) -> None:
    with Engine.open(initialised.workspace, initialised.store):
        assert_one_error_line(initialised("checkpoint", code=1), "locked")
        assert_one_error_line(initialised("restore", "head", code=1), "locked")
        assert initialised.json("log")[-1]["head"] is True  # read-only commands still work


@pytest.mark.parametrize(
    "args",
    [
        ["restore", "abc", "--resolve", "no-equals-sign"],
        ["restore", "abc", "--resolve", "a.txt=destroy"],
        ["restore", "abc", "--mode", "sideways"],
        ["restore"],
        ["frobnicate"],
        [],
    ],
    ids=["resolve-syntax", "resolve-choice", "mode", "missing-id", "unknown-command", "no-command"],
)
def test_usage_errors_exit_2_with_one_line(cli: Cli, args: list[str]) -> None:
    proc = cli(*args, code=2, where=bool(args) and args[0] == "restore")
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0], proc.stderr
    assert not cli.store.exists()


# --------------------------------------------------------------------------- other components


def test_fake_model_subcommand_serves_and_prints_its_url(cli: Cli) -> None:
    proc = subprocess.Popen(
        [str(RETRACE), "fake-model", "--scenario", "demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _rpc(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def test_serve_subcommand_speaks_json_rpc_on_stdio(cli: Cli) -> None:
    env = {**cli.env, "RETRACE_STORE": str(cli.store)}
    proc = subprocess.Popen(
        [str(RETRACE), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        init = {"processId": None, "rootUri": cli.workspace.as_uri(), "capabilities": {}}
        proc.stdin.write(_rpc({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
        proc.stdin.flush()
        length = 0
        while (line := proc.stdout.readline().strip()) != b"":
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        reply = json.loads(proc.stdout.read(length))
        assert reply["id"] == 1 and "capabilities" in reply["result"], reply
        proc.stdin.write(_rpc({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None}))
        proc.stdin.write(_rpc({"jsonrpc": "2.0", "method": "exit", "params": None}))
        proc.stdin.flush()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_store_inside_the_workspace_is_refused(workspace: Path) -> None:
    inside = Cli(workspace, workspace / ".retrace-store")
    assert_one_error_line(inside("init", code=1), "inside the workspace")
    assert not (workspace / ".retrace-store").exists()


def test_headless_run_offers_the_tools_of_an_mcp_config_file(initialised: Cli, tmp_path: Path) -> None:
    """`retrace run --mcp FILE` (the `servers` map of .vscode/mcp.json): the MCP tool's write is
    checkpointed like any call, and the server is gone when the run ends."""
    cli = initialised
    server = Path(__file__).resolve().parents[1] / "fixtures" / "mcp" / "files_server.py"
    pid_file = tmp_path / "mcp.pid"
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "servers": {
                    "files": {
                        "command": sys.executable,
                        "args": [str(server)],
                        "env": {"PID_FILE": str(pid_file)},
                    }
                }
            }
        ),
        encoding="utf-8",
    )
    scenario = tmp_path / "scenario.json"
    call = {"name": "mcp__files__write_note", "input": {"path": "from-mcp.txt", "text": "headless"}}
    scenario.write_text(
        json.dumps({"responses": [{"toolCalls": [call]}, {"text": "done"}]}), encoding="utf-8"
    )
    cli.env = {k: v for k, v in cli.env.items() if not k.startswith("ANTHROPIC_")}
    cli.env["RETRACE_FAKE_MODEL"] = str(scenario)
    cli("run", "--mcp", str(config), "write through mcp")
    assert (cli.workspace / "from-mcp.txt").read_text() == "headless"
    (cp,) = [c for c in cli.json("log") if c.get("tool") == "mcp__files__write_note"]
    assert cp["kind"] == "tool"
    pid = int(pid_file.read_text())
    assert asyncio.run(dies(pid))  # stopped when the run ended


def test_headless_run_refuses_a_broken_mcp_config_file(initialised: Cli, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{"servers": {"x": {"type": "stdio"}}}', encoding="utf-8")
    result = initialised("run", "--mcp", str(config), "hello", code=1)
    assert "mcp.json" in result.stderr and "command" in result.stderr
