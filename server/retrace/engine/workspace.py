"""What "inside the workspace" means, and file operations that cannot leave it.

:func:`normalize_rel` is the one definition of a workspace-relative path: ``/``-separated, no
empty, ``.`` or ``..`` component, not absolute, no NUL. Anything else is an escape and is refused.
:func:`stored_rel` is the same rule for a path read back from stored or received data (a
journal line, a manifest snapshot, a bucket object): it must already be in that normal form,
and may not name anything in ``.git`` (which capture never records).

:class:`DirTree` resolves a path's parent directories one component at a time through the
file-system backend (:mod:`retrace.engine.fsops`: ``openat(parent_fd, name, O_DIRECTORY |
O_NOFOLLOW)`` with ``posix``; an ``lstat`` refusing links and reparse points, re-checked around
every call, with ``portable``), starting from the workspace root, and performs every operation
(stat, mkdir, rename, unlink, symlink, open) relative to the final directory. A parent
component that is (or becomes) a symlink makes the resolution fail with ``ELOOP``/``ENOTDIR``:
nothing is ever written through a link, so nothing outside the workspace can be created,
replaced or removed (see :mod:`retrace.engine.fsops` for the one window the portable backend
narrows but cannot close, and what it does about it).
"""

from __future__ import annotations

import contextlib
import errno
import ntpath
import os
import posixpath
import random
import stat
import sys
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from retrace import oscompat
from retrace.engine.errors import PathOutsideWorkspace, RetraceError
from retrace.engine.fsops import Backend, Dir, backend
from retrace.oscompat import ignores_case, is_link_like

TEMP_PREFIX = ".rt-"
"""Temporary names are ``.rt-<8 random chars>.tmp``: never derived from the target name, so a
255-byte name gets a short temporary sibling (NAME_MAX cannot be exceeded)."""


class EscapeError(RetraceError):
    """A path that would leave the workspace (absolute, ``..``, or through a symlink)."""


_IGNORABLE = frozenset("\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\ufeff") | {
    chr(c) for c in range(0x206A, 0x2070)
}
"""Code points HFS+ leaves out of a name's identity (``.g\u200cit`` is ``.git`` there)."""


def is_git_name(name: str) -> bool:
    """Whether the directory entry ``name`` is (or, where the file system ignores letter case,
    names) a ``.git`` directory: ``.GIT``, ``.Git.`` (Windows drops the dot), the NTFS short name
    ``GIT~1``, ``.g\u200cit`` (HFS+ ignores the joiner). Nothing Retrace writes may be there."""
    if name == ".git":
        return True
    if not oscompat.ignores_case():
        return False
    folded = "".join(c for c in name if c not in _IGNORABLE).rstrip(". ").casefold()
    return folded in (".git", "git~1")


def check_component(name: str, rel: str) -> None:
    """The lowest-level rule of :class:`DirTree`: ``name`` is one plain entry name below a
    directory of the workspace, or :class:`EscapeError`. No ``..``/``.``/empty component, no
    ``/`` or NUL inside it, no ``.git``, on Windows no name Windows does not store as itself
    (:func:`windows_name_problem`: ``CON``, ``a:stream``, ``x.``): whatever built ``rel`` (a
    forged manifest, a damaged journal line, a plan that bypassed :func:`normalize_rel`), no
    call below can leave the workspace or reach into ``.git``."""
    if name in ("", ".", "..") or "/" in name or "\x00" in name:
        raise EscapeError(f"{rel!r} is not a path inside the workspace")
    if is_git_name(name):
        raise EscapeError(f"{rel} is inside a .git directory; Retrace never writes or reads there")
    if oscompat.is_windows() and (problem := windows_name_problem(name)) is not None:
        raise EscapeError(f"{rel}: {name!r} is {problem}")  # a device, a stream: not this file


def check_rel(rel: str) -> None:
    """Every component of ``rel`` passes :func:`check_component` (else :class:`EscapeError`)."""
    for part in rel.split("/"):
        check_component(part, rel)


_WINDOWS_DEVICES = frozenset(
    ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
    + [f"{dev}{n}" for dev in ("COM", "LPT") for n in [*"0123456789", "¹", "²", "³"]]
)
_WINDOWS_BAD_CHARS = frozenset('<>:"|?*\\/') | {chr(c) for c in range(32)}


