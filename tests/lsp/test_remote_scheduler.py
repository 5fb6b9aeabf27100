"""The sync scheduler's decisions (pure, table-tested) and its thread with a scripted push:
one push at a time, on-demand pushes answered by a push that began after the request, back-off
after a failure, and a bounded last push at stop."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest

from retrace.lsp.services.push_scheduler import Pending, PushScheduler, backoff, due, wait_for
from retrace.protocol.remote import RemoteSyncView
from retrace.sync.errors import RemoteError
from retrace.sync.models import PushReport, SyncProgress


@pytest.mark.parametrize(
    ("pending", "expected"),
    [
        (Pending(now=0), False),
        (Pending(now=0, requested=True), True),
        (Pending(now=0, waiters=1), True),
        (Pending(now=0, waiters=1, retry_at=50), True),  # on demand ignores the back-off
        (Pending(now=10, requested=True, retry_at=50), False),  # a turn end waits for it
        (Pending(now=50, retry_at=50), True),  # the retry is due
        (Pending(now=100, checkpoints=3, last_attempt=0, every_s=300), False),
        (Pending(now=300, checkpoints=3, last_attempt=0, every_s=300), True),  # periodic
        (Pending(now=900, checkpoints=0, last_attempt=0, every_s=300), False),  # nothing new
        (Pending(now=5, checkpoints=1), True),  # never pushed in this run
    ],
)
def test_when_a_push_is_due(pending: Pending, expected: bool) -> None:
    assert due(pending) is expected


@pytest.mark.parametrize(
    ("pending", "expected"),
    [
        (Pending(now=0), None),
        (Pending(now=10, retry_at=50), 40.0),
        (Pending(now=100, checkpoints=2, last_attempt=0, every_s=300), 200.0),
        (Pending(now=100, checkpoints=0, last_attempt=0, every_s=300), None),
    ],
)
def test_how_long_to_sleep(pending: Pending, expected: float | None) -> None:
    assert wait_for(pending) == expected


@pytest.mark.parametrize(("failures", "expected"), [(1, 5.0), (2, 10.0), (3, 20.0), (8, 600.0), (30, 600.0)])
def test_backoff_doubles_up_to_a_bound(failures: int, expected: float) -> None:
    assert backoff(failures, 5.0, 600.0) == expected


def report(n: int) -> PushReport:
    return PushReport(remote="origin", packs=n, blobs=n, segments=n, bytes=n, seconds=0.0, up_to_date=n == 0)


class ScriptedPush:
    """A push that blocks until released, then returns (or raises) the next scripted outcome."""

    def __init__(self, outcomes: list[PushReport | Exception]) -> None:
        self.outcomes = outcomes
        self.started = threading.Semaphore(0)
        self.release = threading.Semaphore(0)
        self.calls = 0
        self.running = 0
        self.most_running = 0

    def __call__(self, progress: object, cancel: threading.Event) -> PushReport:
        self.calls += 1
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        self.started.release()
        try:
            while not self.release.acquire(timeout=0.05):
                if cancel.is_set():
                    raise RemoteError("cancelled")
            assert callable(progress)
            progress(
                SyncProgress(remote="origin", phase="done", done=1, total=1, bytes_done=1, bytes_total=1)
            )
            outcome = self.outcomes.pop(0)
        finally:
            self.running -= 1
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def make(push: ScriptedPush, views: list[RemoteSyncView], **kw: float) -> PushScheduler:
    return PushScheduler(
        "origin", push, views.append, every_checkpoints=3, every_minutes=60, backoff_base=3600.0, **kw
    )


def test_start_pushes_once_and_on_demand_waits_for_a_push_begun_after_it() -> None:
    push = ScriptedPush([report(1), report(2)])
    views: list[RemoteSyncView] = []
    scheduler = make(push, views)
    scheduler.start()
    assert push.started.acquire(timeout=10)  # the start-up push runs
    waiter: Future[PushReport] = scheduler.push_now()  # asked while it runs: the NEXT push
    push.release.release()
    assert push.started.acquire(timeout=10)
    assert not waiter.done()
    push.release.release()
    assert waiter.result(timeout=10) == report(2)
    assert push.most_running == 1
    assert scheduler.stop(5)
    states = [v.state for v in views]
    assert states[0] == "pushing" and states[-1] == "synced"
    assert scheduler.view().last_report == report(2)


def test_every_n_checkpoints_triggers_a_push_and_errors_back_off() -> None:
    push = ScriptedPush([report(0), RemoteError("remote 'origin' is unreachable: connection refused")])
    views: list[RemoteSyncView] = []
    scheduler = make(push, views)
    scheduler.start()
    assert push.started.acquire(timeout=10)
    push.release.release()
    for _ in range(2):
        scheduler.checkpoint_created()
    assert not push.started.acquire(timeout=0.2)  # two of three: not due
    scheduler.checkpoint_created()
    assert push.started.acquire(timeout=10)
    push.release.release()
    for _ in range(20):  # the failure is reported
        if scheduler.view().state == "error":
            break
        push.started.acquire(timeout=0.1)
    view = scheduler.view()
    assert view.state == "error" and view.last_error is not None and "unreachable" in view.last_error
    assert view.retry_in_seconds == 600.0  # the bound
    scheduler.request()  # a turn end while backing off: no push
    assert not push.started.acquire(timeout=0.2)
    waiter = scheduler.push_now()  # on demand: tried at once, its error is the caller's
    assert push.started.acquire(timeout=10)
    push.outcomes.append(RemoteError("remote 'origin' is unreachable: still down"))
    push.release.release()
    with pytest.raises(RemoteError, match="still down"):
        waiter.result(timeout=10)
    assert scheduler.stop(5)


def test_stop_cancels_a_push_that_outlasts_the_wait() -> None:
    push = ScriptedPush([])
    scheduler = make(push, [])
    scheduler.start()
    assert push.started.acquire(timeout=10)
    assert scheduler.stop(0.1)  # never released: cancelled, the thread ends
    with pytest.raises(RemoteError):
        scheduler.push_now().result(timeout=1)
