"""Remote sync: a local store mirrored to any S3-compatible bucket (push, open, pull, gc).

The engine knows nothing of S3: this package reads the store's files (immutable blobs and packs,
journals up to their last newline) and hands the engine a :class:`~retrace.engine.store.blobs.BlobSource`
for blobs that are only in the remote. Imports ``engine``, ``text`` and ``camel`` only; ``app``,
``lsp``, ``cli`` and ``bootstrap`` use it (``protocol`` only its models).
"""

from __future__ import annotations

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
from retrace.sync.service import RemoteService

__all__ = [
    "OpenReport",
    "PullReport",
    "PushReport",
    "RemoteConfig",
    "RemoteError",
    "RemoteGcReport",
    "RemoteService",
    "RemoteSession",
    "RemoteStatus",
    "SyncProgress",
]
