"""What bookmarks cost on a long history: which of 10,000 checkpoints are bookmarks (run on every
timeline page and ``retrace/timeline/get``) and the replay fold of 1,000 ``checkpointName`` events.

Usage: ``.venv/bin/python -m bench.bookmarks`` (figures in ``bench/RESULTS_bookmarks.md``).
"""

from __future__ import annotations

import os
import statistics
import time
from datetime import UTC, datetime

from retrace.engine.bookmark_name import bookmarks
from retrace.engine.bookmarks import bookmarks_first
from retrace.engine.history.replay import fold_names
from retrace.engine.models import Checkpoint
from retrace.engine.store.events import CheckpointNameEvent

CHECKPOINTS = 10_000


def _median_ms(run: object, repeat: int = 20) -> float:
    assert callable(run)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    cps = [
        Checkpoint(
            id=f"c{i:06d}",
            parent=None,
            session_id="s",
            kind="manual" if i % 100 == 0 else "tool",
            label=f"step {i}",
            created_at=moment,
        )
        for i in range(CHECKPOINTS)
    ]
    names = {f"c{i:06d}": "named" for i in range(0, CHECKPOINTS, 50)}
    named = bookmarks(cps, names)
    newest_first = [c.id for c in reversed(cps)]
    events = [CheckpointNameEvent(checkpoint_id=f"c{i:06d}", name="named") for i in range(1000)]
    print(f"load average {os.getloadavg()[0]:.1f}; {CHECKPOINTS} checkpoints, {len(named)} bookmarks")
    print(f"bookmarks():        {_median_ms(lambda: bookmarks(cps, names)):.2f} ms")
    print(f"bookmarks_first():  {_median_ms(lambda: bookmarks_first(newest_first, named)):.2f} ms")
    print(f"fold_names(1000):   {_median_ms(lambda: fold_names(events)):.2f} ms")


if __name__ == "__main__":
    main()
