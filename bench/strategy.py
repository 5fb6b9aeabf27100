"""The one interface the benchmark drives: a checkpointing strategy for one workspace.

Lifecycle: ``open()`` builds (first time: cold) or refreshes (later: warm) the baseline and returns
the id of the checkpoint the workspace matches; ``checkpoint(step)`` is called right after a
trace step was applied to disk and returns the new checkpoint id; ``restore(id)`` makes the
tracked files equal that checkpoint's (raising :class:`RestoreError` when it cannot); ``close()``
releases everything. ``storage_path()`` is the directory whose disk usage is the strategy's cost.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from bench.trace import Step


class RestoreError(Exception):
    """A strategy could not restore a checkpoint (the benchmark records it as a failure)."""


class Strategy(Protocol):
    name: str

    def open(self) -> str: ...

    def checkpoint(self, step: Step) -> str: ...

    def restore(self, cp_id: str) -> None: ...

    def close(self) -> None: ...

    def storage_path(self) -> Path: ...
