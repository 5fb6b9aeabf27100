"""Subprocess for test_crash: checkpoints deterministic workspace states until it is killed.

State of step n: files k in 0..5 exist iff (n + k) % 3 != 0, with content ``f"{n}:{k}\\n" * k``;
``run.sh`` is executable on even steps. Every 5th step restores step n - 3 instead.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from retrace.engine import Engine


def state_files(n: int) -> dict[str, bytes]:
    return {f"d{k % 2}/f{k}.txt": (f"{n}:{k}\n" * k).encode() for k in range(6) if (n + k) % 3 != 0}


def write_state(ws: Path, n: int) -> list[str]:
    want = state_files(n)
    changed = []
    for k in range(6):
        rel = f"d{k % 2}/f{k}.txt"
        p = ws / rel
        if rel in want:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(want[rel])
        elif p.exists():
            p.unlink()
        changed.append(rel)
    run = ws / "run.sh"
    run.write_text("#!/bin/sh\n")
    run.chmod(0o755 if n % 2 == 0 else 0o644)
    changed.append("run.sh")
    return changed


def main() -> None:
    ws, store = Path(sys.argv[1]), Path(sys.argv[2])
    eng = Engine.open(ws, store)
    steps = {int(c.label.split()[1]): c.id for c in eng.timeline() if c.label.startswith("step ")}
    n = max(steps, default=-1) + 1
    print("ready", flush=True)
    while True:
        if n % 5 == 4 and (n - 3) in steps:
            eng.restore(steps[n - 3], force=True)
        changed = write_state(ws, n)
        # Alternate edit-style and shell-style capture.
        cp = eng.checkpoint(f"step {n}", changed if n % 2 else None, kind="tool")
        steps[n] = cp.id
        n += 1
        if n > 10_000:
            os._exit(0)


if __name__ == "__main__":
    main()
