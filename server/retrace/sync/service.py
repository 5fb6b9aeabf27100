"""``RemoteService``: the one entry point of remote sync, used by the CLI and the server.

Every method reads and writes files of the store (never the engine lock) and the bucket; none
holds state between calls beyond what is on disk, so the CLI and a running server can share a
store. ``name=None`` means the only configured remote (a one-line error when there is none or
several). Errors are :class:`~retrace.sync.errors.RemoteError` (one line, no secrets).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from retrace.engine.store.blobs import BlobSource
from retrace.sync.errors import RemoteError
from retrace.sync.models import (
    OpenReport,
    PullReport,
    PushReport,
    RemoteConfig,
    RemoteGcReport,
    RemoteSession,
    RemoteStatus,
    SyncProgress,
)

ProgressFn = Callable[[SyncProgress], None]


class RemoteService:
    """Remote sync for the store at ``store_dir`` of the workspace ``workspace``. ``env``: where
    credentials and the encryption key are read (default ``os.environ``)."""

    def __init__(self, store_dir: Path, workspace: Path, *, env: Mapping[str, str] | None = None) -> None:
        self.store_dir = store_dir
        self.workspace = workspace
        self.env = env

    def remotes(self) -> list[RemoteConfig]:
        """The configured remotes (``remote.json``; empty when none)."""
        raise RemoteError("not built yet")

    def add(
        self,
        name: str,
        url: str,
        *,
        endpoint: str | None = None,
        region: str | None = None,
        workspace_name: str | None = None,
        encrypt: bool = False,
    ) -> RemoteConfig:
        """Configure (or reconfigure) remote ``name`` at ``url`` (``s3://bucket[/prefix]``). No
        network. ``encrypt`` creates the key file when no key is in the environment."""
        raise RemoteError("not built yet")

    def remove(self, name: str) -> None:
        """Forget remote ``name`` and its local state (the bucket is not touched)."""
        raise RemoteError("not built yet")

    def push(
        self,
        name: str | None = None,
        *,
        progress: ProgressFn | None = None,
        cancel: threading.Event | None = None,
    ) -> PushReport:
        """Upload what the remote lacks: outbox, blobs (sync packs), journal segments. Resumable;
        ``cancel`` stops between objects (state saved)."""
        raise RemoteError("not built yet")

    def pull(self, name: str | None = None, *, progress: ProgressFn | None = None) -> PullReport:
        """For every session opened from the remote, append the segments pushed since."""
        raise RemoteError("not built yet")

    def status(self, name: str | None = None) -> RemoteStatus:
        """Local only (no network): last push, last error, what is pending."""
        raise RemoteError("not built yet")

    def sessions(self, name: str | None = None) -> list[RemoteSession]:
        """Sessions in the bucket under this workspace's prefix (one LIST), newest first."""
        raise RemoteError("not built yet")

    def open(self, session_id: str, *, name: str | None = None, store_id: str | None = None) -> OpenReport:
        """Import a remote session's journal into the local store (creating the store if
        missing) and cache the remote pack indexes; blobs are fetched lazily."""
        raise RemoteError("not built yet")

    def gc(
        self,
        name: str | None = None,
        *,
        dry_run: bool = False,
        grace_hours: float | None = None,
        retention_days: float | None = None,
        local: bool = False,
    ) -> RemoteGcReport:
        """Remote mark-and-sweep with a grace period; ``local``: the local cache policy only."""
        raise RemoteError("not built yet")

    def blob_source(self, name: str | None = None) -> BlobSource | None:
        """Blobs only in the remote, from the cached pack indexes (``None``: no remote)."""
        raise RemoteError("not built yet")
