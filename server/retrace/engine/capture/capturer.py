"""Capture orchestration: turn "what may have changed" into a delta against the head manifest.

* :meth:`Capturer.capture_paths` — exactly the given paths (edit tools): lstat, hash, store.
* :meth:`Capturer.detect` — everything since the head: the watcher's dirty set when it is
  healthy (cost proportional to the change), otherwise one stat walk of the workspace with
  the stat cache (re-hashing only files whose stat changed). An unhealthy watcher is rebuilt
  BEFORE the walk, so nothing slips between the walk and the next drain.
* :meth:`Capturer.baseline` — the whole workspace (the watcher is started first).
* :meth:`Capturer.begin_own_renames` / :meth:`Capturer.settle_own_renames` — around a
  restore's apply: the watcher's events are logged per path in order; a path whose events are
  exactly the apply's own renames leaves the dirty set once the restore is committed (it holds
  what the head records), anything else stays dirty. :meth:`Capturer.unchanged_test` tells the
  restore planner which paths nothing touched since the head (no reading needed).

Blobs are stored before the delta is returned, so the journal line that commits it never
references a missing blob. With ``store=False`` nothing is written (plans, diffs).
"""

# String paths and os-level calls on purpose: hot paths, no Path object per file.

from __future__ import annotations

import logging
import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from retrace.engine.capture.fs import at, is_real_dir, lstat_at
from retrace.engine.capture.ignore import Ignorer
from retrace.engine.capture.scan import read_entry, walk, walk_lists
from retrace.engine.capture.statcache import StatCache, entry_of, matches
from retrace.engine.capture.watch import IN_MOVED_FROM, IN_MOVED_TO, RULE_MARKERS, DirtySet, Watcher
from retrace.engine.config import EngineConfig
from retrace.engine.manifest import Delta, DirIndex, Manifest, same
from retrace.engine.models import FileEntry
from retrace.engine.store.blobs import BlobStore
from retrace.engine.store.layout import StoreLayout

log = logging.getLogger(__name__)

_UNKNOWN = os.stat_result((0,) * 10)
"""Sentinel of :meth:`Capturer._file_stat`: the path exists or not, nobody can tell."""
STAT_CACHE_SAVE_EVERY_S = 120.0
GITIGNORE = ".gitignore"
BULK = 32
"""More cache misses than this in one capture: pack them (one file instead of one per blob)."""
THREADED = 1024
"""More than this: also read them from a thread pool (starting threads costs more than it
saves on a shell call's hundred files)."""


