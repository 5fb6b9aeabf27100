"""What ``retrace checkpoint`` does on top of the engine: nothing a one-shot process does not need.

Run in-process through the real entry point (``retrace.cli.main.main``) on a real workspace and
store, with the engine's watcher class replaced by one that records being built: a command that
captures once and exits must not set up a file-system watcher (a watch per directory, torn down
at exit). The checkpoint it records is the same: exactly the changed file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retrace.cli.main import main
from retrace.engine.capture import capturer


@pytest.fixture
def workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws, store = tmp_path / "ws", tmp_path / "store"
    for d in range(3):
        (ws / f"d{d}").mkdir(parents=True)
        for i in range(5):
            (ws / f"d{d}" / f"f{i}.txt").write_text(f"{d} {i}\n", "utf-8")
    assert main(["init", "--workspace", str(ws), "--store", str(store)]) == 0
    return ws, store


@pytest.mark.parametrize("announced", [False, True], ids=["detect every change", "--path"])
def test_checkpoint_builds_no_watcher_and_records_exactly_the_change(
    workspace: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    announced: bool,
) -> None:
    ws, store = workspace
    built: list[Any] = []
    real = capturer.Watcher

    def recording(*args: Any, **kwargs: Any) -> Any:
        built.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(capturer, "Watcher", recording)
    (ws / "d1" / "f3.txt").write_text("changed\n", "utf-8")
    where = ["--workspace", str(ws), "--store", str(store)]
    paths = ["--path", "d1/f3.txt"] if announced else []
    capsys.readouterr()
    assert main(["checkpoint", "--json", *paths, *where]) == 0
    cp = json.loads(capsys.readouterr().out)
    if not announced:  # (with --path, the open's catch-up records it first, as it always did)
        assert [f["path"] for f in cp["files"]] == ["d1/f3.txt"]
    assert built == []
    # A writer that keeps running (the server's engine) still watches: the switch is the CLI's.
    assert main(["gc", *where]) == 0
    assert len(built) == 1
