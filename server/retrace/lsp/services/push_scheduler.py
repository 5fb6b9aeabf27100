"""``PushScheduler``: when the server pushes the store to its remote, on a thread of its own.

The push (:meth:`retrace.sync.service.RemoteService.push`) reads only the store's files, never
the engine: the scheduler never goes through the engine gate, so a slow or unreachable remote
cannot change how long a checkpoint takes. Contracts:

* one push at a time, on the scheduler's thread;
* a push is due after every ``every_checkpoints`` checkpoints (:meth:`checkpoint_created`), at
  the end of a turn (:meth:`request`), every ``every_minutes`` minutes when anything happened since
  the last push (or the last one failed), once at start-up (what a previous run left), and on
  demand (:meth:`push_now`, whose future completes with a push that *began* after the call);
* after a failure, automatic pushes back off exponentially (``backoff_base`` doubling up to
  ``backoff_max`` seconds); an on-demand push is tried at once;
* :meth:`stop` makes one last push when anything is pending, waits for it at most ``wait_s``
  seconds, then cancels it (the push is resumable: the next start goes on from its saved state);
* every change of state is reported to ``notify`` (from the scheduler's thread: the caller
  hands it to its own loop), progress at most every :data:`PROGRESS_EVERY_S` seconds per phase.

The decision of *when* is pure (:func:`due`, table-tested); the thread only waits and runs it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime

from retrace.protocol.remote import RemoteSyncView, SyncState
from retrace.sync.errors import RemoteError
from retrace.sync.models import PushReport, SyncProgress

log = logging.getLogger(__name__)

PushFn = Callable[[Callable[[SyncProgress], None], threading.Event], PushReport]
"""``push(progress, cancel)``: one push of the remote (blocking)."""
NotifyFn = Callable[[RemoteSyncView], None]

PROGRESS_EVERY_S = 0.25
"""Least seconds between two progress reports of one phase (a phase change is always reported)."""


@dataclass
class Pending:
    """What the scheduler knows when it decides (the input of :func:`due`)."""

    now: float
    waiters: int = 0
    """On-demand pushes waiting."""
    requested: bool = False
    """A turn ended, ``every_checkpoints`` were reached, or start-up."""
    checkpoints: int = 0
    """Checkpoints since the last push began."""
    last_attempt: float | None = None
    retry_at: float | None = None
    """After a failure: when the next automatic attempt may run."""
    every_s: float = 300.0


def due(p: Pending) -> bool:
    """Whether a push should start now."""
    if p.waiters:
        return True
    if p.retry_at is not None:
        return p.now >= p.retry_at
    if p.requested:
        return True
    periodic = p.last_attempt is None or p.now - p.last_attempt >= p.every_s
    return periodic and p.checkpoints > 0


def wait_for(p: Pending) -> float | None:
    """Seconds until :func:`due` may turn true on its own (``None``: only an event can)."""
    if p.retry_at is not None:
        return max(0.0, p.retry_at - p.now)
    if p.checkpoints > 0 and p.last_attempt is not None:
        return max(0.0, p.last_attempt + p.every_s - p.now)
    return None


def backoff(failures: int, base: float, most: float) -> float:
    """Seconds to wait after ``failures`` consecutive failed pushes (≥ 1)."""
    return float(min(most, base * 2 ** max(0, failures - 1)))


def _iso_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class _State:
    requested: bool = True
    checkpoints: int = 0
    waiters: list[Future[PushReport]] = field(default_factory=list)
    last_attempt: float | None = None
    retry_at: float | None = None
    failures: int = 0
    running: bool = False
    stopping: bool = False


class PushScheduler:
    """Pushes ``remote`` with ``push`` when due (see the module's contracts)."""

    def __init__(
        self,
        remote: str,
        push: PushFn,
        notify: NotifyFn,
        *,
        every_checkpoints: int = 10,
        every_minutes: float = 5.0,
        backoff_base: float = 5.0,
        backoff_max: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.remote = remote
        self._push = push
        self._notify = notify
        self.every_checkpoints = max(1, every_checkpoints)
        self.every_s = max(1.0, every_minutes * 60.0)
        self._backoff = (backoff_base, backoff_max)
        self._clock = clock
        self._cond = threading.Condition()
        self._s = _State()
        self._cancel = threading.Event()
        self._view = RemoteSyncView(state="idle", remote=remote, at=_iso_now())
        self._last_progress: tuple[str, float] = ("", 0.0)
        self._thread = threading.Thread(target=self._run, name=f"retrace-sync-{remote}", daemon=True)

    # ------------------------------------------------------------------ triggers
    def start(self) -> None:
        self._thread.start()

    def configure(self, *, every_checkpoints: int, every_minutes: float) -> None:
        with self._cond:
            self.every_checkpoints = max(1, every_checkpoints)
            self.every_s = max(1.0, every_minutes * 60.0)
            self._cond.notify_all()

    def checkpoint_created(self) -> None:
        with self._cond:
            self._s.checkpoints += 1
            if self._s.checkpoints >= self.every_checkpoints:
                self._s.requested = True
                self._cond.notify_all()

    def request(self) -> None:
        """A push is wanted soon (turn end); still subject to the back-off after a failure."""
        with self._cond:
            self._s.requested = True
            self._cond.notify_all()

    def push_now(self) -> Future[PushReport]:
        """An on-demand push: completes with the report (or the error) of a push that begins
        after this call."""
        waiter: Future[PushReport] = Future()
        with self._cond:
            if self._s.stopping:
                waiter.set_exception(RemoteError("the server is shutting down; push again after its restart"))
                return waiter
            self._s.waiters.append(waiter)
            self._cond.notify_all()
        return waiter

    def view(self) -> RemoteSyncView:
        with self._cond:
            return self._view.model_copy(update={"pending_checkpoints": self._s.checkpoints})

    def stop(self, wait_s: float = 10.0) -> bool:
        """Push what is pending, wait at most ``wait_s`` seconds, then cancel the push. ``True``
        when the scheduler ended within the wait."""
        with self._cond:
            s = self._s
            s.stopping = True
            s.requested = s.requested or s.checkpoints > 0 or s.running
            s.retry_at = None  # one last attempt, whatever the back-off
            self._cond.notify_all()
        if not self._thread.is_alive():
            return True
        self._thread.join(wait_s)
        if self._thread.is_alive():
            log.info("remote %s: the push goes on at the next start (cut after %.0f s)", self.remote, wait_s)
            self._cancel.set()
            self._thread.join(2.0)
        self._fail_waiters()
        return not self._thread.is_alive()

    # ------------------------------------------------------------------ the thread
    def _pending(self) -> Pending:
        s = self._s
        return Pending(
            now=self._clock(),
            waiters=len(s.waiters),
            requested=s.requested,
            checkpoints=s.checkpoints,
            last_attempt=s.last_attempt,
            retry_at=s.retry_at,
            every_s=self.every_s,
        )

    def _next(self) -> list[Future[PushReport]] | None:
        """Wait until a push is due; the waiters it answers, or ``None`` to end the thread."""
        with self._cond:
            while True:
                pending = self._pending()
                if self._s.stopping and not (self._s.requested or self._s.waiters):
                    return None
                if due(pending) or (self._s.stopping and self._s.requested):
                    s = self._s
                    waiters, s.waiters = s.waiters, []
                    s.requested, s.checkpoints = False, 0
                    s.last_attempt, s.running = pending.now, True
                    return waiters
                self._cond.wait(wait_for(pending))

    def _run(self) -> None:
        while (waiters := self._next()) is not None:
            self._set(state="pushing", progress=None)
            try:
                report = self._push(self._progress, self._cancel)
            except Exception as exc:  # reported, retried with back-off; the server goes on
                self._failed(exc, waiters)
            else:
                self._succeeded(report, waiters)

    def _succeeded(self, report: PushReport, waiters: list[Future[PushReport]]) -> None:
        with self._cond:
            s = self._s
            s.running, s.failures, s.retry_at = False, 0, None
        for waiter in waiters:
            waiter.set_result(report)
        self._set(state="synced", progress=None, last_report=report, last_error=None, retry_in_seconds=None)

    def _failed(self, exc: Exception, waiters: list[Future[PushReport]]) -> None:
        message = (str(exc).splitlines() or [type(exc).__name__])[0]
        with self._cond:
            s = self._s
            s.running = False
            s.failures += 1
            delay = backoff(s.failures, *self._backoff)
            s.retry_at = None if s.stopping else self._clock() + delay
        log.warning("remote %s: push failed (%s); next attempt in %.0f s", self.remote, message, delay)
        error = exc if isinstance(exc, RemoteError) else RemoteError(f"push to {self.remote}: {message}")
        for waiter in waiters:
            waiter.set_exception(error)
        self._set(state="error", progress=None, last_error=message, retry_in_seconds=delay)

    def _progress(self, progress: SyncProgress) -> None:
        now = self._clock()
        phase, when = self._last_progress
        if progress.phase == phase and now - when < PROGRESS_EVERY_S and progress.done < progress.total:
            return
        self._last_progress = (progress.phase, now)
        self._set(state="pushing", progress=progress)

    def _set(self, *, state: SyncState, **changes: object) -> None:
        with self._cond:
            update = {"state": state, "at": _iso_now(), **changes, "pending_checkpoints": self._s.checkpoints}
            self._view = self._view.model_copy(update=update)
            view = self._view
        try:
            self._notify(view)
        except Exception:  # a closed connection must not end the scheduler
            log.debug("remote sync notification failed", exc_info=True)

    def _fail_waiters(self) -> None:
        with self._cond:
            waiters, self._s.waiters = self._s.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_exception(RemoteError("the server stopped before the push ran"))
