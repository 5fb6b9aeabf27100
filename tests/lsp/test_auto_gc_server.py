"""Automatic cleanup over the real server: a store over its retention count is collected at
start-up, after the first answer, with no explicit request; the head stays. A store within its
quotas is left alone (nothing rewritten)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.lsp.lsp_support import AUTO, EditorClient, start_editor, stop_editor, wait_until

from retrace.engine import Engine
from retrace.engine.config import EngineConfig

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


async def wait_until_async(ask: Any, ok: Any, limit_s: float) -> None:
    import asyncio
    import time

    end = time.monotonic() + limit_s
    while not ok(await ask()):
        assert time.monotonic() < end, "timed out"
        await asyncio.sleep(0.2)


def make_history(workspace: Path, store: Path, count: int) -> list[str]:
    """``count`` checkpoints, each changing a file, made before the server starts."""
    ids: list[str] = []
    with Engine.open(workspace, store, config=EngineConfig(watcher=False)) as engine:
        for i in range(count):
            (workspace / "notes.txt").write_text(f"version {i}\n")
            ids.append(engine.checkpoint(f"edit {i}", ["notes.txt"], kind="tool", tool="edit_file").id)
    return ids


def checkpoint_lines(store: Path) -> int:
    return sum(
        line.count('"type":"checkpoint"') for j in journals(store) for line in j.open(encoding="utf-8")
    )


def journals(store: Path) -> list[Path]:
    return sorted(p for p in (store / "sessions").rglob("*") if p.is_file())


async def all_checkpoints(editor: EditorClient) -> list[dict[str, Any]]:
    return list((await editor.request("retrace/timeline/get", {}))["checkpoints"])


async def test_start_up_applies_retention_on_its_own(workspace: Path, store: Path) -> None:
    ids = make_history(workspace, store, 8)
    assert checkpoint_lines(store) >= 9
    settings = {**AUTO, "retention": {"maxCheckpoints": 3, "maxAgeDays": 30, "maxBytes": 2**31}}
    editor = await start_editor(workspace, store, settings=settings)
    try:
        await editor.request("retrace/timeline/get", {})  # the first answer: deferred work begins
        await wait_until(lambda: checkpoint_lines(store) <= 3, 60)
        cps = await all_checkpoints(editor)
        assert ids[-1] in {cp["id"] for cp in cps}, "the head is kept"
        assert ids[0] not in {cp["id"] for cp in cps}
        assert (workspace / "notes.txt").read_text() == "version 7\n"

        # Its work is in the metrics that back the health view (and survives in the store).
        async def counted() -> dict[str, Any]:
            return dict((await editor.request("retrace/metrics/get", {}))["autoCleanup"])

        await wait_until_async(counted, lambda m: m["runs"] >= 1, 30)
        metrics = await editor.request("retrace/metrics/get", {})
        auto = metrics["autoCleanup"]
        assert auto["runs"] == 1 and auto["checkpointsDropped"] >= 5 and auto["bytesFreed"] >= 0, auto
        assert "retrace_auto_cleanup_runs_total 1.0" in metrics["text"]
        assert "retrace_auto_cleanup_freed_bytes_total" in metrics["text"]
        health = await editor.request("retrace/health/get", {})
        facts = {f["label"]: f["value"] for f in health["facts"]}
        assert facts["Automatic cleanups"].startswith("1 run,"), facts
    finally:
        await stop_editor(editor)


async def test_a_store_within_its_quotas_is_left_alone(workspace: Path, store: Path) -> None:
    make_history(workspace, store, 4)
    before = {j: j.read_bytes() for j in journals(store)}
    editor = await start_editor(workspace, store, settings=AUTO)
    try:
        await editor.request("retrace/timeline/get", {})
        await editor.request("retrace/timeline/get", {})
        assert len(await all_checkpoints(editor)) >= 5
    finally:
        await stop_editor(editor)
    after = {j: j.read_bytes() for j in journals(store)}
    assert {k: v for k, v in after.items() if k in before} == before