def windows_name_problem(name: str) -> str | None:
    """Why Windows cannot hold ``name`` as the file it says (``None``: it can). Reserved device
    names (also with an extension: ``nul.txt`` is the NUL device) open a device instead of a
    file; a trailing dot or space is silently dropped (``x.`` would be ``x``); ``:`` selects an
    alternate data stream of another file; the other characters are refused by Windows."""
    if name.split(".", 1)[0].rstrip(" ").upper() in _WINDOWS_DEVICES:
        return "a reserved device name on Windows"
    if name.endswith((".", " ")) and name not in (".", ".."):
        return "a name ending in a dot or space, which Windows silently drops"
    bad = sorted(set(name) & _WINDOWS_BAD_CHARS)
    if bad:
        return f"a name with {bad[0]!r}, which Windows does not allow in file names"
    return None


def _windows_absolute(text: str) -> bool:
    """Rooted (``/x``), UNC (``//server/share``) or drive-qualified (``C:/x``, and the
    drive-relative ``C:x``, which is relative to that drive's current folder, not the workspace)."""
    return text.startswith("/") or (
        len(text) >= 2 and text[1] == ":" and text[0].isascii() and text[0].isalpha()
    )


def _under_root(text: str, root: str | Path, *, windows: bool) -> str:
    """The part of absolute ``text`` below ``root`` ("" for the root itself), or EscapeError.
    Compared lexically: symlinks are not resolved (a link inside the workspace is a workspace
    entry, not a way out); on Windows without regard to letter case, as the file system does."""
    base = ntpath.normpath(os.fspath(root)) if windows else posixpath.normpath(os.fspath(root))
    norm = ntpath.normpath(text) if windows else posixpath.normpath(text)
    if windows and not ntpath.isabs(norm):  # C:x: relative to drive C's current folder
        raise EscapeError(f"{text} is relative to a drive's current folder, not to the workspace")
    sep = "\\" if windows else "/"
    key_base, key = (ntpath.normcase(base), ntpath.normcase(norm)) if windows else (base, norm)
    if key != key_base and not key.startswith(key_base.rstrip(sep) + sep):
        raise EscapeError(f"{text} is outside the workspace {base}")
    return norm[len(base.rstrip(sep)) :].replace("\\", "/") if windows else norm[len(base) :]


def normalize_rel(path: str | Path, root: str | Path | None = None, *, windows: bool | None = None) -> str:
    """``path`` as a workspace-relative ``/``-separated path, or :class:`EscapeError`.

    An absolute ``path`` is accepted only under ``root`` (compared lexically, symlinks are not
    resolved: a link inside the workspace is a workspace entry, not a way out). ``windows``
    (default: this platform's rules) adds Windows's: ``\\`` separates, drive letters and UNC
    paths are absolute, case is ignored against ``root``, and every component must be a name
    Windows stores as itself (:func:`windows_name_problem`)."""
    windows = sys.platform == "win32" if windows is None else windows
    raw = os.fspath(path)
    text = raw.replace("\\", "/") if windows else raw.replace(os.sep, "/")
    if (windows and _windows_absolute(text)) or (not windows and text.startswith("/")):
        if root is None:
            raise EscapeError(f"{raw} is absolute")
        text = _under_root(raw if windows else text, root, windows=windows)
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts) or "\x00" in text:
        raise EscapeError(f"{raw!s} is not a path inside the workspace")
    if windows:
        for part in parts:
            if (problem := windows_name_problem(part)) is not None:
                raise EscapeError(f"{raw!s}: {part!r} is {problem}")
    return "/".join(parts)


def _git_component(part: str, *, fold: bool) -> bool:
    return part == ".git" or (fold and part.casefold() == ".git")


def stored_rel(path: object, *, windows: bool | None = None) -> str:
    """``path`` (from stored or received data) when it is a workspace-relative path in the
    normal form :func:`normalize_rel` gives — same string back —, with no ``.git`` component
    (any letter case where the file system ignores case); else :class:`EscapeError`. Such a
    path is damage, never an instruction: no plan is built from it."""
    if not isinstance(path, str):
        raise EscapeError(f"{path!r} is not a path")
    windows = sys.platform == "win32" if windows is None else windows
    fold = windows or ignores_case()
    if not windows and path and "\x00" not in path:
        # The same rule without normalize_rel's rebuilding, for the common case (POSIX): every
        # component a name — none empty (no leading, trailing or double slash), ".", ".." — and
        # none ".git". Read once per stored path on every open, so it must be cheap.
        parts = path.split("/")
        if "" not in parts and "." not in parts and ".." not in parts:
            if ".git" not in parts and not (fold and any(_git_component(p, fold=True) for p in parts)):
                return path
            raise EscapeError(f"{path!r} names a path inside .git")
    try:
        normal = normalize_rel(path, windows=windows)
    except EscapeError as exc:
        raise EscapeError(f"{path!r} is not a path inside the workspace") from exc
    if normal != path:
        raise EscapeError(f"{path!r} is not in normal form (an empty or '.' component)")
    if any(_git_component(part, fold=fold) for part in path.split("/")):
        raise EscapeError(f"{path!r} names a path inside .git")
    return path


