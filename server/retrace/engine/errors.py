"""Errors the engine raises. Each message is one clear line that names what failed."""

from __future__ import annotations


class RetraceError(Exception):
    """Base of every error Retrace raises on purpose (the CLI prints it and exits non-zero)."""

    code = "retrace"


class UnknownCheckpoint(RetraceError):
    code = "unknownCheckpoint"

    def __init__(self, cp_id: str, detail: str = "") -> None:
        super().__init__(f"unknown checkpoint id {cp_id!r}{': ' + detail if detail else ''}")
        self.cp_id = cp_id


class StoreNotInitialised(RetraceError):
    code = "storeNotInitialised"


class StoreLocked(RetraceError):
    code = "storeLocked"


class StoreCorrupt(RetraceError):
    code = "storeCorrupt"


class StorageFull(RetraceError):
    code = "storageFull"


class PathOutsideWorkspace(RetraceError):
    code = "pathOutsideWorkspace"

    def __init__(self, path: str) -> None:
        super().__init__(f"path is outside the workspace: {path}")
        self.path = path
