"""The server's remote: settings mirrored into the store, the sync scheduler, and the
``retrace/remote/*`` work (status, push, pull, sessions, open).

Contracts:

* ``retrace.remote.*`` settings with a ``url`` configure that remote in ``<store>/remote.json``
  (``remote add`` semantics: no network); without a url, a remote added by the CLI is used when
  it is the only one. Credentials and the encryption key come only from the process
  environment and the extension's hand-off (:func:`retrace.credentials.remote_env`).
* The remote is prepared before the engine opens, so the engine reads remote-only blobs through
  its blob source (:meth:`ServerRemote.blob_source`); the scheduler starts once the engine is open.
* Pushes run on the scheduler's thread; pull and open run in a worker thread; the three share
  one lock with listing (one writer of the remote's local state at a time). None of them goes through
  the engine gate except the adoption of an opened session (``Engine.adopt_sessions``), after
  which the timeline cache re-reads the journals and clients are told (``timeline/didChange``).
* A remote that is misconfigured or down never fails start-up or a turn: it is logged and
  reported in ``retrace/remote/status`` and the progress notification.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from pathlib import Path

from retrace import credentials
from retrace.bootstrap import Services
from retrace.engine import Engine
from retrace.engine.store.blobs import BlobSource
from retrace.engine.store.layout import default_store_dir
from retrace.lsp.services import timeline
from retrace.lsp.services.push_scheduler import NotifyFn, PushScheduler
from retrace.protocol.models import TimelineDidChange
from retrace.protocol.remote import (
    RemoteOpenParams,
    RemoteOpenResult,
    RemotePullResult,
    RemotePushResult,
    RemoteSessionsResult,
    RemoteSettings,
    RemoteStatusResult,
    RemoteSyncView,
)
from retrace.sync.errors import RemoteError
from retrace.sync.identity import FolderName
from retrace.sync.models import PushReport, RemoteConfig, SyncProgress
from retrace.sync.service import RemoteService

log = logging.getLogger(__name__)

SHUTDOWN_WAIT_S = 10.0
"""At shutdown, how long the last push may run before it is left for the next start."""
TimelineFn = Callable[[TimelineDidChange], None]
NO_REMOTE = "no remote configured: set retrace.remote.url (or run `retrace remote add NAME URL`)"


def _same(config: RemoteConfig, settings: RemoteSettings, workspace_name: str, folder: str | None) -> bool:
    return (
        config.url == settings.url
        and config.endpoint == settings.endpoint
        and config.region == settings.region
        and config.workspace_name == workspace_name
        and config.encrypt == settings.encrypt
        and (folder is None or config.folder == folder)
    )


class ServerRemote:
    """One folder's remote inside the server (see the module's contracts): its settings, its push
    scheduler and the ``retrace/remote/*`` work; the bucket operations themselves are
    :class:`retrace.sync.service.RemoteService`'s."""

    def __init__(
        self,
        service: RemoteService,
        notify: NotifyFn,
        timeline_changed: TimelineFn,
        identity: FolderName | None = None,
    ) -> None:
        self.service = service
        self.identity = identity
        """This folder's remote name in a multi-root workspace (:mod:`retrace.sync.identity`);
        ``None``: a single-folder workspace's (``retrace.remote.workspaceName``, else the folder's)."""
        self._notify = notify
        self._timeline_changed = timeline_changed
        self._settings = RemoteSettings()
        self.scheduler: PushScheduler | None = None
        self.remote: str | None = None
        self._io = threading.Lock()
        self._started = False

    @classmethod
    def prepare(
        cls,
        store: Path | None,
        workspace: Path,
        settings: RemoteSettings,
        notify: NotifyFn,
        timeline_changed: TimelineFn,
        *,
        identity: FolderName | None = None,
    ) -> ServerRemote:
        """Mirror the settings into the store (before the engine opens); never raises.
        ``notify`` gets the scheduler's state (from any thread), ``timeline_changed`` the change
        after an opened or pulled session was adopted (from the event loop)."""
        store_dir = store.expanduser().absolute() if store is not None else default_store_dir(workspace)
        service = RemoteService(store_dir, workspace, env=credentials.remote_env())
        sync = cls(service, notify, timeline_changed, identity)
        sync.apply(settings)
        return sync

    # ------------------------------------------------------------------ configuration
    def apply(self, settings: RemoteSettings, identity: FolderName | None = None) -> None:
        """Configure from the settings (and this folder's ``identity``, when given: the folders
        changed); (re)start the scheduler when the engine is open."""
        self._settings = settings
        if identity is not None:
            self.identity = identity
        try:
            self.remote = self._configured(settings)
        except Exception as exc:  # a bad remote must never keep the workspace from opening
            log.error("remote sync is off: %s", (str(exc).splitlines() or [type(exc).__name__])[0])
            self.remote = None
        if self._started:
            self._schedule()

    def _configured(self, settings: RemoteSettings) -> str | None:
        remotes = {c.name: c for c in self._stamped()}
        if settings.url:
            ident = self.identity
            if ident is not None and ident.error is not None:
                raise RemoteError(ident.error)
            # No name of its own (a single folder, the first folder): the settings', as ever.
            name = ident.name if ident is not None and ident.name else settings.workspace_name
            folder = ident.folder if ident is not None else None
            current = remotes.get(settings.name)
            if current is None or not _same(current, settings, name or self.service.workspace.name, folder):
                self.service.add(
                    settings.name,
                    settings.url,
                    endpoint=settings.endpoint,
                    region=settings.region,
                    workspace_name=name,
                    encrypt=settings.encrypt,
                    folder=folder,
                )
                log.info("remote %s configured from the settings: %s", settings.name, settings.url)
            return settings.name
        if len(remotes) == 1:
            return next(iter(remotes))
        if remotes:
            log.info("several remotes and none in the settings: automatic sync is off (name one)")
        return None

    def _stamped(self) -> list[RemoteConfig]:
        """The store's remotes, each told this folder's name in a multi-root workspace (a remote
        the command line added too): their store card names it, so no other folder opens its
        sessions, and this folder opens no other's."""
        folder = self.identity.folder if self.identity is not None else None
        remotes = self.service.remotes()
        if folder is None or all(r.folder == folder for r in remotes):
            return remotes
        for r in remotes:
            if r.folder != folder:
                self.service.add(
                    r.name, r.url, endpoint=r.endpoint, region=r.region, workspace_name=r.workspace_name,
                    encrypt=r.encrypt, folder=folder,
                )  # fmt: skip
        return self.service.remotes()

    def _intervals(self) -> tuple[int, float]:
        if self._settings.url or self.remote is None:
            return self._settings.every_checkpoints, self._settings.every_minutes
        config = next((c for c in self.service.remotes() if c.name == self.remote), None)
        if config is None:
            return self._settings.every_checkpoints, self._settings.every_minutes
        return config.every_checkpoints, config.every_minutes

    def start(self) -> None:
        """The engine is open: start syncing (a push at once: what a previous run left)."""
        self._started = True
        self._schedule()

    def _schedule(self) -> None:
        every_checkpoints, every_minutes = self._intervals()
        current = self.scheduler
        if current is not None and current.remote == self.remote:
            current.configure(every_checkpoints=every_checkpoints, every_minutes=every_minutes)
            return
        if current is not None:
            current.stop(wait_s=0.0)
            self.scheduler = None
        if self.remote is None:
            self._notify(RemoteSyncView(state="off"))
            return
        self.scheduler = PushScheduler(
            self.remote,
            self._pusher(self.remote),
            self._notify,
            every_checkpoints=every_checkpoints,
            every_minutes=every_minutes,
        )
        self.scheduler.start()

    def _pusher(self, name: str) -> Callable[[Callable[[SyncProgress], None], threading.Event], PushReport]:
        def push(progress: Callable[[SyncProgress], None], cancel: threading.Event) -> PushReport:
            with self._io:
                return self.service.push(name, progress=progress, cancel=cancel)

        return push

    def blob_source(self) -> BlobSource | None:
        """Where the engine reads blobs that are only in the remote (``None``: no remote)."""
        if self.remote is None:
            return None
        try:
            return self.service.blob_source(self.remote)
        except RemoteError as exc:
            log.error("remote-only blobs cannot be read: %s", exc)
            return None

    # ------------------------------------------------------------------ triggers
    def checkpoint_created(self) -> None:
        if self.scheduler is not None:
            self.scheduler.checkpoint_created()

    def turn_ended(self) -> None:
        if self.scheduler is not None:
            self.scheduler.request()

    def stop(self, wait_s: float = SHUTDOWN_WAIT_S) -> None:
        """Push what is pending (at most ``wait_s`` seconds; the rest at the next start)."""
        scheduler, self.scheduler = self.scheduler, None
        if scheduler is not None:
            scheduler.stop(wait_s)

    # ------------------------------------------------------------------ requests
    def _name(self, name: str | None) -> str:
        chosen = name or self.remote
        if chosen is None:
            raise RemoteError(NO_REMOTE)
        return chosen

    async def status(self, name: str | None) -> RemoteStatusResult:
        scheduler = self.scheduler
        sync = scheduler.view() if scheduler is not None else RemoteSyncView(state="off")
        chosen = name or self.remote
        if chosen is None:
            return RemoteStatusResult(configured=False, status=None, sync=sync)
        status = await asyncio.to_thread(self.service.status, chosen)
        return RemoteStatusResult(configured=True, status=status, sync=sync)

    async def push(self, name: str | None) -> RemotePushResult:
        chosen = self._name(name)
        scheduler = self.scheduler
        if scheduler is not None and scheduler.remote == chosen:
            return RemotePushResult(report=await asyncio.wrap_future(scheduler.push_now()))
        push = self._pusher(chosen)
        return RemotePushResult(report=await asyncio.to_thread(push, lambda _p: None, threading.Event()))

    async def pull(self, services: Services, name: str | None) -> RemotePullResult:
        chosen = self._name(name)

        def pull() -> RemotePullResult:
            with self._io:
                self._stamped()  # a remote the command line added since: told its folder first
                return RemotePullResult(report=self.service.pull(chosen))

        result = await asyncio.to_thread(pull)
        if result.report.segments:
            await self._adopt(services)
        return result

    async def sessions(self, name: str | None) -> RemoteSessionsResult:
        chosen = self._name(name)

        def sessions() -> RemoteSessionsResult:
            with self._io:  # listing caches the stores' cards: one writer at a time
                return RemoteSessionsResult(sessions=self.service.sessions(chosen))

        return await asyncio.to_thread(sessions)

    async def open(self, services: Services, params: RemoteOpenParams) -> RemoteOpenResult:
        chosen = self._name(params.remote)

        def open_session() -> RemoteOpenResult:
            with self._io:
                self._stamped()
                report = self.service.open(params.session_id, name=chosen, store_id=params.store_id)
            return RemoteOpenResult(report=report, session_id=report.session_id)

        result = await asyncio.to_thread(open_session)
        await self._adopt(services)
        return result

    async def _adopt(self, services: Services) -> None:
        """The engine replays the journals it has not loaded; the timeline shows them."""

        source = self.blob_source()  # attached here too when the remote came after the engine

        def adopt(engine: Engine) -> str | None:
            engine.adopt_sessions(blob_source=source)
            timeline.cache_of(engine).invalidate()
            return engine.head.id

        head = await services.run(adopt)
        self._timeline_changed(TimelineDidChange(head=head))


def notifier(send: Callable[[RemoteSyncView], None], loop: asyncio.AbstractEventLoop) -> NotifyFn:
    """A thread-safe ``notify``: the view is sent from the server's event loop."""

    def notify(view: RemoteSyncView) -> None:
        if not loop.is_closed():
            loop.call_soon_threadsafe(send, view)

    return notify
