"""Retrace through its public engine API, exactly as the agent uses it.

Edit calls pass their ``changed_paths``; shell calls pass ``None`` (the engine detects: watcher
dirty set when healthy, stat walk otherwise). Restores are code restores of the engine's own
checkpoint ids; anything but ``applied``/``nothingToRestore`` is a failure. Default engine config
(watcher on, zstd blobs, size cap), store in a directory of its own next to the workspace.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from bench.strategy import RestoreError
from bench.trace import Step
from retrace.engine import Engine


class RetraceStrategy:
    name = "retrace"

    def __init__(self, workspace: Path, store: Path) -> None:
        self.workspace = workspace
        self.store = store
        self.engine: Engine | None = None
        self.detect_modes: Counter[str] = Counter()
        """How shell-call checkpoints found their changes: ``watcher`` or ``stat walk``."""

    def _engine(self) -> Engine:
        if self.engine is None:
            raise RuntimeError("the Retrace strategy is not open")
        return self.engine

    def open(self) -> str:
        self.engine = Engine.open(self.workspace, self.store)
        return self.engine.head.id

    def _walks(self) -> int | None:
        # The engine counts its full stat walks for exactly this purpose (capture.Capturer.walks);
        # read defensively: it is not part of the facade's contract.
        walks = getattr(getattr(self.engine, "_capture", None), "walks", None)
        return walks if isinstance(walks, int) else None

    def checkpoint(self, step: Step) -> str:
        walks_before = self._walks()
        cp = self._engine().checkpoint(
            label=step.label,
            changed_paths=list(step.changed_paths) if step.changed_paths is not None else None,
            kind="tool",
            tool=step.tool,
        )
        if step.changed_paths is None:
            walks_after = self._walks()
            if walks_before is None or walks_after is None:
                self.detect_modes["unreported"] += 1
            else:
                self.detect_modes["stat walk" if walks_after > walks_before else "watcher"] += 1
        return cp.id

    def restore(self, cp_id: str) -> None:
        outcome = self._engine().restore(cp_id, mode="code")
        if outcome.kind not in ("applied", "nothingToRestore"):
            detail = getattr(outcome, "error", "") or ", ".join(
                f"{f.path}: {f.status}" for f in outcome.files if f.status not in ("restored", "unchanged")
            )
            raise RestoreError(f"restore of {cp_id} ended {outcome.kind}: {detail}")

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None

    def storage_path(self) -> Path:
        return self.store
