"""What belongs to the workspace, and what each path holds right now.

* :class:`Ignorer` — BUILTIN_EXCLUDES and ``config.excludes`` always win; then every
  ``.gitignore`` in the tree (nested ones relative to their directory, the deepest deciding),
  gitwildmatch semantics via ``pathspec``. ``.git`` is never entered, whatever the rules say.
  Simple name patterns (``node_modules/``, ``.DS_Store``) are matched by set lookup: the walk
  of a 50k-file tree must stay close to the cost of its ``lstat`` calls.
* :func:`walk` — a stat walk that never follows symlinks and yields files and symlinks.
* :class:`StatCache` — path → (size, mtime_ns, ctime_ns, ino, dev, mode, entry): a walk
  re-hashes only what changed. Entries whose mtime or ctime is within :data:`RACY_NS` of the
  moment they were cached are "racily clean" and always re-hashed. It is a cache: losing it
  only costs re-hashing.
* :func:`read_entry` — the :class:`FileEntry` of one path (and its bytes for storing).
"""

# String paths and os-level calls on purpose: hot paths, no Path object per file.
# ruff: noqa: PTH105, PTH118

from __future__ import annotations

import hashlib
import marshal
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeVar

import pathspec

from retrace.engine.config import BUILTIN_EXCLUDES, TOOL_FOLDERS, TOOL_MARKERS, EngineConfig
from retrace.engine.manifest import make_entry
from retrace.engine.models import FileEntry

RACY_NS = 2_000_000_000
_GLOB = set("*?[]\\!")
PATH_SAFE = 4000
"""Absolute paths this long (bytes) or longer are resolved relative to directory fds: the
kernel refuses paths longer than PATH_MAX (4096), and a deep tree is still the user's work."""
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
T = TypeVar("T")


def too_long(path: str) -> bool:
    return len(path) >= PATH_SAFE // 4 and len(os.fsencode(path)) >= PATH_SAFE


def open_dir(ws: str, rel: str) -> int:
    """An fd of directory ``ws/rel``, resolved one component at a time through directory fds
    (never following a symlink), so any depth can be opened."""
    fd = os.open(ws, _DIR_FLAGS)
    try:
        for part in rel.split("/"):
            if part:
                nfd = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def at(ws: str, rel: str, fn: Callable[[str, int | None], T]) -> T:
    """``fn(path, dir_fd)`` for ``ws/rel``: the absolute path when the kernel accepts it, else
    the leaf name relative to an fd of its parent directory."""
    full = os.path.join(ws, rel) if rel else ws
    if not too_long(full):
        return fn(full, None)
    cut = rel.rfind("/")
    fd = open_dir(ws, rel[:cut] if cut > 0 else "")
    try:
        return fn(rel[cut + 1 :], fd)
    finally:
        os.close(fd)


def lstat_at(ws: str, rel: str) -> os.stat_result:
    return at(ws, rel, lambda p, d: os.stat(p, dir_fd=d, follow_symlinks=False))


def is_real_dir(ws: str, rel: str) -> bool:
    """Whether ``ws/rel`` is a directory (not a symlink to one), at any depth."""
    try:
        return stat.S_ISDIR(lstat_at(ws, rel).st_mode)
    except OSError:
        return False


class _Rules:
    """One pattern list, split into set lookups for plain names and a pathspec for the rest."""

    def __init__(self, lines: list[str]) -> None:
        self.dir_names: set[str] = set()
        self.any_names: set[str] = set()
        dir_suffixes: list[str] = []
        any_suffixes: list[str] = []
        rest: list[str] = []
        cleaned = [ln.rstrip("\n\r") for ln in lines]
        cleaned = [ln for ln in cleaned if ln.strip() and not ln.startswith("#")]
        has_negation = any(ln.startswith("!") for ln in cleaned)
        for ln in cleaned:
            core = ln.rstrip()
            name = core[:-1] if core.endswith("/") else core
            plain = not has_negation and name and "/" not in name
            if plain and not (_GLOB & set(name)):
                (self.dir_names if core.endswith("/") else self.any_names).add(name)
            elif plain and name.startswith("*") and len(name) > 1 and not (_GLOB & set(name[1:])):
                # "*.log": a basename suffix at any depth.
                (dir_suffixes if core.endswith("/") else any_suffixes).append(name[1:])
            else:
                rest.append(ln)
        self.dir_suffixes = tuple(dir_suffixes)
        self.any_suffixes = tuple(any_suffixes)
        self.spec = pathspec.GitIgnoreSpec.from_lines(rest) if rest else None
        self.empty = not (self.dir_names or self.any_names or dir_suffixes or any_suffixes or rest)

    def check(self, rel: str, name: str, is_dir: bool) -> bool | None:
        """True: excluded; False: re-included by a negation; None: no rule matched."""
        if name in self.any_names or (is_dir and name in self.dir_names):
            return True
        if (self.any_suffixes and name.endswith(self.any_suffixes)) or (
            is_dir and self.dir_suffixes and name.endswith(self.dir_suffixes)
        ):
            return True
        if self.spec is None:
            return None
        return self.spec.check_file(rel + "/" if is_dir else rel).include


