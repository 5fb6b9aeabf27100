"""A tool call's result and its checkpoint: one durable append, then the event.

The path from a tool's result to ``checkpointCreated`` journals the ``toolCallResult`` line and
the checkpoint line in one engine call, synced by the checkpoint's single ``fdatasync`` (the
result gets no sync of its own). These tests hold the contract that makes that safe: both lines
are on disk, in order, and synced before the client is told; and a crash right when the event
is sent loses nothing (a fresh engine and agent on the store as it was at that instant find
the same checkpoint and a finished, not interrupted, call).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.agent.conftest import Harness, HarnessFactory, RecordingHost, settings_for

from retrace.agent.session import AgentService
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.engine.store.layout import StoreLayout

EDIT = {"path": "notes.txt", "old_string": "remember the milk", "new_string": "remember the bread"}
RESPONSES: list[dict[str, Any]] = [{"toolCalls": [{"name": "edit_file", "input": EDIT}]}, {"text": "done"}]


def line_ends(journal: Path) -> list[tuple[int, dict[str, Any]]]:
    """(end offset, event) of every line of a journal."""
    out, pos = [], 0
    for raw in journal.read_bytes().splitlines(keepends=True):
        pos += len(raw)
        out.append((pos, json.loads(raw)))
    return out


async def test_result_and_checkpoint_are_synced_once_before_the_event(
    make_harness: HarnessFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    h: Harness = await make_harness(RESPONSES)
    syncs: list[tuple[int, int]] = []  # (inode, size) at every fdatasync
    real_sync = os.fdatasync

    def recording_sync(fd: int) -> None:
        st = os.fstat(fd)
        syncs.append((st.st_ino, st.st_size))
        real_sync(fd)

    monkeypatch.setattr(os, "fdatasync", recording_sync)
    synced_at_event: list[int] = []
    real_emit = h.host.emit

    async def emit(event: Any) -> None:
        if event.kind == "checkpointCreated" and event.checkpoint.kind == "tool":
            synced_at_event.append(len(syncs))
        await real_emit(event)

    h.host.emit = emit  # type: ignore[method-assign]
    sid = await h.turn("edit the notes")
    assert h.stop_reasons() == ["end_turn"]

    journal = StoreLayout(h.store).journal(sid)
    ino = journal.stat().st_ino
    lines = line_ends(journal)
    kinds = [e["type"] for _, e in lines]
    r = kinds.index("toolCallResult")
    assert kinds[r + 1] == "checkpoint" and lines[r + 1][1]["checkpoint"]["kind"] == "tool"
    result_end, cp_end = lines[r][0], lines[r + 1][0]
    journal_syncs = [size for i, size in syncs if i == ino]
    # The result is never synced on its own: the next sync of the journal covers the checkpoint.
    assert not [s for s in journal_syncs if result_end <= s < cp_end]
    assert cp_end in journal_syncs
    # ... and that sync happened before the client was told.
    assert len(synced_at_event) == 1
    assert cp_end in [size for i, size in syncs[: synced_at_event[0]] if i == ino]


async def test_a_crash_when_the_event_is_sent_loses_nothing(
    make_harness: HarnessFactory, tmp_path: Path
) -> None:
    h: Harness = await make_harness(RESPONSES)
    crash = tmp_path / "crash"
    told: list[Any] = []
    real_emit = h.host.emit

    async def emit(event: Any) -> None:
        if event.kind == "checkpointCreated" and event.checkpoint.kind == "tool":
            # The process dies here: what it wrote is what the files hold (the page cache
            # survives a killed process), so a copy now is the store a restart would find.
            shutil.copytree(h.workspace, crash / "ws", symlinks=True)
            shutil.copytree(h.store, crash / "store", symlinks=True)
            told.append(event.checkpoint)
        await real_emit(event)

    h.host.emit = emit  # type: ignore[method-assign]
    await h.turn("edit the notes")
    assert len(told) == 1
    h.engine.close()
    # Restart on the crashed copy (put where the store's workspace is).
    shutil.rmtree(h.workspace)
    shutil.rmtree(h.store)
    (crash / "ws").rename(h.workspace)
    (crash / "store").rename(h.store)
    engine = Engine.open(h.workspace, h.store, config=EngineConfig(watcher=False))
    try:
        host = RecordingHost()
        service = AgentService(engine, host, settings_for(h.fake))
        interrupted = await service.load()
        assert interrupted == []  # the call had ended: nothing to re-capture
        assert host.of("checkpointCreated") == []
        cp = told[0]
        assert engine.get(cp.id) == cp  # the event carried exactly the recorded checkpoint
        assert engine.head.id == cp.id
        (call,) = service.search_tool_calls(session_id=cp.session_id)
        assert (call.status, call.checkpoint_id) == ("ok", cp.id)
        assert (h.workspace / "notes.txt").read_text() == "remember the bread\n"
    finally:
        engine.close()
