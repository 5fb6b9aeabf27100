"""Kill-point injector for the crash campaign (test-only; loaded through ``PYTHONPATH``).

``RETRACE_KILLPOINT=<point>:<n>`` makes the Retrace server SIGKILL itself at the n-th hit of
``point`` since it started, at an instant a random timer would almost never hit:

- ``journal``: half of the n-th journal line is written, then the process dies (torn append);
- ``commit``: right after the n-th journal append is durable (committed, nobody told yet);
- ``blob``: after the n-th blob is stored (mid-capture: contents stored, checkpoint not written);
- ``apply``: after the n-th file write/delete of a transactional disk restore (mid-restore),
  through the disk applier's fault seam.

The variable is removed from the environment at once, so processes the server starts (shell
commands) never inherit it. Without it this module does nothing.
"""

from __future__ import annotations

import os
import signal
from typing import Any

_SPEC = os.environ.pop("RETRACE_KILLPOINT", "")


_INSTALLED: list[Any] = []


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _install(point: str, limit: int) -> None:
    hits = 0

    def hit() -> bool:
        nonlocal hits
        hits += 1
        return hits >= limit

    if point in ("journal", "commit"):
        from retrace.engine.store import journal
        from retrace.engine.store.blobs import write_all

        original_append = journal.JournalWriter.append

        def append(self: Any, event: dict[str, Any], *args: Any, **kwargs: Any) -> None:
            if point == "journal" and hit():
                wire = journal.event_json(event)  # the typed event as it would be written
                line = journal.json.dumps(wire, ensure_ascii=True, separators=(",", ":")).encode()
                write_all(self._fd, line[: max(1, len(line) // 2)])
                os.fdatasync(self._fd)
                _die()
            original_append(self, event, *args, **kwargs)
            if point == "commit" and hit():
                _die()

        journal.JournalWriter.append = append  # type: ignore[method-assign]
    elif point == "blob":
        from retrace.engine.store.blobs import BlobStore

        original_put = BlobStore.put

        def put(self: Any, data: bytes, bid: str | None = None) -> str:
            out = original_put(self, data, bid)
            if hit():
                _die()
            return out

        BlobStore.put = put  # type: ignore[method-assign]
    elif point == "apply":
        from retrace.engine.restore import faults

        applied = {"steps": 0}

        def hook(step: str, rel: str) -> None:
            # The seam runs before each step: the (n+1)-th step means n writes/deletes are done.
            if step in ("replace", "create", "delete", "chmod"):
                applied["steps"] += 1
                if applied["steps"] > limit:
                    _die()

        _INSTALLED.append(faults.injected(hook))  # kept alive: its exit would remove the hook
        _INSTALLED[-1].__enter__()
    else:
        raise SystemExit(f"RETRACE_KILLPOINT: unknown kill point {point!r}")


if _SPEC:
    _point, _, _count = _SPEC.partition(":")
    _install(_point, int(_count or "1"))
