"""Errors the engine raises. Each message is one clear line that names what failed."""

from __future__ import annotations


class RetraceError(Exception):
    """Base of every error Retrace raises on purpose (the CLI prints it and exits non-zero)."""

    code = "retrace"


class UnknownCheckpoint(RetraceError):  # noqa: N818 (contract names)
    code = "unknownCheckpoint"

    def __init__(self, cp_id: str, detail: str = "") -> None:
        super().__init__(f"unknown checkpoint id {cp_id!r}{': ' + detail if detail else ''}")
        self.cp_id = cp_id


class StoreNotInitialised(RetraceError):  # noqa: N818 (contract names)
    code = "storeNotInitialised"


class StoreLocked(RetraceError):  # noqa: N818 (contract names)
    """Another process holds the store's writer lock; ``pid``: the holder's, when it could be read."""

    code = "storeLocked"

    def __init__(self, message: str, pid: int | None = None) -> None:
        super().__init__(message)
        self.pid = pid


class StoreCorrupt(RetraceError):  # noqa: N818 (contract names)
    code = "storeCorrupt"


class BlobCorrupt(StoreCorrupt):
    """A stored blob is missing, truncated, undecodable or does not hash to its id: its content
    must never be shown or written as if it were real."""

    code = "blobCorrupt"

    def __init__(self, blob_id: str, reason: str) -> None:
        super().__init__(f"blob {blob_id} is damaged: {reason}")
        self.blob_id = blob_id
        self.reason = reason


class StorageFull(RetraceError):  # noqa: N818 (contract names)
    code = "storageFull"


class PathOutsideWorkspace(RetraceError):  # noqa: N818 (contract names)
    code = "pathOutsideWorkspace"

    def __init__(self, path: str) -> None:
        super().__init__(f"path is outside the workspace: {path}")
        self.path = path
