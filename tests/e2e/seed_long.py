"""Write a long agent session (10,000 tool calls by default) straight into a workspace's store,
through the engine's public API, as the agent would journal it: ``turns`` turns of ``steps`` tool
calls each over a small workspace (``src/mod_NN.py`` files): mostly ``edit_file`` calls, every
seventh a ``run_command`` that touches ``build/log_NN.txt``, every thirteenth a ``write_file``
of a ``docs/`` file, each with its intent, result and checkpoint (changed paths given, so a step
costs one small capture and one journal append).

``python tests/e2e/seed_long.py WORKSPACE [--turns 500] [--steps 20] [--store DIR] [--cached]`` prints
``{"sessionId", "checkpoints", "tools", "lastPath"}`` as JSON. Non-checkpoint events are appended
without fsync (a generator, not the agent: a crash here only loses a test fixture).
``--cached`` installs a copy of the machine's cached session instead (:func:`cached`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from retrace.engine import Engine
from retrace.engine.store.events import parse_event
from retrace.engine.store.home import default_store_dir


def _append_event(engine: Engine, event: dict[str, Any], **kw: Any) -> None:
    """Journal a seed event given in its wire form (the engine appends typed events only)."""
    typed = parse_event(event)
    assert typed is not None, event["type"]
    engine.append_event(typed, **kw)


MODULES = 40


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def _now() -> str:
    return datetime.now(UTC).isoformat()


class _Writer:
    def __init__(self, engine: Engine, workspace: Path, sid: str) -> None:
        self.engine, self.workspace, self.sid = engine, workspace, sid
        self.values = [0] * MODULES
        self.head: str | None = None
        self.tools: Counter[str] = Counter()
        self.last_path = ""
        self.on_turn: Callable[[str, str, datetime], None] = lambda _turn_id, _prompt, _at: None
        """Called when a turn starts (as the agent's ``turnStarted`` event would be)."""
        self.calls: dict[str, tuple[str, dict[str, Any]]] = {}
        """Tool call id → (tool, input), as the agent's replay buffer knows them."""

    def event(self, event: dict[str, Any]) -> None:
        event.setdefault("createdAt", _now())
        _append_event(self.engine, event, session_id=self.sid, durable=False)

    def message(self, role: str, content: list[Any], turn_id: str, kind: str) -> str:
        mid = _id("msg")
        self.event({"type": "message", "id": mid, "parent": self.head, "role": role, "content": content,
                    "turnId": turn_id, "kind": kind})  # fmt: skip
        self.head = mid
        return mid

    def call(self, step: int) -> tuple[str, dict[str, Any], str]:
        """(tool, input, changed path) of step ``step``, applied to the workspace."""
        n = step % MODULES
        if step % 7 == 3:
            rel = f"build/log_{n:02d}.txt"
            (self.workspace / "build").mkdir(exist_ok=True)
            (self.workspace / rel).write_text(f"build {step} ok\n", "utf-8")
            return "run_command", {"command": f"make check-{n} > {rel}"}, rel
        if step % 13 == 5:
            rel = f"docs/note_{n:02d}.md"
            content = f"# Note {step}\n\nWritten at step {step}.\n"
            (self.workspace / "docs").mkdir(exist_ok=True)
            (self.workspace / rel).write_text(content, "utf-8")
            return "write_file", {"path": rel, "content": content}, rel
        rel = f"src/mod_{n:02d}.py"
        old, new = f"value_{n} = {self.values[n]}", f"value_{n} = {self.values[n] + 1}"
        self.values[n] += 1
        path = self.workspace / rel
        path.write_text(path.read_text("utf-8").replace(old, new, 1), "utf-8")
        return "edit_file", {"path": rel, "old_string": old, "new_string": new}, rel

    def turn(self, number: int, steps: int, first_step: int) -> None:
        turn_id = _id("turn")
        prompt = f"Turn {number}: refactor batch {number} of the value constants"
        started = datetime.now(UTC)
        self.event({"type": "turn", "turnId": turn_id, "text": prompt, "createdAt": started.isoformat()})
        self.on_turn(turn_id, prompt, started)
        self.message("user", [{"type": "text", "text": prompt}], turn_id, "prompt")
        calls = [(_id("toolu"), step) for step in range(first_step, first_step + steps)]
        uses: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        assistant = _id("msg")
        for call_id, step in calls:
            tool, tool_input, rel = self.call(step)
            uses.append({"type": "tool_use", "id": call_id, "name": tool, "input": tool_input})
            self.calls[call_id] = (tool, tool_input)
            self.event({"type": "toolCallIntent", "id": call_id, "tool": tool, "input": tool_input,
                        "turnId": turn_id, "messageId": assistant})  # fmt: skip
            result: dict[str, Any] = {"type": "toolCallResult", "id": call_id, "tool": tool, "status": "ok"}
            result |= {"output": "ok", "isError": False}
            self.event({**result, "durationMs": 1, "changedPaths": [rel], "turnId": turn_id})
            label = f"{tool}: {tool_input.get('path') or tool_input.get('command')}"
            self.engine.checkpoint(label, [rel], kind="tool", session_id=self.sid, turn_id=turn_id, tool=tool,
                                   tool_call_id=call_id, conversation=f"{assistant}#{call_id}")  # fmt: skip
            self.tools[tool] += 1
            self.last_path = rel
            results.append({"type": "tool_result", "tool_use_id": call_id, "content": "ok"})
        self.event({"type": "message", "id": assistant, "parent": self.head, "role": "assistant",
                    "content": uses, "turnId": turn_id, "kind": "assistant"})  # fmt: skip
        self.head = assistant
        self.message("user", results, turn_id, "toolResults")
        self.message("assistant", [{"type": "text", "text": f"Batch {number} done."}], turn_id, "assistant")


def start(engine: Engine, workspace: Path) -> _Writer:
    """The workspace's files, a new session and its writer (call ``writer.turn`` to add turns)."""
    for folder in ("src", "build", "docs"):
        (workspace / folder).mkdir(exist_ok=True)
    for n in range(MODULES):
        (workspace / f"src/mod_{n:02d}.py").write_text(f'"""Module {n}."""\n\nvalue_{n} = 0\n', "utf-8")
    sid = _id("ses")
    engine.record_external(session_id=sid)
    return _Writer(engine, workspace, sid)


def seed_long(engine: Engine, workspace: Path, turns: int = 500, steps: int = 20) -> dict[str, Any]:
    """Returns ``{"sessionId", "checkpoints", "tools", "lastPath"}``."""
    writer = start(engine, workspace)
    sid = writer.sid
    for turn in range(1, turns + 1):
        writer.turn(turn, steps, (turn - 1) * steps)
    return {"sessionId": sid, "checkpoints": turns * steps, "tools": dict(writer.tools),
            "lastPath": writer.last_path}  # fmt: skip


def cached(turns: int = 500, steps: int = 20) -> Path:
    """A directory holding ``ws/``, ``store/`` and ``seed.json`` for this size, generated once per
    machine (in the temporary directory, keyed by the generator's code above) and then reused. Do not
    open it: :func:`copy_to` a place of your own first (an engine writes to its store)."""
    generator = Path(__file__).read_text("utf-8").split("\ndef cached(")[0]  # what makes the session
    key = hashlib.sha256(generator.encode()).hexdigest()[:12]
    target = Path(tempfile.gettempdir()) / f"retrace-long-{turns}x{steps}-{key}"
    if (target / "seed.json").exists():
        return target
    shutil.rmtree(target, ignore_errors=True)  # a run that did not finish
    (target / "ws").mkdir(parents=True)
    with Engine.open(target / "ws", target / "store") as engine:
        info = seed_long(engine, target / "ws", turns, steps)
    (target / "seed.json").write_text(json.dumps(info), "utf-8")
    return target


def copy_to(source: Path, workspace: Path, store: Path) -> dict[str, Any]:
    """Copy a :func:`cached` workspace's files over ``workspace`` and its store to ``store``
    (replacing it; ``store.json`` is pointed at ``workspace``, as a store that moved with it);
    returns the seed info."""
    shutil.copytree(source / "ws", workspace, symlinks=True, dirs_exist_ok=True)
    shutil.rmtree(store, ignore_errors=True)
    shutil.copytree(source / "store", store, symlinks=True, ignore=shutil.ignore_patterns("lock", "lock.pid"))
    meta_path = store / "store.json"
    meta = json.loads(meta_path.read_text("utf-8"))
    meta_path.write_text(json.dumps({**meta, "workspace": str(workspace.resolve())}, indent=2), "utf-8")
    info: dict[str, Any] = json.loads((source / "seed.json").read_text("utf-8"))
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--store", type=Path, default=None)
    parser.add_argument(
        "--cached",
        action="store_true",
        help="install the machine's cached session (into --store, else the folder's own store)",
    )
    args = parser.parse_args(argv)
    if args.cached:
        store = args.store or default_store_dir(args.workspace)
        json.dump(copy_to(cached(args.turns, args.steps), args.workspace, store), sys.stdout)
        return 0
    engine = Engine.open(args.workspace, args.store)
    try:
        result = seed_long(engine, args.workspace, args.turns, args.steps)
    finally:
        engine.close()
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
