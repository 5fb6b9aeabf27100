"""Remote sync: a local store mirrored to any S3-compatible bucket (push, open, pull, gc).

The engine knows nothing of S3: this package reads the store's files (immutable blobs and packs,
journals up to their last newline) and hands the engine a :class:`~retrace.engine.store.blobs.BlobSource`
for blobs that are only in the remote. Imports ``engine``, ``text`` and ``camel`` only; ``app``,
``lsp``, ``cli`` and ``bootstrap`` use it (``protocol`` only its models).

The names below are resolved on first use (PEP 562): importing ``retrace.sync.errors`` (what the
command line's error policy needs) must not import the S3 client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.lazy import lazy_attributes

if TYPE_CHECKING:
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

_HOME = {name: "retrace.sync.models" for name in __all__} | {
    "RemoteError": "retrace.sync.errors",
    "RemoteService": "retrace.sync.service",
}


__getattr__ = lazy_attributes(__name__, _HOME)
