"""The agent's terminal over the real server: ``cd`` and ``export`` persist between
``run_command`` calls (also after ``exit 3``; a timed-out command changes nothing), every
checkpoint records the state with a secret variable's value hidden, the timeline row shows it,
a server restart continues from it, and restores (conversation, both) bring it back."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import AUTO, EditorClient, fake_model, model_env, start_editor, stop_editor

from retrace.agent.terminal import LEFT_UNSET, NOT_RECORDED

pytestmark = [
    pytest.mark.slow,
    pytest.mark.e2e,
    pytest.mark.skipif(sys.platform == "win32", reason="cmd.exe/PowerShell keep no terminal state"),
]

DEFAULT = {"cwd": "", "env": {}, "hidden": [], "unset": []}
SECRET = "s3cr3t"


def _real(path: Path) -> str:
    return os.path.realpath(path)


def _outputs(editor: EditorClient, turn_id: str) -> list[str]:
    return [e["output"] for e in editor.events_of("toolCallFinished", turn_id)]


def _tool_checkpoints(editor: EditorClient, turn_id: str) -> list[dict[str, Any]]:
    return [
        e["checkpoint"]
        for e in editor.events_of("checkpointCreated", turn_id)
        if e["checkpoint"]["kind"] == "tool"
    ]


def _rows(tree: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for story in tree["sessions"]:
        for item in story["items"]:
            rows.extend(item["rows"] if item["kind"] == "turn" else [item])
    return rows


def _journals(store: Path) -> str:
    return "".join(j.read_text("utf-8") for j in store.glob("sessions/*/journal.jsonl"))


def _recorded_terminals(store: Path) -> list[str]:
    """The ``terminal`` of every checkpoint line of the store's journals, as stored (JSON). (The
    command text that set the secret, ``API_TOKEN=…``, is journaled redacted: see
    :mod:`retrace.redact`.)"""
    found = []
    for journal in store.glob("sessions/*/journal.jsonl"):
        for line in journal.read_text("utf-8").splitlines():
            event = json.loads(line)
            if event.get("type") == "checkpoint" and event["checkpoint"].get("terminal") is not None:
                found.append(json.dumps(event["checkpoint"]["terminal"]))
    return found


async def test_terminal_state_persists_is_recorded_restored_and_survives_a_restart(
    workspace: Path, store: Path
) -> None:
    model = fake_model("terminal")
    root = _real(workspace)
    try:
        env = model_env(model)
        editor = await start_editor(workspace, store, env=env, settings=AUTO)
        first = await editor.run_turn("set up the terminal")
        sid, turn = first["sessionId"], first["turnId"]
        start, into_sub, slow, where = _outputs(editor, turn)
        assert start == "start\n[exit code 0]"
        assert into_sub == "[exit code 3]"  # `exit 3` still leaves its state behind
        assert "timed out" in slow
        # Persistence: the cd and the exports of the earlier call; nothing of the killed one.
        assert where.splitlines()[:2] == [f"{root}/sub", "NODE_ENV=1 T=6 LOST=[]"]

        cps = _tool_checkpoints(editor, turn)
        assert [cp["terminal"] for cp in cps] == [DEFAULT] + [
            {"cwd": "sub", "env": {"NODE_ENV": "1"}, "hidden": ["API_TOKEN"], "unset": []}
        ] * 3
        recorded = _recorded_terminals(store)
        assert any('"API_TOKEN"' in state for state in recorded)
        assert not any(SECRET in state for state in recorded), "a secret value was recorded"
        assert SECRET not in _journals(store), "the secret reached the journal (command line or output)"

        tree = await editor.request("retrace/timeline/tree", {"sessionId": sid})
        terminals = {row["checkpoint"]["id"]: row["terminal"] for row in _rows(tree)}
        assert terminals[cps[0]["id"]] is None  # the default state is not worth a line
        assert terminals[cps[1]["id"]] == "Terminal: cwd `sub`, API_TOKEN=(not recorded), NODE_ENV=1"
        await stop_editor(editor)

        # A restart continues from the last checkpoint's state (a secret's value was never
        # recorded: it is unset now, and the command's result says so).
        editor = await start_editor(workspace, store, env=env, settings=AUTO)
        again = await editor.run_turn("after restart", session_id=sid)
        (output,) = _outputs(editor, again["turnId"])
        assert output.splitlines()[:2] == [f"{root}/sub", "NODE_ENV=1 T=[]"]
        assert f"[terminal: {NOT_RECORDED}: API_TOKEN; {LEFT_UNSET}]" in output

        # Conversation restore to a checkpoint with a hidden variable: it cannot come back by value.
        restored = await editor.request(
            "retrace/checkpoint/restore", {"id": cps[1]["id"], "mode": "conversation"}
        )
        assert restored["terminalNotes"] == [f"{NOT_RECORDED}: API_TOKEN; {LEFT_UNSET}"]

        # A conversation restore to before the cd: the next command starts at the root, clean.
        back = await editor.request(
            "retrace/checkpoint/restore", {"id": cps[0]["id"], "mode": "conversation"}
        )
        assert back["terminalNotes"] == []
        await stop_editor(editor)

        # ... and the restored state is what a restart continues from (journaled with the restore).
        editor = await start_editor(workspace, store, env=env, settings=AUTO)
        after = await editor.run_turn("after restore", session_id=sid)
        (output,) = _outputs(editor, after["turnId"])
        assert output.splitlines()[:2] == [root, "NODE_ENV=[]"]
        assert "[terminal:" not in output
        (cp,) = _tool_checkpoints(editor, after["turnId"])
        assert cp["terminal"] == DEFAULT
        await stop_editor(editor)
    finally:
        model.stop()


async def test_a_code_restore_leaves_the_terminal(workspace: Path, store: Path) -> None:
    model = fake_model("terminal")
    try:
        env = model_env(model)
        editor = await start_editor(workspace, store, env=env, settings=AUTO)
        first = await editor.run_turn("set up the terminal")
        sid, turn = first["sessionId"], first["turnId"]
        cps = _tool_checkpoints(editor, turn)
        code = await editor.request("retrace/checkpoint/restore", {"id": cps[0]["id"], "mode": "code"})
        assert code["outcome"]["kind"] == "applied"
        assert code["terminalNotes"] == []
        # The cwd `sub` vanished with the code restore: the next command starts at the root and
        # says so; NODE_ENV and the secret are still set (the terminal was not restored).
        after = await editor.run_turn("after restart", session_id=sid)
        (output,) = _outputs(editor, after["turnId"])
        root = _real(workspace)
        assert output.splitlines()[:2] == [root, f"NODE_ENV=1 T=[{SECRET}]"]  # the live value, no restart
        assert "[terminal: `sub` is gone; this command started at the workspace root]" in output

        # "Restore both" to just after the cd: files and terminal; the secret keeps its live value.
        both = await editor.request("retrace/checkpoint/restore", {"id": cps[1]["id"], "mode": "both"})
        assert both["outcome"]["kind"] == "applied", json.dumps(both)
        assert both["terminalNotes"] == [f"{NOT_RECORDED}: API_TOKEN; kept the session's current value"]
        assert (workspace / "sub" / "f.txt").read_text() == "x\n"
        last = await editor.run_turn("after both", session_id=sid)
        (output,) = _outputs(editor, last["turnId"])
        assert output.splitlines()[:2] == [f"{root}/sub", f"NODE_ENV=1 T=[{SECRET}]"]
        await stop_editor(editor)
    finally:
        model.stop()