class NameFilter(NamedTuple):
    """Excluded names of one directory's entries: files by ``file_names``/``file_suffixes``,
    subdirectories by ``dir_names``/``dir_suffixes`` (file rules included)."""

    file_names: frozenset[str]
    file_suffixes: tuple[str, ...]
    dir_names: frozenset[str]
    dir_suffixes: tuple[str, ...]


GitignoreSource = Callable[[str], bytes | None]
"""Bytes of ``<dir_rel>/.gitignore`` (``None``: there is none), for rules not read from disk."""


class Ignorer:
    """The ignore rules of the workspace on disk or, with ``source``, of a recorded state (a
    checkpoint's own ``.gitignore`` files: what it considered ignored)."""

    def __init__(self, workspace: Path, config: EngineConfig, source: GitignoreSource | None = None) -> None:
        self.workspace = workspace
        self._ws = str(workspace)
        self.use_gitignore = config.use_gitignore
        self._source = source
        fixed = [_Rules(list(BUILTIN_EXCLUDES)), _Rules(list(config.excludes))]
        self._fixed = [r for r in fixed if not r.empty]
        self._git: dict[str, _Rules | None] = {}
        self._chains: dict[str, tuple[tuple[int, _Rules], ...]] = {}
        self._filters: dict[str, NameFilter | None] = {}
        self._tools: dict[str, bool] = {}

    def tool_folder(self, rel: str) -> bool:
        """Whether directory ``rel`` is a tool's folder (a venv, ``node_modules``, a build
        output), recognised by its markers: see :data:`TOOL_FOLDERS`. Cached per directory."""
        v = self._tools.get(rel)
        if v is None:
            v = self._tools[rel] = _has_tool_markers(self._ws, rel)
        return v

    def gitignore_rules(self, dir_rel: str) -> _Rules | None:
        if not self.use_gitignore:
            return None
        if dir_rel not in self._git and self._source is not None:
            data = self._source(dir_rel)
            lines = data.decode("utf-8", errors="replace").splitlines() if data else []
            self._git[dir_rel] = _Rules(lines) if lines else None
        if dir_rel not in self._git:
            p = os.path.join(self._ws, dir_rel, ".gitignore")  # dir_rel "" → the root's
            try:
                # O_NOFOLLOW: a symlinked .gitignore is never followed (one syscall when absent).
                fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                self._git[dir_rel] = None
            else:
                try:
                    lines = _read_fd(fd, 1 << 16, 1 << 22).decode("utf-8", errors="replace").splitlines()
                except OSError:
                    lines = []
                self._git[dir_rel] = _Rules(lines) if lines else None
        return self._git[dir_rel]

    def forget(self, dir_rel: str | None = None) -> None:
        """Drop cached .gitignore rules (all of them, or one directory's)."""
        if dir_rel is None:
            self._git.clear()
        else:
            self._git.pop(dir_rel, None)
        self._chains.clear()
        self._filters.clear()
        self._tools.clear()

    def _chain(self, dir_rel: str) -> tuple[tuple[int, _Rules], ...]:
        """(offset of the path part relative to it, rules) of every .gitignore from the root
        down to ``dir_rel``, deepest last. Computed once per directory."""
        chain = self._chains.get(dir_rel)
        if chain is None:
            if dir_rel:
                cut = dir_rel.rfind("/")
                chain = self._chain(dir_rel[:cut] if cut > 0 else "")
                rules = self.gitignore_rules(dir_rel)
                if rules is not None:
                    chain = (*chain, (len(dir_rel) + 1, rules))
            else:
                rules = self.gitignore_rules("")
                chain = ((0, rules),) if rules is not None else ()
            self._chains[dir_rel] = chain
        return chain

    def excluded(self, rel: str, is_dir: bool) -> bool:
        """Whether ``rel`` itself is excluded (its ancestors are assumed included)."""
        cut = rel.rfind("/")
        name = rel[cut + 1 :]
        if name == ".git" or (is_dir and name in TOOL_FOLDERS and self.tool_folder(rel)):
            return True
        for rules in self._fixed:
            if rules.check(rel, name, is_dir):
                return True
        if not self.use_gitignore:
            return False
        # The deepest .gitignore with a matching rule decides.
        for offset, grules in reversed(self._chain(rel[:cut] if cut > 0 else "")):
            verdict = grules.check(rel[offset:], name, is_dir)
            if verdict is not None:
                return verdict
        return False

    def name_filter(self, dir_rel: str) -> NameFilter | None:
        """The rules deciding for the entries of ``dir_rel`` as plain name tests, or ``None``
        when some rule needs a full path match (then :meth:`excluded` decides). Computed once
        per directory: a stat walk then costs one set lookup and one ``endswith`` per name."""
        if dir_rel in self._filters:
            return self._filters[dir_rel]
        f: NameFilter | None
        rules = list(self._fixed)
        if self.use_gitignore:
            rules += [r for _off, r in self._chain(dir_rel)]
        # Without path patterns there is no negation either (it sends every rule of its
        # file to pathspec), so a verdict is simply "any rule matches".
        if any(r.spec is not None for r in rules):
            f = None
        else:
            any_names = {".git"}.union(*(r.any_names for r in rules))
            dir_names = any_names.union(*(r.dir_names for r in rules))
            any_suf = tuple(s for r in rules for s in r.any_suffixes)
            dir_suf = any_suf + tuple(s for r in rules for s in r.dir_suffixes)
            f = NameFilter(frozenset(any_names), any_suf, frozenset(dir_names), dir_suf)
        self._filters[dir_rel] = f
        return f

    def excluded_path(self, rel: str, is_dir: bool) -> bool:
        """Whether ``rel`` or any of its ancestor directories is excluded (a tool folder
        included)."""
        parts = rel.split("/")
        for i in range(1, len(parts)):
            anc = "/".join(parts[:i])
            if self.excluded(anc, True) or self.tool_folder(anc):
                return True
        return self.excluded(rel, is_dir) or (is_dir and self.tool_folder(rel))


