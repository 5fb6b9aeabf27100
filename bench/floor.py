"""The floor: the least work any correct, crash-safe checkpointer must do.

Edit calls: ``lstat`` + hash + store exactly the reported paths. Shell calls: one stat walk of the
workspace (same ignore rules, racily-clean entries re-hashed) + hash and store only what changed.
Every checkpoint ends with one ``fdatasync``ed journal append of its delta (without it a crash
could lose a completed checkpoint, so a "floor" without it would not be comparable). Blobs are
raw content-addressed files, deduplicated by existence, never compressed. Restore writes or
deletes only the paths that differ between the current and the target checkpoint, found from the
per-checkpoint deltas (no full-tree work), and journals what it wrote as one more checkpoint
(one ``fdatasync``ed append) so the work that follows a restore forks from it. It keeps no
timeline, takes no safety capture and verifies nothing: real systems do more, and that is the
point of a floor.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from bench.trace import Step
from bench.tree import IgnoreRules, walk

RACY_NS = 2 * 10**9


@dataclass(slots=True)
class _Entry:
    size: int
    mtime_ns: int
    ino: int
    mode: int
    sha: str
    racy: bool


State = tuple[str, int] | None
"""(blob sha, mode) of a path at a checkpoint; ``None``: absent."""


class Floor:
    name = "floor"

    def __init__(self, workspace: Path, store: Path) -> None:
        self.workspace = workspace
        self.store = store
        self.blobs = store / "objects"
        self.rules = IgnoreRules.for_workspace(workspace)
        self.cache: dict[str, _Entry] = {}
        # path -> [(checkpoint index, state)], ascending: the state of any path at any checkpoint.
        self.history: dict[str, list[tuple[int, State]]] = {}
        self.deltas: list[set[str]] = []
        self.at = 0
        self._journal: int | None = None

    # ------------------------------------------------------------------ storage primitives
    def _store_file(self, rel: str, st: os.stat_result) -> _Entry:
        path = self.workspace / rel
        data = os.readlink(path).encode() if stat.S_ISLNK(st.st_mode) else path.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        blob = self.blobs / sha
        if not blob.exists():
            tmp = blob.with_suffix(".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, blob)
        racy = time.time_ns() - st.st_mtime_ns < RACY_NS
        return _Entry(st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode, sha, racy)

    def _commit(self, delta: dict[str, State]) -> str:
        index = len(self.deltas)
        for rel, state in delta.items():
            self.history.setdefault(rel, []).append((index, state))
        self.deltas.append(set(delta))
        if self._journal is None:
            self._journal = os.open(
                self.store / "journal.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644
            )
        line = json.dumps({"cp": index, "delta": delta}, separators=(",", ":")) + "\n"
        os.write(self._journal, line.encode("utf-8", "surrogateescape"))
        os.fdatasync(self._journal)
        self.at = index
        return str(index)

    def _capture(self, rel: str, st: os.stat_result | None, delta: dict[str, State]) -> None:
        old = self.cache.get(rel)
        if st is None:
            if old is not None:
                del self.cache[rel]
                delta[rel] = None
            return
        if (
            old is not None
            and not old.racy
            and (old.size, old.mtime_ns, old.ino, old.mode)
            == (st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode)
        ):
            return
        entry = self._store_file(rel, st)
        self.cache[rel] = entry
        if old is None or old.sha != entry.sha or old.mode != entry.mode:
            delta[rel] = (entry.sha, entry.mode)

    # ------------------------------------------------------------------ strategy interface
    def open(self) -> str:
        """Cold: hash and store everything. Warm (cache present): exactly one stat walk."""
        self.blobs.mkdir(parents=True, exist_ok=True)
        return self._detect()

    def _detect(self) -> str:
        delta: dict[str, State] = {}
        seen: set[str] = set()
        for rel, st in walk(self.workspace, self.rules):
            seen.add(rel)
            self._capture(rel, st, delta)
        for rel in [r for r in self.cache if r not in seen]:
            self._capture(rel, None, delta)
        return self._commit(delta)

    def checkpoint(self, step: Step) -> str:
        if step.changed_paths is None:
            return self._detect()
        delta: dict[str, State] = {}
        for rel in step.changed_paths:
            try:
                st: os.stat_result | None = os.lstat(self.workspace / rel)
            except FileNotFoundError:
                st = None
            self._capture(rel, st, delta)
        return self._commit(delta)

    def state_at(self, rel: str, index: int) -> State:
        entries = self.history.get(rel, [])
        i = bisect.bisect_right(entries, index, key=lambda e: e[0])
        return entries[i - 1][1] if i else None

    def restore(self, cp_id: str) -> None:
        target = int(cp_id)
        lo, hi = sorted((target, self.at))
        scope: set[str] = set().union(*self.deltas[lo + 1 : hi + 1]) if hi > lo else set()
        applied: dict[str, State] = {}
        for rel in scope:
            want = self.state_at(rel, target)
            if want == self.state_at(rel, self.at):
                continue
            applied[rel] = want
            path = self.workspace / rel
            if want is None:
                path.unlink(missing_ok=True)
                self.cache.pop(rel, None)
                continue
            sha, mode = want
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.is_symlink() or stat.S_ISLNK(mode):
                path.unlink(missing_ok=True)
            if stat.S_ISLNK(mode):
                os.symlink((self.blobs / sha).read_bytes(), path)
            else:
                path.write_bytes((self.blobs / sha).read_bytes())
                os.chmod(path, stat.S_IMODE(mode))
            st = os.lstat(path)
            self.cache[rel] = _Entry(st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode, sha, True)
        # Journal the restore as a checkpoint of its own (state = the target's): the history
        # stays one line of deltas, so checkpoints taken after a restore (a fork) are correct.
        self._commit(applied)

    def close(self) -> None:
        if self._journal is not None:
            os.close(self._journal)
            self._journal = None

    def storage_path(self) -> Path:
        return self.store
