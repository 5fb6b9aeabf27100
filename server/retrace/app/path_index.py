"""Which checkpoints name a path in their delta: the index behind per-file history.

:class:`PathIndex` maps each path to the positions (in commit order) of the checkpoints whose own
delta names it, plus the positions of checkpoints that have no delta (a baseline, whose snapshot is
its whole manifest, or a checkpoint whose journal line was damaged): those may have changed any
path and are always candidates. A query then costs O(candidates), not O(checkpoints).

Contracts:

- The index follows the engine's history as it grows: :meth:`PathIndex.refresh` adds only the
  checkpoints committed since the last call (a checkpoint's delta never changes once committed).
  When the order it indexed changed otherwise (retention dropped checkpoints: :meth:`PathIndex.stale`),
  :func:`index_of` builds a new one.
- :func:`index_of` keeps one index per history object (weakly: a closed engine's index goes with
  it). Callers reach the engine through its gate, one call at a time, so no lock is needed.
"""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from weakref import WeakKeyDictionary

from retrace.engine.history.graph import History


class PathIndex:
    """Path → positions of the checkpoints that may have changed it (see the module's contracts)."""

    def __init__(self) -> None:
        self.count = 0
        """How many checkpoints of the order are indexed (a prefix)."""
        self.last: str | None = None
        """Id of the last indexed checkpoint: the prefix is still the same when it is still there."""
        self.by_path: dict[str, array[int]] = {}
        self.no_delta: array[int] = array("q")
        self.position: dict[str, int] = {}
        self.sessions: set[str] = set()

    def stale(self, history: History) -> bool:
        """The order this index covers changed otherwise than by growing (retention dropped some)."""
        order = history.order
        return self.count > 0 and (len(order) < self.count or order[self.count - 1] != self.last)

    def refresh(self, history: History) -> None:
        """Index the checkpoints committed since the last call (the index must not be stale)."""
        order = history.order
        deltas, cps = history.deltas, history.cps
        for i in range(self.count, len(order)):
            cid = order[i]
            self.position[cid] = i
            self.sessions.add(cps[cid].session_id)
            delta = deltas.get(cid)
            if delta is None:
                self.no_delta.append(i)
                continue
            for path in delta:
                positions = self.by_path.get(path)
                if positions is None:
                    positions = self.by_path[path] = array("q")
                positions.append(i)
        self.count = len(order)
        self.last = order[-1] if order else None

    def candidates(self, path: str, before: int) -> Iterator[int]:
        """Positions below ``before`` of the checkpoints that may have changed ``path``, newest first."""
        named = self.by_path.get(path, array("q"))
        return heapq.merge(_descending(named, before), _descending(self.no_delta, before), reverse=True)


def _descending(positions: array[int], before: int) -> Iterator[int]:
    for j in range(bisect_left(positions, before) - 1, -1, -1):
        yield positions[j]


_INDEXES: WeakKeyDictionary[History, PathIndex] = WeakKeyDictionary()


def index_of(history: History) -> PathIndex:
    """The (refreshed) index of ``history``."""
    index = _INDEXES.get(history)
    if index is None or index.stale(history):
        index = _INDEXES[history] = PathIndex()
    index.refresh(history)
    return index
