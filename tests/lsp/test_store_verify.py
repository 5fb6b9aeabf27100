"""``retrace/store/verify`` and the start-up check, against a real server process: a damaged
blob is reported with the checkpoint it affects, and the user gets a warning at start."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.lsp.lsp_support import start_editor, stop_editor, validate
from tests.safety.store_damage import damage_blob, sha

from retrace.engine import Engine, EngineConfig

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

OLD = b"old text\n" * 10
MID = b"middle text\n" * 10


async def test_verify_method_and_startup_warning(workspace: Path, store: Path) -> None:
    (workspace / "data.txt").write_bytes(OLD)
    with Engine.open(workspace, store, config=EngineConfig(watcher=False)) as eng:
        (workspace / "data.txt").write_bytes(MID)
        damaged_cp = eng.checkpoint(label="mid").id
        (workspace / "data.txt").write_bytes(b"newest\n")
        eng.checkpoint(label="new")
    damage_blob(store, sha(MID), "flip")
    editor = await start_editor(workspace, store)
    try:
        result = await editor.request("retrace/store/verify", {"quick": False})
        validate("#/$defs/StoreVerifyResult", result)
        report = result["report"]
        assert not report["ok"] and report["damage"][0]["where"] == sha(MID)
        assert [a["id"] for a in report["affected"]] == [damaged_cp]
        quick = (await editor.request("retrace/store/verify", {"quick": True}))["report"]
        assert quick["quick"] and quick["ok"]  # a flipped byte needs the full check (reads blobs)
        for _ in range(100):
            if editor.client.messages:
                break
            await asyncio.sleep(0.05)
        # The start-up check is quick: it does not see a flipped byte, so no warning here…
        assert not editor.client.messages
    finally:
        await stop_editor(editor)
    # …but a missing blob is seen without reading anything: warned at start.

    (store / "blobs" / sha(MID)[:2] / sha(MID)).unlink()
    editor = await start_editor(workspace, store)
    try:
        for _ in range(200):
            if editor.client.messages:
                break
            await asyncio.sleep(0.05)
        [message] = editor.client.messages
        assert message.type.name == "Warning" and "damaged" in message.message
    finally:
        await stop_editor(editor)
