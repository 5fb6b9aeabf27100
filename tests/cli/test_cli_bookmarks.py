"""``retrace log --bookmarks`` through the real ``retrace`` console script: a mark made with
``retrace checkpoint --label`` and an older checkpoint named in the editor (a ``checkpointName``
journal event) are listed, with their names, and nothing else; a removed name and a forged name
line are not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.cli.cli_support import RETRACE, Cli

from retrace.engine import Engine
from retrace.engine.bookmarks import name_checkpoint
from retrace.engine.config import EngineConfig
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store.seal import seal_line


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    assert RETRACE.exists(), f"console script missing: {RETRACE} (run scripts/setup-python.sh)"
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    tool = Cli(ws, tmp_path / "store")
    tool("init")
    return tool


def _name(cli: Cli, checkpoint_id: str, name: str) -> None:
    with Engine.open(cli.workspace, cli.store, config=EngineConfig(watcher=False), create=False) as engine:
        name_checkpoint(engine, checkpoint_id, name)


def test_log_bookmarks_lists_the_named_checkpoints_only(cli: Cli) -> None:
    baseline = cli.json("log")[0]["id"]
    (cli.workspace / "a.txt").write_text("two\n")
    mark = cli.json("checkpoint", "--label", "release 1")["id"]
    (cli.workspace / "a.txt").write_text("three\n")
    other = cli.json("checkpoint", "--label", "")["id"]
    _name(cli, baseline, "clean start")

    listed = cli.json("log", "--bookmarks")
    assert [(c["id"], c["bookmark"]) for c in listed] == [(baseline, "clean start"), (mark, "release 1")]
    assert other not in {c["id"] for c in listed}
    text = cli("log", "--bookmarks").stdout
    assert "bookmark: clean start" in text and "bookmark: release 1" in text and other not in text
    everything = cli.json("log")
    assert {c["id"]: c.get("bookmark") for c in everything}[other] is None  # every row says, too

    _name(cli, mark, "")  # removed: not a bookmark, though it is a mark
    journal = StoreLayout(cli.store).journal(everything[0]["sessionId"])
    forged = {"type": "checkpointName", "v": 2, "ts": 9e9, "checkpointId": other, "name": "evil\u0007"}
    with journal.open("ab") as f:  # sealed but against the name rule: skipped on replay
        f.write(seal_line(json.dumps(forged, separators=(",", ":")).encode()) + b"\n")
    assert [c["id"] for c in cli.json("log", "--bookmarks")] == [baseline]
    assert cli("log", "--bookmarks", "--session", "nobody").stdout.strip() == "no bookmarks in session nobody"
