"""kill -9 at random instants never corrupts a committed checkpoint."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.engine.crash_writer import state_files
from tests.oracles import entry_hashes

from retrace.engine import Engine

pytestmark = pytest.mark.slow


ROUNDS = 8


def expected_state(n: int) -> dict[str, tuple[str, str, bool]]:
    import hashlib

    out = {rel: ("file", hashlib.sha256(data).hexdigest(), False) for rel, data in state_files(n).items()}
    out["run.sh"] = ("file", hashlib.sha256(b"#!/bin/sh\n").hexdigest(), n % 2 == 0)
    return out


def test_sigkill_at_random_instants(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    store = tmp_path / "store"
    rng = random.Random(1234)
    writer = Path(__file__).with_name("crash_writer.py")
    root = Path(__file__).resolve().parents[2]
    for _ in range(ROUNDS):
        proc = subprocess.Popen(
            [sys.executable, str(writer), str(ws), str(store)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=root,
            env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.01, 0.3))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    eng = Engine.open(ws, store)
    try:
        assert eng.problems == []
        steps = {int(c.label.split()[1]): c for c in eng.timeline() if c.label.startswith("step ")}
        assert len(steps) >= ROUNDS, "the writer got to commit checkpoints"
        print(f"{len(steps)} steps, {len(eng.timeline())} checkpoints")
        ids = {c.id for c in eng.timeline()}
        restores = [c for c in eng.timeline() if c.kind == "restore"]
        for n, cp in sorted(steps.items()):
            out = eng.restore(cp.id, force=True)
            assert out.kind in ("applied", "nothingToRestore"), out
            assert entry_hashes(ws) == expected_state(n), f"step {n} ({cp.id})"
        by_id = {c.id: n for n, c in steps.items()}
        for r in restores:
            assert r.restored_from in ids
            out = eng.restore(r.id, force=True)
            assert out.kind in ("applied", "nothingToRestore"), out
            assert entry_hashes(ws) == expected_state(by_id[r.restored_from or ""])
    finally:
        eng.close()
