"""The store lock through ``portalocker``: exclusive, non-blocking, names its holder's pid.

Real processes: a holder in a subprocess, the contender here (and the other way round), so the
OS lock (``flock`` on POSIX, ``msvcrt.locking`` on Windows, both through portalocker) is what is
tested, not a Python-level flag.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from retrace.engine.errors import StoreLocked
from retrace.engine.store import lock as lock_module
from retrace.engine.store.lock import StoreLock

_HOLDER = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from retrace.engine.store.lock import StoreLock\n"
    "l = StoreLock(Path(sys.argv[1])); l.acquire(); print('locked', flush=True)\n"
    "sys.stdin.readline(); l.release(); print('released', flush=True); time.sleep(30)\n"
)


@contextmanager
def _held_elsewhere(path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the lock at `path` for the block; killed afterwards whatever happens."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_the_lock_is_portalocker_not_fcntl() -> None:
    source = Path(lock_module.__file__).read_text()
    assert "portalocker" in source
    assert "import fcntl" not in source


def test_second_process_is_refused_with_the_holders_pid_then_gets_it_after_release(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    with _held_elsewhere(path) as proc:
        with pytest.raises(StoreLocked, match=rf"in use by another Retrace process \(pid {proc.pid}\)"):
            StoreLock(path).acquire()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "released"
        mine = StoreLock(path)
        mine.acquire()  # released explicitly, the holder is still alive
        assert path.read_text().strip() == str(os.getpid())
        mine.release()


def test_a_holder_here_refuses_another_process(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    mine = StoreLock(path)
    mine.acquire()
    try:
        code = (
            "import sys\nfrom pathlib import Path\n"
            "from retrace.engine.store.lock import StoreLock\n"
            "from retrace.engine.errors import StoreLocked\n"
            "try:\n    StoreLock(Path(sys.argv[1])).acquire()\n"
            "except StoreLocked as e:\n    print(e)\n    raise SystemExit(3)\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=False
        )
        assert out.returncode == 3, out.stderr
        assert f"pid {os.getpid()}" in out.stdout
        assert len(out.stdout.strip().splitlines()) == 1
    finally:
        mine.release()


def test_holder_pid_is_found_when_the_lock_file_cannot_be_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On Windows the locked byte range cannot be read by anyone else: the pid comes from the
    side file the holder writes next to the lock."""
    path = tmp_path / "lock"
    real_read = Path.read_text

    def locked_read(self: Path, *args: object, **kwargs: object) -> str:
        if self == path:
            raise PermissionError(13, "locked region (simulated Windows)", str(self))
        return real_read(self, *args, **kwargs)  # type: ignore[arg-type]

    with _held_elsewhere(path) as proc:
        monkeypatch.setattr(Path, "read_text", locked_read)
        with pytest.raises(StoreLocked, match=f"pid {proc.pid}"):
            StoreLock(path).acquire()


def test_release_is_idempotent_and_reacquire_works(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    first = StoreLock(path)
    first.acquire()
    first.release()
    first.release()
    again = StoreLock(path)
    again.acquire()
    again.release()