def _has_tool_markers(ws: str, rel: str) -> bool:
    if not rel:
        return False  # the workspace itself is never skipped
    cut = rel.rfind("/")
    name = rel[cut + 1 :]
    spec = TOOL_FOLDERS.get(name)
    d = os.path.join(ws, rel)
    inside = TOOL_MARKERS + spec.inside if spec is not None else TOOL_MARKERS
    if any(os.path.lexists(os.path.join(d, m)) for m in inside):
        return True
    if spec is not None and spec.beside:
        parent = os.path.join(ws, rel[:cut]) if cut > 0 else ws
        return any(os.path.lexists(os.path.join(parent, m)) for m in spec.beside)
    return False


def walk(
    root: Path,
    ignorer: Ignorer,
    start: str = "",
    on_dir: Callable[[str], object] | None = None,
    on_error: Callable[[str, str], object] | None = None,
) -> Iterator[tuple[str, os.stat_result]]:
    """(relpath, lstat) of every non-excluded regular file and symlink under ``start``.
    ``on_dir`` is called with each directory BEFORE it is listed (to watch it first);
    ``on_error(rel, reason)`` with each directory that could not be listed (its files are
    unknown, not absent). A directory holding a :data:`TOOL_MARKERS` file is skipped whole."""
    stack = [start]
    base = str(root)
    while stack:
        d = stack.pop()
        if on_dir is not None:
            on_dir(d)
        try:
            listed = _list_at(base, d, ignorer)
        except FileNotFoundError:
            continue
        except OSError as exc:
            if on_error is not None:
                on_error(d, exc.strerror or str(exc))
            continue
        if listed is None:
            continue
        files, subdirs = listed
        stack.extend(subdirs)
        yield from files


def _list_at(
    base: str, d: str, ignorer: Ignorer
) -> tuple[list[tuple[str, os.stat_result]], list[str]] | None:
    path = os.path.join(base, d) if d else base
    if not too_long(path):
        with os.scandir(path) as it:
            return _list_dir(it, d, ignorer)
    fd = open_dir(base, d)  # beyond PATH_MAX: list (and lstat) relative to a directory fd
    try:
        with os.scandir(fd) as it:
            return _list_dir(it, d, ignorer)
    finally:
        os.close(fd)


