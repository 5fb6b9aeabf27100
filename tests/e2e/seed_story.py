"""Write a long agent session straight into a workspace's store, as the agent would journal it:
``turns`` turns of ``steps`` edit_file calls each (prompt, assistant tool batch, results, one
checkpoint per call), then a code restore to the middle of the story.

``python tests/e2e/seed_story.py WORKSPACE [--turns 25] [--steps 20] [--store DIR]`` prints the
session id. The store defaults to the engine's default location (``$XDG_DATA_HOME``), which is
where the server started by the extension looks.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from retrace.engine import Engine
from retrace.engine.store.events import parse_event


def _append_event(engine: Engine, event: dict[str, Any], **kw: Any) -> None:
    """Journal a seed event given in its wire form (the engine appends typed events only)."""
    typed = parse_event(event)
    assert typed is not None, event["type"]
    engine.append_event(typed, **kw)


FILE = "scale.txt"


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _message(
    engine: Engine, sid: str, parent: str | None, role: str, content: list[Any], **extra: Any
) -> str:
    mid = _id("msg")
    event = {"type": "message", "id": mid, "parent": parent, "role": role, "content": content, **extra}
    _append_event(engine, {**event, "createdAt": _now()}, session_id=sid)
    return mid


def seed(engine: Engine, workspace: Path, turns: int, steps: int) -> tuple[str, list[str]]:
    """Returns (session id, checkpoint ids in order)."""
    sid = _id("ses")
    path = workspace / FILE
    values = [0] * 10
    path.write_text("".join(f"x{n} = 0\n" for n in range(10)), "utf-8")
    engine.record_external(session_id=sid)
    head: str | None = None
    created: list[str] = []
    step = 0
    for turn in range(1, turns + 1):
        turn_id = _id("turn")
        prompt = f"Turn {turn}: tune the scale constants, round {turn}"
        _append_event(
            engine, {"type": "turn", "turnId": turn_id, "text": prompt, "createdAt": _now()}, session_id=sid
        )
        head = _message(
            engine, sid, head, "user", [{"type": "text", "text": prompt}], turnId=turn_id, kind="prompt"
        )
        calls = []
        for _ in range(steps):
            line = step % 10
            old, new = f"x{line} = {values[line]}", f"x{line} = {values[line] + 1}"
            values[line] += 1
            calls.append((_id("toolu"), {"path": FILE, "old_string": old, "new_string": new}))
            step += 1
        uses = [{"type": "tool_use", "id": c, "name": "edit_file", "input": i} for c, i in calls]
        assistant = _message(engine, sid, head, "assistant", uses, turnId=turn_id, kind="assistant")
        results = []
        for call_id, tool_input in calls:
            _append_event(engine,
                {"type": "toolCallIntent", "id": call_id, "tool": "edit_file", "input": tool_input,
                 "turnId": turn_id, "messageId": assistant, "createdAt": _now()},
                session_id=sid,
            )  # fmt: skip
            text = path.read_text("utf-8").replace(tool_input["old_string"], tool_input["new_string"], 1)
            path.write_text(text, "utf-8")
            _append_event(engine,
                {"type": "toolCallResult", "id": call_id, "tool": "edit_file", "status": "ok", "output": "ok",
                 "isError": False, "durationMs": 1.0, "changedPaths": [FILE], "turnId": turn_id},
                session_id=sid,
            )  # fmt: skip
            cp = engine.checkpoint(
                f"edit_file: {FILE}", [FILE], kind="tool", session_id=sid, turn_id=turn_id,
                tool="edit_file", tool_call_id=call_id, conversation=f"{assistant}#{call_id}",
            )  # fmt: skip
            created.append(cp.id)
            results.append({"type": "tool_result", "tool_use_id": call_id, "content": "ok"})
        head = _message(engine, sid, assistant, "user", results, turnId=turn_id, kind="toolResults")
        head = _message(engine, sid, head, "assistant", [{"type": "text", "text": f"Round {turn} done."}],
                        turnId=turn_id, kind="assistant")  # fmt: skip
    if created:
        engine.restore(created[len(created) // 2])
    return sid, created


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--turns", type=int, default=25)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--store", type=Path, default=None)
    args = parser.parse_args(argv)
    engine = Engine.open(args.workspace, args.store)
    try:
        sid, created = seed(engine, args.workspace, args.turns, args.steps)
    finally:
        engine.close()
    json.dump({"sessionId": sid, "checkpoints": len(created)}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
