"""The disk applier's batched writes: the temporary files of many writes made by a few threads at
once (fetching the content and creating the files dominate a large restore). Each thread takes
the next item, fetches its content and writes it: at most one file's bytes per thread are in
memory. The first failure stops the batch; the caller removes what was made."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

PARALLEL_WRITES_FROM = 16
WRITER_THREADS = 3
"""Threads that fetch (read, decompress, verify) and write new content: zstd, sha256 and file
I/O release the GIL, so a few threads overlap them even on two cores."""

T = TypeVar("T")


def make_in_parallel(
    items: Sequence[T], make: Callable[[T], str], tick: Callable[[], None] | None, every_s: float
) -> tuple[dict[int, str], BaseException | None]:
    """``make(item)`` for every item on :data:`WRITER_THREADS` threads: (index → what it returned,
    the first error or ``None``). ``tick`` runs on the calling thread every ``every_s`` seconds
    while the threads work."""
    made: dict[int, str] = {}
    errors: list[BaseException] = []
    counter = itertools.count()

    def worker() -> None:
        while not errors:
            index = next(counter)
            if index >= len(items):
                return
            try:
                made[index] = make(items[index])
            except BaseException as exc:
                errors.append(exc)

    threads = [
        threading.Thread(target=worker, name=f"rt-restore-{n}", daemon=True) for n in range(WRITER_THREADS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(every_s if tick is not None else None)
            if tick is not None:
                tick()
    return made, errors[0] if errors else None
