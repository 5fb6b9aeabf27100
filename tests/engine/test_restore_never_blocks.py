"""No open of a restore may block (safety round 3, item 7, the restore side): a path that turns
into a FIFO between the restore's compare-and-swap ``stat`` and its ``open`` would hang a
blocking open forever while the store lock is held. The fault is injected exactly in that window
(the disk transaction's own ``os.open``, through either file-system backend), under a time guard."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.engine.conftest import write

from retrace.engine import Engine
from retrace.engine.restore import disk

Open = Callable[..., Engine]


def _fifo_at_first_read(monkeypatch: pytest.MonkeyPatch, ws: Path, target: str) -> list[str]:
    """Make ``target`` a FIFO right before the disk transaction first opens it for reading."""
    real_open = os.open
    swapped: list[str] = []

    def open_with_swap(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        # A name relative to a directory descriptor (posix backend) or a whole path (portable).
        named = os.path.basename(str(path)) == os.path.basename(target)
        if not swapped and named and not flags & os.O_CREAT:
            os.unlink(ws / target)
            os.mkfifo(ws / target)
            swapped.append(target)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(disk.os, "open", open_with_swap)
    return swapped


@pytest.mark.parametrize("force", [False, True])
def test_a_path_that_becomes_a_fifo_during_a_restore_never_blocks(
    ws: Path, open_engine: Open, monkeypatch: pytest.MonkeyPatch, force: bool
) -> None:
    write(ws, "a.txt", "one\n")
    eng = open_engine()
    first = eng.checkpoint("one").id
    os.chmod(ws / "a.txt", 0o755)  # the restore back is a chmod: it opens the file to fchmod it
    eng.checkpoint("made executable")
    swapped = _fifo_at_first_read(monkeypatch, ws, "a.txt")
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(_restore(eng, first, force)), daemon=True)
    worker.start()
    worker.join(20)
    if worker.is_alive():  # unblock the hung open so the test process can end, then fail
        with open(ws / "a.txt", "wb"):
            pass
        worker.join(5)
        pytest.fail("the restore blocked on a FIFO")
    assert swapped == ["a.txt"], "the fault never fired: the test did not test anything"
    out = result[0]
    assert not isinstance(out, BaseException) or "a.txt" in str(out), out
    kind = getattr(out, "kind", None)
    assert kind in ("conflict", "failed", None), out  # refused, never applied over a FIFO
    assert (ws / "a.txt").is_fifo()  # nobody's FIFO was replaced or chmodded by the restore


def _restore(eng: Engine, target: str, force: bool) -> object:
    try:
        return eng.restore(target, force=force)
    except Exception as exc:  # a clear refusal is an acceptable outcome; a hang is not
        return exc
