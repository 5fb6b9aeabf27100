"""The automatic cleanup never runs between the steps of an editor restore (real server).

The store is exactly at its retention count when the server starts (nothing due at start-up);
the restore's safety checkpoint makes a collection due while the editor is still applying the
restore's edit (the test's editor answers ``workspace/applyEdit`` slowly, longer than several
idle stretches). While the edit is pending no cleanup may have run; once the restore has
finished, the held-off cleanup runs.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from tests.lsp import lsp_support
from tests.lsp.lsp_support import AUTO, start_editor, stop_editor, wait_until

from retrace.engine import Engine
from retrace.engine.config import EngineConfig

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

COUNT = 6


def totals(store: Path) -> Path:
    return store / "cache" / "auto-cleanup.json"


async def test_no_cleanup_between_the_steps_of_an_editor_restore(
    workspace: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Engine.open(workspace, store, config=EngineConfig(watcher=False)) as engine:
        for i in range(COUNT - 1):
            (workspace / "notes.txt").write_text(f"version {i}\n")
            engine.checkpoint(f"edit {i}", ["notes.txt"])
        first = engine.timeline()[2].id  # not the oldest: the held-off cleanup may drop that one
        count = len(engine.timeline())
    seen_during_edit: list[bool] = []
    real_apply = lsp_support._apply_workspace_edit

    def slow_apply(editor: Any, params: Any) -> Any:
        time.sleep(2.0)  # several idle stretches (idleMinutes 0.005 = 0.3 s) while the edit is pending
        seen_during_edit.append(totals(store).exists())
        return real_apply(editor, params)

    monkeypatch.setattr(lsp_support, "_apply_workspace_edit", slow_apply)
    settings = {
        **AUTO,
        "retention": {"maxCheckpoints": count, "maxAgeDays": 30, "maxBytes": 2**31, "idleMinutes": 0.005},
    }
    editor = await start_editor(workspace, store, settings=settings)
    try:
        await editor.request("retrace/timeline/get", {})  # start-up's cleanup: nothing due
        await asyncio.sleep(0.1)
        (workspace / "notes.txt").write_text("typed by hand\n")  # unrecorded: a safety checkpoint
        result = await editor.request(
            "retrace/checkpoint/restore", {"id": first, "mode": "code", "force": True}
        )
        assert result["outcome"]["kind"] == "applied", result
        assert seen_during_edit and not any(seen_during_edit), (
            "a cleanup ran while the restore's edit was pending"
        )
        # Held off, not lost: the store is over its count now, and the next idle stretch collects.
        await wait_until(lambda: totals(store).exists(), 30)
    finally:
        await stop_editor(editor)
