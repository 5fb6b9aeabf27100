"""Write a session for the readability scenario (tests/e2e/readable.mjs) into a workspace's store,
as the agent would journal it:

* turn 1: ``write_file`` of src/app/main.py, then two read-only calls (``read_file``,
  ``list_files``: checkpoints that change nothing);
* turn 2: 50 ``edit_file`` calls on src/app/scale.py in a row;
* turn 3: 24 ``edit_file`` calls alternating between src/app/alpha.py and src/app/beta.py (rows that
  do not fold: they push the newest rows below the fold of a short sidebar);
* then an unannounced change of README.md and a code restore to the end of turn 1 (a safety
  capture and a restore).

``python tests/e2e/seed_readable.py WORKSPACE --store DIR`` prints JSON: the session id and the
number of checkpoints made.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from seed_story import _append_event, _id, _message, _now  # this folder: run as a script

from retrace.engine import Engine


class _Agent:
    """One session's journal and checkpoints, a tool call at a time."""

    def __init__(self, engine: Engine, workspace: Path) -> None:
        self.engine, self.workspace = engine, workspace
        self.sid = _id("ses")
        self.head: str | None = None
        self.created: list[str] = []

    def turn(self, prompt: str, calls: list[tuple[str, dict[str, Any]]]) -> None:
        turn_id = _id("turn")
        _append_event(self.engine, {"type": "turn", "turnId": turn_id, "text": prompt, "createdAt": _now()},
                      session_id=self.sid)  # fmt: skip
        self.head = _message(self.engine, self.sid, self.head, "user", [{"type": "text", "text": prompt}],
                             turnId=turn_id, kind="prompt")  # fmt: skip
        ids = [(_id("toolu"), tool, tool_input) for tool, tool_input in calls]
        uses = [{"type": "tool_use", "id": c, "name": t, "input": i} for c, t, i in ids]
        assistant = _message(
            self.engine, self.sid, self.head, "assistant", uses, turnId=turn_id, kind="assistant"
        )
        results = []
        for call_id, tool, tool_input in ids:
            changed = self._apply(tool, tool_input)
            _append_event(self.engine,
                {"type": "toolCallIntent", "id": call_id, "tool": tool, "input": tool_input,
                 "turnId": turn_id, "messageId": assistant, "createdAt": _now()},
                session_id=self.sid,
            )  # fmt: skip
            _append_event(self.engine,
                {"type": "toolCallResult", "id": call_id, "tool": tool, "status": "ok", "output": "ok",
                 "isError": False, "durationMs": 1.0, "changedPaths": changed, "turnId": turn_id},
                session_id=self.sid,
            )  # fmt: skip
            cp = self.engine.checkpoint(
                f"{tool}: {tool_input['path']}", changed, kind="tool", session_id=self.sid, turn_id=turn_id,
                tool=tool, tool_call_id=call_id, conversation=f"{assistant}#{call_id}",
            )  # fmt: skip
            self.created.append(cp.id)
            results.append({"type": "tool_result", "tool_use_id": call_id, "content": "ok"})
        self.head = _message(
            self.engine, self.sid, assistant, "user", results, turnId=turn_id, kind="toolResults"
        )
        done = [{"type": "text", "text": "Done."}]
        self.head = _message(
            self.engine, self.sid, self.head, "assistant", done, turnId=turn_id, kind="assistant"
        )

    def _apply(self, tool: str, tool_input: dict[str, Any]) -> list[str]:
        path = self.workspace / tool_input["path"]
        if tool == "write_file":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(tool_input["content"], "utf-8")
            return [tool_input["path"]]
        if tool == "edit_file":
            text = path.read_text("utf-8") if path.exists() else ""
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text + tool_input["new_string"] + "\n", "utf-8")
            return [tool_input["path"]]
        return []  # read_file, list_files: nothing changes


def _edit(path: str, line: str) -> tuple[str, dict[str, Any]]:
    return ("edit_file", {"path": path, "old_string": "", "new_string": line})


def seed(engine: Engine, workspace: Path) -> tuple[str, int]:
    (workspace / "README.md").write_text("# demo\n", "utf-8")
    engine.record_external()
    agent = _Agent(engine, workspace)
    agent.turn("Create the app", [
        ("write_file", {"path": "src/app/main.py", "content": "print('hi')\n"}),
        ("read_file", {"path": "src/app/main.py"}),
        ("list_files", {"path": "src/app"}),
    ])  # fmt: skip
    end_of_turn_one = agent.created[-1]
    agent.turn("Tune the scale", [_edit("src/app/scale.py", f"step_{n} = {n}") for n in range(50)])
    agent.turn(
        "Spread the changes",
        [_edit(f"src/app/{'alpha' if n % 2 else 'beta'}.py", f"v{n} = {n}") for n in range(24)],
    )
    (workspace / "README.md").write_text("# demo, edited by hand\n", "utf-8")  # the safety capture keeps it
    engine.restore(end_of_turn_one, force=True)
    return agent.sid, len(agent.created)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--store", type=Path, default=None)
    args = parser.parse_args(argv)
    engine = Engine.open(args.workspace, args.store)
    try:
        sid, count = seed(engine, args.workspace)
        kinds = [cp.kind for cp in engine.timeline()][-3:]
    finally:
        engine.close()
    json.dump({"sessionId": sid, "checkpoints": count, "lastKinds": kinds}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