class Capturer:
    def __init__(
        self,
        workspace: Path,
        layout: StoreLayout,
        blobs: BlobStore,
        config: EngineConfig,
        *,
        readonly: bool = False,
    ) -> None:
        self.workspace = workspace
        self._ws = str(workspace)
        self.config = config
        self.blobs = blobs
        self.readonly = readonly
        self.ignorer = Ignorer(workspace, config)
        self.cache = StatCache(layout.stat_cache)
        self.cache.load()
        self.watcher: Watcher | None = None
        self._pending = DirtySet()
        """Drained but not yet committed (a plan or diff detects without committing)."""
        self.full_next = False
        """Set when changes may predate the watcher (an open without catch-up): the next
        detect walks the whole tree instead of trusting the dirty set."""
        self.dirs: DirIndex | None = None
        """Directory index of the head manifest, kept current by the engine (None: scan)."""
        self.walks = 0
        """Full stat walks done (tests and the benchmark check the watcher fast path)."""
        self._cache_saved_at = time.monotonic()
        self.not_captured: dict[str, str] = {}
        """Directories the captures since the last commit could not list, and files they could
        not read as one version, with the reason: they are unknown (kept as they were), and the
        checkpoint says so."""
        self._reread: set[str] = set()
        """Files found unsure by the current capture: pending again once it is done."""
        self._own_log: dict[str, list[int]] | None = None
        """While the engine renames entries into place: every watcher event, per path, in order."""
        self._own_before: set[str] = set()
        """Paths already pending when the engine started renaming (foreign changes)."""

    def set_rules(self, config: EngineConfig, head: Mapping[str, FileEntry]) -> None:
        """Capture under ``config``'s excludes and size cap from now on (a settings change). The
        next capture walks the whole tree under the new rules and re-watches every directory, so
        what the change alters belongs to that capture (as for a changed ``.gitignore``): a newly
        excluded file leaves the record, a newly included one enters it, a file left unstored by
        the old cap is read again. A lower cap applies to the versions read from now on."""
        raised = config.max_file_bytes > self.config.max_file_bytes
        self.config = config
        self.ignorer.set_excludes(list(config.excludes))
        if raised:
            for rel, entry in head.items():
                if entry.unstored is not None:
                    self.cache.drop(rel)  # not vouched for: read again under the new cap
        self.full_next = True
        if self.watcher is not None:
            self.watcher.invalidate("the capture rules changed")

    def take_not_captured(self) -> dict[str, str]:
        """What could not be captured since the last call (the commit reports it)."""
        out, self.not_captured = self.not_captured, {}
        return out

    def _unlisted(self, rel: str, reason: str) -> None:
        self.not_captured[rel or "."] = reason

    def _unsure(self, rel: str, reason: str) -> None:
        """``rel`` could not be read as one version: the checkpoint names it (not ``full``) and
        the next capture reads it again, whatever the watcher says."""
        self.not_captured[rel] = reason
        self._reread.add(rel)

    def _requeue(self) -> None:
        """Paths found unsure by this capture stay pending for the next one."""
        if self._reread:
            self._pending.files.update(self._reread)
            self._reread = set()

    def _unknown(self, path: str) -> bool:
        """Whether ``path`` is, or lies in a directory, this capture could not read."""
        return any(path == d or path.startswith(d + "/") or d == "." for d in self.not_captured)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if self.config.watcher and not self.readonly:
            # Directories get watched by the first walk (baseline or open detection), each
            # one before it is listed.
            self.watcher = Watcher(self.workspace, self.ignorer)
            self.watcher.invalidate("first walk pending")

    def stop(self) -> None:
        if self.watcher is not None:
            self.watcher.close()

    def save_cache(self) -> None:
        """Persist the stat cache. It is only a cache: failing to save it (a full disk) costs
        the next open some re-hashing, never data, so the failure is logged, not raised."""
        if self.readonly:
            return
        self._cache_saved_at = time.monotonic()
        try:
            self.cache.save()
        except OSError as exc:
            log.warning("could not save the stat cache (the next open re-hashes more): %s", exc)

    def status(self) -> dict[str, Any]:
        """How detection works right now (plain JSON): ``watcher`` healthy or not (and why),
        and the number of full stat walks so far."""
        w = self.watcher
        return {
            "watcher": bool(w is not None and w.healthy),
            "watcherReason": (w.reason if w is not None else "watcher disabled") or "",
            "walks": self.walks,
        }

    def capture(self, head: Mapping[str, FileEntry], rels: list[str] | None) -> Delta:
        """What changed against ``head``: exactly ``rels`` (announced paths) or, for ``None``,
        everything (:meth:`detect`). Saves the stat cache now and then, so a crash costs at
        most a couple of minutes of re-hashing."""
        delta = self.detect(head) if rels is None else self.capture_paths(rels, head)
        if time.monotonic() - self._cache_saved_at > STAT_CACHE_SAVE_EVERY_S:
            self.save_cache()
        return delta

    @property
    def watcher_healthy(self) -> bool:
        return self.watcher is not None and self.watcher.healthy

    # ------------------------------------------------------------------ one path
    def _entry(
        self,
        rel: str,
        st: os.stat_result,
        store: bool,
        head_e: FileEntry | None = None,
        put: Callable[[bytes, str], str] | None = None,
    ) -> FileEntry | None:
        key = self.cache.lookup(rel, st)
        if key is not None:
            if matches(head_e, key):
                return head_e  # unchanged since the head: its blob is stored already
            e = entry_of(key)
            if not store or e.hash is None or self.blobs.has_local(e.hash):
                return e
        r = at(self._ws, rel, lambda p, d: read_entry(p, st, self.config.max_file_bytes, d))
        if r is None:
            return None
        if r.unsure is not None:
            # No consistent version: reported, kept as recorded, read again by the next capture
            # (never cached). A plan or diff gets the unstored entry: "changed, content unknown".
            self._unsure(rel, r.unsure)
            return head_e if store else r.entry
        if store and r.data is not None and r.entry.hash is not None:
            (put or self.blobs.put)(r.data, r.entry.hash)
            if r.stat is not None:
                self.cache.put(rel, r.stat, r.entry)
        return r.entry

    def peek(self, rel: str, st: os.stat_result, head_e: FileEntry | None) -> FileEntry | None:
        """What ``rel`` (with lstat ``st``) holds, without storing anything."""
        return self._entry(rel, st, False, head_e)

    def _current(self, rel: str, store: bool, head_e: FileEntry | None = None) -> FileEntry | None:
        st = self._file_stat(rel)
        if st is _UNKNOWN:
            return head_e  # cannot be looked at: kept as recorded (and reported)
        if st is None:
            return None
        return self._entry(rel, st, store, head_e)

    def current_entries(self, rels: Iterable[str], *, store: bool = True) -> dict[str, FileEntry | None]:
        """What each path holds now (``None``: absent, a directory or excluded)."""
        out: dict[str, FileEntry | None] = {}
        for rel in rels:
            if self.ignorer.excluded_path(rel, False):
                out[rel] = None
                continue
            out[rel] = self._current(rel, store)
        return out

    def capture_paths(
        self, rels: Iterable[str], head: Mapping[str, FileEntry], *, store: bool = True
    ) -> Delta:
        """Delta of exactly ``rels`` (a directory is scanned as a whole). A changed
        ``.gitignore`` changes what is tracked under its directory: that directory is scanned
        with the new rules, so newly ignored and newly visible files belong to THIS change,
        not to a later "external" one."""
        delta: Delta = {}
        rule_dirs: list[str] = []
        self.not_captured = {}
        misses: list[tuple[str, os.stat_result, FileEntry | None]] = []
        listed: set[str] = set()
        for rel in rels:
            if rel in listed:
                continue
            listed.add(rel)
            if rel == GITIGNORE or rel.endswith("/" + GITIGNORE):
                rule_dirs.append(rel[: -len(GITIGNORE)].rstrip("/"))
            if is_real_dir(self._ws, rel):
                self._scan_dir(rel, head, delta, store)
                continue
            if self.ignorer.excluded_path(rel, False):
                if rel in head:
                    delta[rel] = None  # newly excluded: no longer tracked
                continue
            st = self._file_stat(rel)
            if st is _UNKNOWN:
                continue  # cannot be looked at: kept as recorded (and reported)
            if st is None:
                self._missing(rel, head, delta)
                continue
            misses.append((rel, st, head.get(rel)))
        # Read together: a call that reports many paths (a formatter, a checkout) stores them in
        # one pack (from a few threads when there are very many), not one blob file each.
        for (rel, _st, _he), e in zip(misses, self._resolve(misses, store, delta), strict=True):
            if e is None:
                self._missing(rel, head, delta)  # vanished (or another type) since its lstat
        if rule_dirs:
            delta.update(self.rules_changed(rule_dirs, head, store=store))
        self._requeue()
        return delta

    def rules_changed(
        self, dirs: Iterable[str], head: Mapping[str, FileEntry], *, store: bool = True
    ) -> Delta:
        """Delta of the directories whose ``.gitignore`` changed, under their new rules."""
        delta: Delta = {}
        self.ignorer.forget()
        for d in sorted(set(dirs)):
            if not d:
                return self._walk(head, store)  # the root's rules: everything may change
            if is_real_dir(self._ws, d):
                self._scan_dir(d, head, delta, store)
        return delta

    def after_restore(self, written: Iterable[str], head: Mapping[str, FileEntry]) -> Delta:
        """What a restore that wrote ``written`` (``head``: the manifest it produced) changed
        in what is TRACKED: when it rewrote ``.gitignore`` files, files become ignored or
        visible. That belongs to the restore's checkpoint, never to a phantom later change."""
        dirs = [
            p[: -len(GITIGNORE)].rstrip("/") for p in written if p == GITIGNORE or p.endswith("/" + GITIGNORE)
        ]
        return self.rules_changed(dirs, head) if dirs else {}

    # ------------------------------------------------------------------ the engine's own renames
    def begin_own_renames(self, replacing: Iterable[str] = ()) -> None:
        """The engine is about to rename entries into place (a restore's apply). What the
        watcher reported so far is foreign and stays pending; from now on its events are
        logged per path, in order, so :meth:`settle_own_renames` can tell the engine's renames
        from anyone else's change. Call :meth:`drain_own_renames` now and then meanwhile: a
        large restore would overflow the kernel's event queue (then the next capture walks).
        ``replacing``: paths the engine replaces (an entry there before and after): when one is
        a rule marker (``pyproject.toml`` beside a ``build`` folder), its renames alone change
        no folder's kind, so they do not cost a walk unless someone else touched it too."""
        self._own_log = None
        w = self.watcher
        if w is None or not self._vouches():
            return
        self._own_before = set(self._pending.files)
        self._own_log = {}
        w.quiet_markers = frozenset(p for p in replacing if p.rpartition("/")[2] in RULE_MARKERS)

    def drain_own_renames(self) -> None:
        """Move the queued events into the pending set (and the log)."""
        w = self.watcher
        if self._own_log is not None and w is not None and w.healthy:
            self._pending.update(w.drain(self._own_log))

    def settle_own_renames(self, renames: Mapping[str, int]) -> None:
        """The engine's renames are done and its delta describes their result. ``renames``:
        path → how many renames the engine made AT that name (each one an event: moved there,
        or moved away). A path whose events since :meth:`begin_own_renames` are exactly that
        many renames, and nothing else, holds what the engine left there (any other writer's
        change, chmod, move or delete is one more event), so it leaves the pending set: the
        next capture does not read it again. Without a healthy watcher nothing is settled."""
        log, self._own_log = self._own_log, None
        w = self.watcher
        if log is None or w is None:
            return
        if w.healthy:
            self._pending.update(w.drain(log))
        quiet, w.quiet_markers = w.quiet_markers, frozenset()
        if not w.healthy:
            return
        before, files = self._own_before, self._pending.files
        self._own_before = set()

        def own(rel: str) -> bool:
            masks = log.get(rel)
            return (
                masks is not None
                and len(masks) == renames.get(rel, -1)
                and rel not in before
                and all(m in (IN_MOVED_FROM, IN_MOVED_TO) for m in masks)
            )

        for rel in quiet:
            if rel in log and not own(rel):
                w.marker_changed(rel)  # someone else moved or removed it: as the drain would have
        if not w.healthy:
            return
        for rel in renames:
            if own(rel):
                files.discard(rel)

    def rules_current(self) -> bool:
        """Whether the ignore rules cached now are those on disk: a healthy watcher (drained
        now) has seen no ``.gitignore`` or rule marker change since they were read (any such
        change makes it forget them and go unhealthy until the next walk)."""
        return self._vouches()

    def _vouches(self) -> bool:
        """Drain a healthy watcher into the pending set; whether it still vouches for
        everything it did not report (healthy, and no full walk owed)."""
        w = self.watcher
        if w is None or not w.healthy or self.full_next:
            return False
        self._pending.update(w.drain())
        return w.healthy

    def unchanged_test(self) -> Callable[[str], bool] | None:
        """With a healthy watcher (drained now): a test of whether a path is certainly as the
        head records it (nothing touched it since the last commit: the premise of
        :meth:`detect`'s fast path). ``None`` when the watcher cannot tell."""
        if not self._vouches():
            return None
        files, dirs = self._pending.files, self._pending.dirs

        def unchanged(rel: str) -> bool:
            if rel in files:
                return False
            if dirs:
                head = rel
                while head:
                    if head in dirs:
                        return False
                    head = head.rpartition("/")[0]
            return True

        return unchanged

    def touched(self, rels: Iterable[str]) -> None:
        """Paths the engine itself rewrote: forget their cached stat (they get re-hashed)."""
        for rel in rels:
            self.cache.drop(rel)

    # ------------------------------------------------------------------ detection
    def _missing(self, rel: str, head: Mapping[str, FileEntry], delta: Delta) -> None:
        if rel in head:
            delta[rel] = None
        else:
            self._drop_under(rel, head, delta, set())

    def _drop_under(self, rel: str, head: Mapping[str, FileEntry], delta: Delta, seen: set[str]) -> None:
        """Delete from the head every path under ``rel`` not ``seen`` on disk (except in
        directories that could not be listed: unknown is not absent)."""
        unknown = self._unknown if self.not_captured else None
        if self.dirs is not None:
            for p in self.dirs.files_under(rel):
                if p not in seen and p in head and not (unknown and unknown(p)):
                    delta[p] = None
            return
        prefix = rel + "/"
        for p in head:
            if p.startswith(prefix) and p not in seen and not (unknown and unknown(p)):
                delta[p] = None

    def _scan_dir(self, rel: str, head: Mapping[str, FileEntry], delta: Delta, store: bool) -> None:
        if self.ignorer.excluded_path(rel, True):
            self._drop_under(rel, head, delta, set())
            return
        seen: set[str] = set()
        misses: list[tuple[str, os.stat_result, FileEntry | None]] = []
        for p, st in walk(self.workspace, self.ignorer, rel, on_error=self._unlisted):
            seen.add(p)
            misses.append((p, st, head.get(p)))
        self._resolve(misses, store, delta)
        self._drop_under(rel, head, delta, seen)

    def detect(self, head: Mapping[str, FileEntry], *, full: bool = False, store: bool = True) -> Delta:
        """Every change on disk relative to ``head``."""
        delta = self._detect(head, full, store)
        self._requeue()
        return delta

    def _detect(self, head: Mapping[str, FileEntry], full: bool, store: bool) -> Delta:
        w = self.watcher
        self.not_captured = {}
        if self.full_next and store:
            full, self.full_next = True, False
        if w is not None and w.healthy and not full:
            self._pending.update(w.drain())
            if w.healthy:
                delta = self._dirty_delta(self._pending, head, store)
                if store:
                    self._pending = DirtySet()
                return delta
        # Unhealthy or no watcher: re-watch each directory before listing it, so nothing slips
        # between this walk and the next drain.
        rewatch = w is not None and not w.healthy and not w.exhausted and store
        if rewatch and w is not None:
            w.start(watch_tree=False)
        self._pending = DirtySet()
        return self._walk(head, store, rewatch=rewatch)

    def _dirty_delta(self, dirty: DirtySet, head: Mapping[str, FileEntry], store: bool) -> Delta:
        """Delta of what a healthy watcher reported touched."""
        delta: Delta = {}
        for d in sorted(dirty.dirs):
            if is_real_dir(self._ws, d):
                self._scan_dir(d, head, delta, store)
            else:
                self._drop_under(d, head, delta, set())
                dirty.files.add(d)
        # A path in both sets (a file replaced by a directory or the reverse) is also
        # checked as a file: a tracked file that is now a directory is deleted.
        misses: list[tuple[str, os.stat_result, FileEntry | None]] = []
        for rel in sorted(dirty.files):
            if rel in delta:
                continue
            excluded = self.ignorer.excluded_path(rel, False)
            st = None if excluded else self._file_stat(rel)
            if st is _UNKNOWN:
                continue  # kept as recorded (and reported)
            if st is None:
                if rel in head and not (excluded and is_real_dir(self._ws, rel)):
                    delta[rel] = None
                continue
            misses.append((rel, st, head.get(rel)))
        # Resolved together: many files (a formatter run) go to one pack, not one blob file each.
        self._resolve(misses, store, delta, drop_vanished=True)
        return delta

    def _file_stat(self, rel: str) -> os.stat_result | None:
        """lstat of ``rel`` if it is a regular file or a symlink; ``None`` if it is absent or
        something else; :data:`_UNKNOWN` (recorded as not captured) if it cannot be looked at:
        a file behind a directory without search permission is not a deleted file."""
        try:
            st = lstat_at(self._ws, rel)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            self._unlisted(rel, exc.strerror or str(exc))
            return _UNKNOWN
        return st if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode) else None

    def _walk(self, head: Mapping[str, FileEntry], store: bool, *, rewatch: bool = False) -> Delta:
        self.walks += 1
        self.ignorer.forget()
        delta: Delta = {}
        seen: set[str] = set()
        on_dir = self.watcher.add_dir if rewatch and self.watcher is not None else None
        vouches, get = self.cache.vouches, head.get
        misses: list[tuple[str, os.stat_result, FileEntry | None]] = []
        known = 0
        """Walked paths that are in ``head``: all of them means nothing was deleted."""
        for files in walk_lists(self.workspace, self.ignorer, on_dir=on_dir, on_error=self._unlisted):
            seen.update([rel for rel, _ in files])
            for rel, st in files:
                he = get(rel)
                if he is not None:
                    known += 1
                if not vouches(rel, st, he):
                    misses.append((rel, st, he))
        self._resolve(misses, store, delta)
        if known == len(head):
            return delta  # every head path was walked (each path is walked once)
        unknown = self._unknown if self.not_captured else None
        for p in head:
            if p not in seen and not (unknown and unknown(p)):
                delta[p] = None
        return delta

    def _resolve(
        self,
        misses: list[tuple[str, os.stat_result, FileEntry | None]],
        store: bool,
        delta: Delta,
        *,
        drop_vanished: bool = False,
    ) -> list[FileEntry | None]:
        """Entries of paths the stat cache could not vouch for, into ``delta`` when changed;
        returns them (``None``: vanished or no longer a file or symlink), in ``misses`` order.
        Many at once (a baseline, a big command) go to one pack, read by a few threads: reading,
        hashing and compressing release the GIL. The pack is published before this returns."""
        if len(misses) <= BULK:
            entries = [self._entry(rel, st, store, he) for rel, st, he in misses]
        elif len(misses) <= THREADED:
            with self.blobs.batch() as batch:
                put = batch.put if store else None
                entries = [self._entry(rel, st, store, he, put=put) for rel, st, he in misses]
        else:
            with self.blobs.batch() as batch, ThreadPoolExecutor(max_workers=4) as pool:
                put = batch.put if store else None

                def run(chunk: list[tuple[str, os.stat_result, FileEntry | None]]) -> list[FileEntry | None]:
                    return [self._entry(rel, st, store, he, put=put) for rel, st, he in chunk]

                chunks = [misses[i : i + 512] for i in range(0, len(misses), 512)]
                entries = [e for part in pool.map(run, chunks) for e in part]
        for (rel, _st, he), e in zip(misses, entries, strict=True):
            if e is not None and not same(e, he):
                delta[rel] = e
            elif e is None and drop_vanished and he is not None:
                delta[rel] = None  # gone (or no longer a file) since it was listed
        return entries

    def baseline(self) -> Manifest:
        self.not_captured = {}
        if self.watcher is not None:
            self.watcher.start(watch_tree=False)
        delta = self._walk({}, store=True, rewatch=True)
        self._requeue()
        return {p: e for p, e in delta.items() if e is not None}