def _caseless_key(name: str) -> str:
    """What a file system that ignores letter case compares when it looks ``name`` up: its
    caseless form; on macOS also without regard to Unicode normalization (the canonical caseless
    match: NFD, casefold, NFD), so ``Café.md`` from the model names the ``café.md`` a Mac app
    saved with a decomposed ``é``."""
    if oscompat.ignores_normalization():
        return unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).casefold())
    return name.casefold()


def disk_case(root: str | Path, rel: str) -> str:
    """``rel`` spelled the way the directory entries on disk spell it, for file systems that
    ignore letter case: ``readme.md`` names the existing ``README.md`` there, and must be recorded,
    compared (``.GIT`` is ``.git``) and reported under that one name (on macOS also a name in
    another Unicode normalization: :func:`_caseless_key`). Each component takes the entry that
    matches exactly, else the single entry the file system sees as the same name; from the
    first component that does not exist on, ``rel`` is kept as given."""
    parts = rel.split("/")
    current = os.fspath(root)
    for i, part in enumerate(parts):
        try:
            with os.scandir(current) as entries:
                names = [entry.name for entry in entries]
        except OSError:
            break
        if part not in names:
            key = _caseless_key(part)
            folded = [name for name in names if _caseless_key(name) == key]
            if len(folded) != 1:
                break
            parts[i] = folded[0]
        current = f"{current}{os.sep}{parts[i]}"
    return "/".join(parts)


_names = random.Random(os.urandom(16))
"""Source of temporary names: uniqueness, not secrecy (every temporary file is created with
``O_EXCL``, so a clash is an error, never an overwrite), and no system call per name — a large
restore makes thousands. Reseeded in a forked child so parent and child never share a sequence."""
_names_lock = threading.Lock()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: _names.seed(os.urandom(16)))


def temp_name(suffix: str = ".tmp") -> str:
    """A short temporary name ``.rt-<8 hex><suffix>``, never derived from a target's name."""
    with _names_lock:
        bits = _names.getrandbits(32)
    return f"{TEMP_PREFIX}{bits:08x}{suffix}"


def is_temp_name(name: str) -> bool:
    return name.startswith(TEMP_PREFIX) and len(name) >= len(TEMP_PREFIX) + 8


