"""The headless holder's rules both sides share (standard library only).

A **headless holder** is a background process (``python -m retrace.cli.holder``) that a cold
``retrace checkpoint`` (or hook call) starts after doing its own work, so the next calls are
forwarded over the relay instead of opening the store each time. It holds the store's writer lock
like the editor's server, so everything else that needs the lock must be able to take it back:

* **Who holds the lock?** A holder writes :func:`marker_path` (``<store>/runtime/holder-<pid>``)
  BEFORE it tries the lock and removes it when it exits. The lock names its holder's pid
  (``StoreLocked.pid``): a marker for that pid says "a headless holder, ask it to let go"; none
  says "an editor server or another command: report the lock as before". A marker left by a
  killed holder names a dead pid (or, after pid reuse, a process that refuses to release: the
  editor's server has no ``release`` method behind its relay, see ``lsp/services/relay.py``).
* **Letting go.** :func:`release` sends the relay method ``release``; the holder stops listening,
  closes the engine (the lock is free) and only then answers ``{"released": true}``.
  :func:`open_releasing` is the open every writer uses: on the lock of a headless holder it asks
  for the release and opens again.
* **Lifetime.** :data:`IDLE_S` without a call, a release, its workspace or store deleted or
  replaced, its lock file or socket gone: the holder exits and the lock is free.
* **Opt-out.** :data:`NO_HOLDER_ENV` set to anything but ``""``/``0``: no holder is started
  (every cold call stays cold; tests that need a fresh process each time set it).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from retrace.relay import wire
from retrace.relay.client import RelayRefusedError, forward

T = TypeVar("T")

IDLE_S = 120.0
"""A holder exits this many seconds after its last call (``RETRACE_HOLDER_IDLE_S`` overrides it:
tests)."""
IDLE_ENV = "RETRACE_HOLDER_IDLE_S"
NO_HOLDER_ENV = "RETRACE_NO_HOLDER"
RELEASE_METHOD = "release"
RELEASE_WAIT_S = 10.0
"""How long a writer waits for a holder that is still opening the store to answer its release."""
POLL_S = 0.02


def enabled() -> bool:
    """Whether a cold call may start a holder (:data:`NO_HOLDER_ENV` unset, empty or ``0``)."""
    return os.environ.get(NO_HOLDER_ENV, "") in ("", "0")


def idle_seconds() -> float:
    """:data:`IDLE_S`, or the positive number :data:`IDLE_ENV` holds."""
    try:
        value = float(os.environ.get(IDLE_ENV, ""))
    except ValueError:
        return IDLE_S
    return value if 0 < value < 1e6 else IDLE_S


def marker_path(store_dir: str | os.PathLike[str], pid: int) -> Path:
    """The file that says "process ``pid`` is (or is starting as) this store's headless holder"."""
    return Path(store_dir) / "runtime" / f"holder-{pid}"


def mark(store_dir: str | os.PathLike[str]) -> Path:
    """Write this process's marker (before it takes the lock); its path."""
    path = marker_path(store_dir, os.getpid())
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"")
    return path


def clear_stale(store_dir: str | os.PathLike[str]) -> None:
    """Remove the markers of processes that no longer exist (holders killed without a word)."""
    with contextlib.suppress(OSError):
        for entry in (Path(store_dir) / "runtime").glob("holder-*"):
            pid = entry.name.removeprefix("holder-")
            if pid.isdecimal() and not alive(int(pid)):
                with contextlib.suppress(OSError):
                    entry.unlink()


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not ended (a zombie nobody reaped has ended: its
    descriptors, the store's lock among them, are closed)."""
    if sys.platform == "win32":  # no holder there (no relay); and os.kill(pid, 0) would end it
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: someone else's process (so not ours to ask)
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:  # no /proc (macOS): kill's answer is all there is
        return True
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")


def is_holder(store_dir: str | os.PathLike[str], pid: int | None) -> bool:
    """Whether the lock holder ``pid`` is a headless holder (its marker exists)."""
    return pid is not None and pid > 0 and marker_path(store_dir, pid).exists()


def release(store_dir: str | os.PathLike[str], pid: int | None, timeout: float = RELEASE_WAIT_S) -> bool:
    """Ask the headless holder ``pid`` of ``store_dir`` to let go of the store. ``True`` once its
    lock is free (it answered released, or it is gone); ``False`` when ``pid`` is no headless
    holder, it refused (an editor server never releases), or did not answer within ``timeout``."""
    if not is_holder(store_dir, pid):
        return False
    assert pid is not None
    deadline = time.monotonic() + timeout
    while True:
        try:
            answer = forward(store_dir, RELEASE_METHOD, {}, timeout=timeout)
        except RelayRefusedError as exc:
            if exc.code != wire.INTERNAL:  # refused (the editor's server keeps the store)
                return False
            answer = None  # the answer was lost (the holder exited meanwhile): see below
        if answer is not None:
            return answer.get("released") is True
        # No socket yet (still opening the store) or already closing: wait for it, or its end.
        if not alive(pid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)


def open_releasing(
    open_store: Callable[[], T],
    store_dir: str | os.PathLike[str],
    locked: type[BaseException],
    timeout: float = RELEASE_WAIT_S,
) -> T:
    """``open_store()``; when it raises ``locked`` (the store's lock error, with the holder's
    ``pid``) and that holder is headless, ask it to release and open again. A lock held by
    anything else is raised at once, as before — except right after a release: then a cold
    command-line call may have taken the lock in between (it holds it for a moment, then starts
    a new holder, which is asked in turn), so the open is tried again for up to ``timeout``."""
    deadline = time.monotonic() + timeout
    released = False
    while True:
        try:
            return open_store()
        except locked as exc:
            pid = getattr(exc, "pid", None)
            if time.monotonic() >= deadline:
                raise
            if release(store_dir, pid, max(0.1, deadline - time.monotonic())):
                released = True
            elif released:
                time.sleep(POLL_S * 5)
            else:
                raise
