"""``RemoteService``: the one entry point of remote sync, used by the CLI and the server.

Every method reads and writes files of the store (never the engine lock) and the bucket; none
holds state between calls beyond what is on disk, so the CLI and a running server can share a
store. ``name=None`` means the only configured remote (a one-line error when there is none or
several). Errors are :class:`~retrace.sync.errors.RemoteError` (one line, no secrets); a push
error is also recorded as the remote's ``lastError`` (``status``).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from retrace.engine.errors import StoreLocked
from retrace.engine.store.blobs import BlobSource
from retrace.engine.store.layout import StoreLayout
from retrace.engine.store.lock import StoreLock
from retrace.sync.cache import local_gc
from retrace.sync.config import (
    check_endpoint,
    check_name,
    check_workspace_name,
    default_workspace_name,
    load_remotes,
    parse_url,
    pick,
    save_remotes,
)
from retrace.sync.crypto import Cipher, cipher_for, generate_key
from retrace.sync.errors import RemoteError
from retrace.sync.fetch import RemoteBlobs, count_checkpoints, list_sessions, open_session, pull
from retrace.sync.gc import remote_gc
from retrace.sync.models import (
    OpenReport,
    PullReport,
    PushReport,
    RemoteConfig,
    RemoteGcReport,
    RemoteSession,
    RemoteStatus,
    RemoteVerifyReport,
    SyncProgress,
)
from retrace.sync.objects import Bucket
from retrace.sync.push import Cancelled, Pusher, journal_cuts
from retrace.sync.remote_verify import verify_remote
from retrace.sync.state import SyncPaths, store_id

ProgressFn = Callable[[SyncProgress], None]


def _where(config: RemoteConfig) -> tuple[object, ...]:
    return (config.url.rstrip("/"), config.endpoint, config.workspace_name, config.encrypt, config.key_id)


class RemoteService:
    """Remote sync for the store at ``store_dir`` of the workspace ``workspace``. ``env``: where
    credentials and the encryption key are read (default ``os.environ``)."""

    def __init__(self, store_dir: Path, workspace: Path, *, env: Mapping[str, str] | None = None) -> None:
        self.store_dir = store_dir
        self.workspace = workspace
        self.env: Mapping[str, str] = os.environ if env is None else env
        self.layout = StoreLayout(store_dir)

    # ------------------------------------------------------------------ plumbing
    def _config(self, name: str | None) -> RemoteConfig:
        return pick(self.remotes(), name)

    def _bucket(self, config: RemoteConfig) -> Bucket:
        return Bucket(config, self.env)

    def _cipher(self, config: RemoteConfig) -> Cipher | None:
        return cipher_for(config, self.env)

    def _paths(self, config: RemoteConfig) -> SyncPaths:
        return SyncPaths(self.layout, config.name)

    def _card(self, config: RemoteConfig) -> bytes:
        card = {
            "storeId": store_id(self.layout),
            "machine": socket.gethostname(),
            "workspaceName": config.workspace_name,
            "workspacePath": str(self.workspace),
            **({"folder": config.folder} if config.folder else {}),
            "created": datetime.now(UTC).isoformat(),
        }
        return json.dumps(card).encode()

    def remotes(self) -> list[RemoteConfig]:
        """The configured remotes (``remote.json``; empty when none)."""
        return load_remotes(self.layout)

    def add(
        self,
        name: str,
        url: str,
        *,
        endpoint: str | None = None,
        region: str | None = None,
        workspace_name: str | None = None,
        encrypt: bool = False,
        folder: str | None = None,
    ) -> RemoteConfig:
        """Configure (or reconfigure) remote ``name`` at ``url`` (``s3://bucket[/prefix]``). No
        network. ``encrypt`` creates the key file when no key is in the environment. ``folder``:
        the multi-root folder this store records (kept from before when not given)."""
        check_name(name)
        parse_url(url)
        remotes = self.remotes()
        old = next((r for r in remotes if r.name == name), None)
        fallback = old.workspace_name if old is not None else default_workspace_name(self.workspace)
        ws_name = check_workspace_name(workspace_name or fallback)
        key_id = old.key_id if old is not None and old.encrypt else None
        if encrypt and key_id is None:
            key_id, _path = generate_key(self.env)
        base = old.model_dump() if old is not None else {}
        base.update(
            name=name, url=url, endpoint=check_endpoint(endpoint), region=region,
            workspace_name=ws_name, encrypt=encrypt, key_id=key_id if encrypt else None,
        )  # fmt: skip
        if folder is not None:
            base["folder"] = folder
        new = RemoteConfig.model_validate(base)
        if old is not None and _where(old) != _where(new):
            # Another bucket, prefix or key: what was pushed to the old place says nothing here.
            shutil.rmtree(self.layout.remote / name, ignore_errors=True)
        save_remotes(self.layout, [r for r in remotes if r.name != name] + [new])
        if old is not None and old.folder != new.folder and self._paths(new).state.exists():
            # The store card names the folder: pushed again with the next push.
            paths = self._paths(new)
            state = paths.load_state()
            state.store_card = False
            paths.save_state(state)
        return new

    def remove(self, name: str) -> None:
        """Forget remote ``name`` and its local state (the bucket is not touched)."""
        remotes = self.remotes()
        pick(remotes, name)
        save_remotes(self.layout, [r for r in remotes if r.name != name])
        shutil.rmtree(self.layout.remote / name, ignore_errors=True)

    def push(
        self,
        name: str | None = None,
        *,
        progress: ProgressFn | None = None,
        cancel: threading.Event | None = None,
    ) -> PushReport:
        """Upload what the remote lacks: outbox, blobs (sync packs), journal segments. Resumable;
        ``cancel`` stops between objects (state saved)."""
        config = self._config(name)
        paths = self._paths(config)
        paths.dir.mkdir(parents=True, exist_ok=True)
        lock = StoreLock(paths.dir / "push.lock")
        try:
            lock.acquire()
        except StoreLocked:
            raise RemoteError(f"a push to remote {config.name!r} is already running") from None
        try:
            return self._push(config, paths, progress, cancel)
        finally:
            lock.release()

    def _push(
        self,
        config: RemoteConfig,
        paths: SyncPaths,
        progress: ProgressFn | None,
        cancel: threading.Event | None,
    ) -> PushReport:
        state = paths.load_state()
        try:
            pusher = Pusher(
                self.layout, config, self._bucket(config), cipher=self._cipher(config),
                store_id=store_id(self.layout), card=self._card(config), progress=progress, cancel=cancel,
            )  # fmt: skip
            return pusher.run(state)
        except Cancelled:
            t = pusher.tally
            return PushReport(
                remote=config.name, packs=t.packs, blobs=t.blobs, segments=t.segments, bytes=t.bytes,
                seconds=0.0, up_to_date=False,
            )  # fmt: skip
        except RemoteError as exc:
            state = paths.load_state()
            state.last_error = str(exc)
            paths.save_state(state)
            raise

    def pull(self, name: str | None = None) -> PullReport:
        """For every session opened from the remote, append the segments pushed since."""
        config = self._config(name)
        return pull(self._bucket(config), self._paths(config), self._cipher(config), config)

    def status(self, name: str | None = None) -> RemoteStatus:
        """Local only (no network): last push, last error, what is pending."""
        config = self._config(name)
        paths = self._paths(config)
        state = paths.load_state()
        pending_cps = pending_bytes = 0
        for cut in journal_cuts(paths, state):
            pending_bytes += len(cut.new)
            pending_cps += count_checkpoints(cut.new)
        # A push beside us (the server's scheduler) may upload and remove an item between the
        # listing and its size: only what is still there counts.
        sizes = [size for p in paths.outbox_items() if (size := _size_if_present(p)) is not None]
        return RemoteStatus(
            remote=config.name, url=config.url, endpoint=config.endpoint, encrypt=config.encrypt,
            last_push=state.last_push, last_error=state.last_error, pending_checkpoints=pending_cps,
            pending_bytes=pending_bytes + sum(sizes), outbox=len(sizes),
        )  # fmt: skip

    def sessions(self, name: str | None = None) -> list[RemoteSession]:
        """Sessions in the bucket under this workspace's prefix (one LIST), newest first."""
        config = self._config(name)
        return list_sessions(self._bucket(config), self._paths(config), self._cipher(config))

    def open(self, session_id: str, *, name: str | None = None, store_id: str | None = None) -> OpenReport:
        """Import a remote session's journal into the local store (creating the store if
        missing) and cache the remote pack indexes; blobs are fetched lazily."""
        config = self._config(name)
        if not self.layout.meta.exists():
            self.workspace.mkdir(parents=True, exist_ok=True)
            self.layout.init(self.workspace)
        bucket, paths, cipher = self._bucket(config), self._paths(config), self._cipher(config)
        return open_session(bucket, paths, cipher, session_id, store_id, config=config)

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
        config = self._config(name)
        if local:
            return local_gc(
                self.layout,
                self.workspace,
                config,
                self._bucket(config),
                cipher=self._cipher(config),
                source=lambda: RemoteBlobs(
                    self._paths(config).index, lambda: self._bucket(config), self._cipher(config)
                ),
            )
        return remote_gc(
            self._bucket(config),
            self._cipher(config),
            config,
            self._paths(config),
            dry_run=dry_run,
            grace_hours=grace_hours,
            retention_days=retention_days,
        )

    def verify(self, name: str | None = None, *, packs: bool = False) -> RemoteVerifyReport:
        """Check every segment and pack index in the bucket (and with ``packs`` every pack's
        hash) as an open would; nothing changes anywhere."""
        config = self._config(name)
        return verify_remote(self._bucket(config), self._cipher(config), packs=packs)

    def blob_source(self, name: str | None = None) -> BlobSource | None:
        """Blobs only in the remote, from the cached pack indexes (``None``: no remote). No
        network until a blob is read; credentials are resolved then."""
        remotes = self.remotes()
        if not remotes:
            return None
        config = pick(remotes, name)
        paths = self._paths(config)
        return RemoteBlobs(paths.index, lambda: self._bucket(config), self._cipher(config))


def _size_if_present(path: Path) -> int | None:
    """The size of an outbox item, or ``None`` when it is gone (pushed and removed meanwhile)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None