def _list_dir(
    it: Iterator[os.DirEntry[str]], d: str, ignorer: Ignorer
) -> tuple[list[tuple[str, os.stat_result]], list[str]] | None:
    """Non-excluded files and subdirectories of one directory; ``None`` for a tool folder."""
    excluded = ignorer.excluded
    S_ISREG, S_ISLNK = stat.S_ISREG, stat.S_ISLNK  # noqa: N806 - hot loop: locals
    # The ignore decision is the walk's main cost after lstat: name tests computed once
    # per directory replace a rule-chain evaluation per entry.
    f = ignorer.name_filter(d)
    prefix = d + "/" if d else ""
    files: list[tuple[str, os.stat_result]] = []
    subdirs: list[str] = []
    marked = False
    for entry in it:
        name = entry.name
        try:
            if entry.is_dir(follow_symlinks=False):
                rel = prefix + name
                if f is None:
                    if not excluded(rel, True):
                        subdirs.append(rel)
                elif not (
                    name in f.dir_names
                    or (f.dir_suffixes and name.endswith(f.dir_suffixes))
                    or (name in TOOL_FOLDERS and ignorer.tool_folder(rel))
                ):
                    subdirs.append(rel)
                continue
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        mode = st.st_mode
        if not (S_ISREG(mode) or S_ISLNK(mode)):
            continue
        if name in TOOL_MARKERS:
            marked = True
        if f is None:
            if excluded(prefix + name, False):
                continue
        elif name in f.file_names or (f.file_suffixes and name.endswith(f.file_suffixes)):
            continue
        files.append((prefix + name, st))
    if marked and d:
        return None
    return files, subdirs


def walk_dirs(root: Path, ignorer: Ignorer, start: str = "") -> Iterator[str]:
    """Every non-excluded directory under (and including) ``start``."""
    stack = [start]
    base = str(root)
    while stack:
        d = stack.pop()
        yield d
        try:
            it = os.scandir(os.path.join(base, d) if d else base)
        except OSError:
            continue
        with it:
            for entry in it:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                rel = f"{d}/{entry.name}" if d else entry.name
                if is_dir and not ignorer.excluded(rel, True):
                    stack.append(rel)


