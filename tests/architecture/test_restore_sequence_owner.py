"""One restore sequence: the front ends go through it, never around it.

``app/restore_sequence.py`` is the one place that sequences a restore's steps after the code
half: the conversation move, the note to the model, the record for the undo, the reason. Every
module of the front ends (``cli/``, ``lsp/``, ``mcp_server/``) is parsed (``ast``: comments and
strings do not count) and any import or call of those steps is a finding — so a second sequence
cannot grow back in ``cli/commands.py`` or ``lsp/services/restore.py``. A reason given after the
restore goes through the sequence's own :func:`~retrace.app.restore_sequence.record_restore_reason`.
The check is shown catching a planted import and a planted call below.
"""

from __future__ import annotations

import ast
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "server" / "retrace"
FRONT_ENDS = ("cli", "lsp", "mcp_server")

STEPS: dict[str, frozenset[str]] = {
    "retrace.app.restore": frozenset({"record_reason", "reason_key", "moves_conversation"}),
    "retrace.app.restore_conversation": frozenset({"move_conversation"}),
    "retrace.app.restore_side": frozenset({"tell_code_restore", "with_stopped"}),
    "retrace.app.restore_undo": frozenset({"remember", "record_of"}),
}
"""The sequence's steps, by the module that defines them: never imported by a front end."""

STEP_CALLS = frozenset(
    {name for names in STEPS.values() for name in names}
    | {"restore_session", "restore_conversation", "move_head", "note_code_restore"}
)
"""Called by a front end under any receiver: the steps, and the agent service's conversation
moves (``AgentService.restore_session`` / ``move_head`` / ``note_code_restore``)."""


def findings(source: str, name: str = "<planted>") -> list[str]:
    """Every import or call of a sequence step in ``source``."""
    out: list[str] = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.ImportFrom) and node.module in STEPS:
            out += [
                f"{name}:{node.lineno}: imports {node.module}.{alias.name}"
                for alias in node.names
                if alias.name in STEPS[node.module]
            ]
        elif isinstance(node, ast.Call):
            func = node.func
            called = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else None
            )
            if called in STEP_CALLS:
                out.append(f"{name}:{node.lineno}: calls {called}")
    return out


def front_end_modules() -> list[Path]:
    return sorted(p for room in FRONT_ENDS for p in (SERVER / room).rglob("*.py"))


def test_front_ends_restore_only_through_the_sequence() -> None:
    modules = front_end_modules()
    assert len(modules) > 50 and SERVER / "cli" / "commands.py" in modules
    assert SERVER / "lsp" / "services" / "restore.py" in modules
    found = [f for path in modules for f in findings(path.read_text("utf-8"), str(path.relative_to(SERVER)))]
    assert found == [], "a front end sequences a restore itself; use app/restore_sequence.run_restore:\n" + (
        "\n".join(found)
    )


def test_the_rule_catches_a_planted_import_and_call() -> None:
    planted = (
        "from retrace.app.restore import record_reason, touches_code\n"
        "from retrace.app.restore_undo import remember as keep\n"
        "async def restore(self, target):\n"
        "    await self.services.agent.restore_session(target.session_id, target.id)\n"
        "    await services.run(lambda e: record_reason(e, target.id, 'other', 'code'))\n"
    )
    assert findings(planted) == [
        "<planted>:1: imports retrace.app.restore.record_reason",
        "<planted>:2: imports retrace.app.restore_undo.remember",
        "<planted>:4: calls restore_session",
        "<planted>:5: calls record_reason",
    ]
    # What a front end may use: the sequence, its appliers and strategies, the refusal rules.
    allowed = (
        "from retrace.app.restore_sequence import DiskApplier, run_restore, record_restore_reason\n"
        "from retrace.app.restore import touches_code, settle_agents\n"
        "async def f(agent, request):\n"
        "    return await run_restore(agent, DiskApplier(agent.gate), request)\n"
    )
    assert findings(allowed) == []