@dataclass(frozen=True)
class Identity:
    """Full stat identity of a directory entry: any write, chmod, rename-over or type change
    alters at least one field (ctime moves even when a tool restores mtime)."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    mode: int

    def moved(self, other: Identity | None) -> bool:
        """``other`` is this entry after a rename (which moves ctime, and nothing else)."""
        return other is not None and (self.dev, self.ino, self.size, self.mtime_ns, self.mode) == (
            other.dev,
            other.ino,
            other.size,
            other.mtime_ns,
            other.mode,
        )

    @classmethod
    def of(cls, st: os.stat_result) -> Identity:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


class DirTree:
    """Directory-relative access below one root directory through the file-system backend
    (:mod:`retrace.engine.fsops`: ``fs``, default the one chosen for this platform); never
    follows a symlink (or, on Windows, a junction) in a parent component. Directory handles are
    cached per relative path until :meth:`forget` (call it after removing or replacing a
    directory) or :meth:`close`."""

    def __init__(self, root: str | Path, fs: Backend | None = None) -> None:
        self.fs = fs if fs is not None else backend()
        self.root = os.path.realpath(root)
        self._dirs: dict[str, Dir] = {"": self.fs.open_root(self.root)}

    def close(self) -> None:
        for d in self._dirs.values():
            with contextlib.suppress(OSError):
                self.fs.close(d)
        self._dirs.clear()

    def __enter__(self) -> DirTree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def forget(self, rel_dir: str) -> None:
        """Drop cached handles of ``rel_dir`` and everything below it."""
        for key in [k for k in self._dirs if k == rel_dir or k.startswith(rel_dir + "/")]:
            if key:
                with contextlib.suppress(OSError):
                    self.fs.close(self._dirs.pop(key))

    def directory(self, rel_dir: str, *, create: list[str] | None = None) -> Dir:
        """Handle of directory ``rel_dir`` ("" = root), opened component by component without
        following links. With ``create``, missing directories are made (0o755) and their
        relative paths appended to ``create`` (so a rollback can remove exactly those)."""
        cached = self._dirs.get(rel_dir)
        if cached is not None:
            return cached
        parent, sep, name = rel_dir.rpartition("/")
        check_component(name, rel_dir)
        if sep and not parent:
            check_component("", rel_dir)  # a leading "/": not relative to the workspace
        pdir = self.directory(parent, create=create)
        try:
            d = self.fs.open_dir(pdir, name)
        except FileNotFoundError:
            if create is None:
                raise
            self.fs.mkdir(pdir, name, 0o755)
            create.append(rel_dir)
            d = self.fs.open_dir(pdir, name)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            st = self.fs.lstat(pdir, name)
            if is_link_like(st):
                raise EscapeError(f"{rel_dir} is a symlink, not a directory inside the workspace") from exc
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", rel_dir) from exc
        self._dirs[rel_dir] = d
        return d

    def parent(self, rel: str, *, create: list[str] | None = None) -> tuple[Dir, str]:
        """(handle of ``rel``'s directory, ``rel``'s last component)."""
        head, sep, name = rel.rpartition("/")
        check_component(name, rel)
        if sep and not head:
            check_component("", rel)
        return self.directory(head, create=create), name

    def lstat(self, rel: str) -> os.stat_result | None:
        """``lstat`` of ``rel`` (``None`` when it or a parent is missing)."""
        try:
            d, name = self.parent(rel)
            return self.fs.lstat(d, name)
        except FileNotFoundError:
            return None

    def lstat_at(self, d: Dir, name: str) -> os.stat_result | None:
        """``lstat`` of ``name`` in ``d`` (``None`` when missing)."""
        try:
            return self.fs.lstat(d, name)
        except FileNotFoundError:
            return None

    def exchange(self, a: Dir, a_name: str, b: Dir, b_name: str) -> bool:
        """Atomically swap two entries; ``False`` when unsupported (nothing done)."""
        return self.fs.exchange(a, a_name, b, b_name)

    def move(self, src: Dir, src_name: str, dst: Dir, dst_name: str, *, replace: bool = False) -> None:
        """Rename ``src_name`` to ``dst_name``. Without ``replace`` an existing ``dst_name`` is
        an error (``FileExistsError``)."""
        if replace:
            self.fs.rename(src, src_name, dst, dst_name)
        else:
            self.fs.rename_noreplace(src, src_name, dst, dst_name)

    @staticmethod
    def is_dir(st: os.stat_result | None) -> bool:
        return st is not None and stat.S_ISDIR(st.st_mode)


def prune_empty_parents(root: str, path: str) -> list[str]:
    """Remove the directories a delete of ``path`` left empty: its parent, then upwards, stopping
    at the first directory that still holds anything and never removing ``root`` itself (or
    anything outside it). Returns the removed directories, innermost first. The one pruning rule
    of every restore applied through the editor (the disk transaction prunes with undo records).
    Parents are resolved without following symlinks: a parent that became a link is left alone."""
    if not path.startswith(root.rstrip(os.sep) + os.sep):
        return []
    try:
        rel = normalize_rel(path[len(root.rstrip(os.sep)) + 1 :])
    except EscapeError:
        return []
    removed: list[str] = []
    head = rel.rpartition("/")[0]
    with DirTree(root) as tree:
        while head:
            parent, _, name = head.rpartition("/")
            try:
                pdir = tree.directory(parent)
                tree.forget(head)
                tree.fs.rmdir(pdir, name)
            except OSError:
                break
            removed.append(root.rstrip(os.sep) + os.sep + head)
            head = parent
    return removed


def workspace_rel(ws: str, path: str | os.PathLike[str], real: dict[str, str] | None = None) -> str:
    """Workspace-relative POSIX path of ``path`` (absolute, or relative to the real workspace
    root ``ws``) with its parent's symlinks resolved; :class:`PathOutsideWorkspace` when it is
    not inside. ``real``: parents already resolved in this call (a call reporting thousands of
    files in a few hundred directories resolves those directories once each)."""
    p = os.fspath(path)
    full = os.path.normpath(p if os.path.isabs(p) else os.path.join(ws, p))  # noqa: PTH117, PTH118 (hot)
    parent, leaf = os.path.split(full)
    real_parent = real.get(parent) if real is not None else None
    if real_parent is None:
        real_parent = os.path.realpath(parent)
        if real is not None:
            real[parent] = real_parent
    if real_parent != ws and not real_parent.startswith(ws + os.sep):
        raise PathOutsideWorkspace(str(path))
    # ``real_parent`` is ``ws`` or under it: the relative path is a slice, not a relpath.
    rel = leaf if real_parent == ws else f"{real_parent[len(ws) + 1 :]}{os.sep}{leaf}"
    if rel in (".", "", "..") or rel.startswith(".." + os.sep):
        raise PathOutsideWorkspace(str(path))
    return rel.replace(os.sep, "/")