def human_size(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB"


def _read_fd(fd: int, first: int, limit: int) -> bytes:
    """Read to EOF (at most ``limit`` bytes) and close ``fd``; one syscall for most files."""
    try:
        data = os.read(fd, first)
        if len(data) < first:
            return data
        parts = [data]
        total = len(data)
        while total < limit:
            chunk = os.read(fd, min(1 << 20, limit - total))
            if not chunk:
                break
            parts.append(chunk)
            total += len(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


@dataclass
class ReadResult:
    entry: FileEntry
    data: bytes | None
    """Bytes to store (file content or link target); ``None`` when not stored."""


def read_entry(
    abs_path: str, st: os.stat_result, max_bytes: int, dir_fd: int | None = None
) -> ReadResult | None:
    """The entry of a file or symlink (``None`` if it vanished or is another file type).
    With ``dir_fd``, ``abs_path`` is a name relative to that directory (see :func:`at`)."""
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(abs_path, dir_fd=dir_fd)
        except OSError:
            return None
        data = os.fsencode(target)
        return ReadResult(
            make_entry("symlink", hashlib.sha256(data).hexdigest(), len(data), target=target), data
        )
    if not stat.S_ISREG(mode):
        return None
    executable = bool(mode & stat.S_IXUSR)
    if st.st_size > max_bytes:
        reason = f"over size cap ({human_size(st.st_size)} > {human_size(max_bytes)})"
        return ReadResult(make_entry("file", None, st.st_size, executable=executable, unstored=reason), None)
    try:
        fd = os.open(abs_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        reason = f"unreadable ({exc.strerror})"
        return ReadResult(make_entry("file", None, st.st_size, executable=executable, unstored=reason), None)
    try:
        data = _read_fd(fd, min(st.st_size, max_bytes) + 1, max_bytes + 1)
    except OSError as exc:
        reason = f"unreadable ({exc.strerror})"
        return ReadResult(make_entry("file", None, st.st_size, executable=executable, unstored=reason), None)
    if len(data) > max_bytes:
        reason = f"over size cap ({human_size(len(data))} > {human_size(max_bytes)})"
        return ReadResult(make_entry("file", None, len(data), executable=executable, unstored=reason), None)
    return ReadResult(
        make_entry("file", hashlib.sha256(data).hexdigest(), len(data), executable=executable), data
    )


CachedEntry = tuple[str, str | None, int, bool, str | None, str | None]
"""(kind, hash, size, executable, target, unstored): a FileEntry's fields, cheap to store."""


def entry_key(e: FileEntry) -> CachedEntry:
    return (e.kind, e.hash, e.size, e.executable, e.target, e.unstored)


def matches(e: FileEntry | None, key: CachedEntry) -> bool:
    return (
        e is not None
        and e.hash == key[1]
        and e.kind == key[0]
        and e.executable == key[3]
        and e.size == key[2]
        and e.target == key[4]
    )


def entry_of(key: CachedEntry) -> FileEntry:
    kind: Literal["file", "symlink"] = "symlink" if key[0] == "symlink" else "file"
    return make_entry(kind, key[1], key[2], executable=key[3], target=key[4], unstored=key[5])


def _same_stat(v: list[Any], st: os.stat_result) -> bool:
    """Whether a cached row still vouches for a file with lstat ``st``: the full stat identity
    is unchanged AND the row is not racily clean. The model is git's index: a writer can keep
    size and mtime (``touch -r``, ``cp -p``, ``rsync -a``, ``tar x``) but not the ctime the
    kernel sets on every content or metadata change; and a row recorded while the file's
    timestamps were still within :data:`RACY_NS` of "now" cannot tell a later write in the
    same timestamp granule from no write at all, so it never vouches."""
    try:
        return bool(
            v[0] == st.st_size
            and v[1] == st.st_mtime_ns
            and v[2] == st.st_ctime_ns
            and v[3] == st.st_ino
            and v[4] == st.st_dev
            and v[5] == st.st_mode
            and v[6] - v[1] >= RACY_NS
            and v[6] - v[2] >= RACY_NS
        )
    except (IndexError, TypeError):
        return False


class StatCache:
    """path → [size, mtime_ns, ctime_ns, ino, dev, mode, cached_at_ns, *entry fields]. Only a
    cache: any load problem just empties it (everything gets re-hashed once)."""

    VERSION = 4

    def __init__(self, path: Path) -> None:
        self.path = path
        self._d: dict[str, list[Any]] = {}
        self.dirty = False

    def load(self) -> None:
        try:
            # marshal: ten times faster than JSON for 50k rows; it is only a cache, so an
            # unreadable file (another Python version, corruption) just means re-hashing.
            raw = marshal.loads(self.path.read_bytes())
        except (OSError, ValueError, EOFError, TypeError):
            return
        if (
            isinstance(raw, dict)
            and raw.get("version") == self.VERSION
            and isinstance(raw.get("entries"), dict)
        ):
            self._d = raw["entries"]

    def save(self) -> None:
        if not self.dirty:
            return
        data = {"version": self.VERSION, "entries": self._d}
        tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(marshal.dumps(data))
        os.replace(tmp, self.path)
        self.dirty = False

    def lookup(self, rel: str, st: os.stat_result) -> CachedEntry | None:
        v = self._d.get(rel)
        if v is None or not _same_stat(v, st):
            return None
        try:
            return (v[7], v[8], v[9], v[10], v[11], v[12])
        except (IndexError, TypeError):
            return None

    def vouches(self, rel: str, st: os.stat_result, e: FileEntry | None) -> bool:
        """``lookup`` + ``matches`` in one call (the warm-open walk does this 50k times)."""
        v = self._d.get(rel)
        if v is None or e is None or not _same_stat(v, st):
            return False
        try:
            return bool(
                v[8] == e.hash
                and v[7] == e.kind
                and v[10] == e.executable
                and v[9] == e.size
                and v[11] == e.target
            )
        except (IndexError, TypeError):
            return False

    def put(self, rel: str, st: os.stat_result, e: FileEntry) -> None:
        self._d[rel] = [
            st.st_size,
            st.st_mtime_ns,
            st.st_ctime_ns,
            st.st_ino,
            st.st_dev,
            st.st_mode,
            time.time_ns(),
            e.kind,
            e.hash,
            e.size,
            e.executable,
            e.target,
            e.unstored,
        ]
        self.dirty = True

    def drop(self, rel: str) -> None:
        if self._d.pop(rel, None) is not None:
            self.dirty = True

    def drop_hashes(self, hashes: set[str]) -> None:
        for p in [p for p, v in self._d.items() if len(v) > 8 and v[8] in hashes]:
            del self._d[p]
        self.dirty = True
