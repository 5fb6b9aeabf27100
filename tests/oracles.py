"""THE test oracles for "what is on disk under this folder": one definition each, named for
what it observes. A test compares two readings of the same oracle (before / after, or against an
expected dict); choose the one that sees what the test is about — a test about executable bits,
links or directories must use an oracle that sees them. ``tests/architecture/test_test_support.py``
keeps these names defined here only.

Paths are relative to ``root``, ``/``-separated. None of them follows a link to a directory.

=====================  =========================================================================
``file_bytes``         file → its bytes. Regular files and links to files (read through the link);
                       directories, dangling links and links to directories unseen.
``entries``            file or link → (kind ``file``/``symlink``, bytes or link target, owner
                       executable). Directories implied; other kinds (FIFO, socket) unseen.
``entry_hashes``       the same, with sha256 instead of bytes; ``.git`` left out unless asked.
``entries_and_modes``  EVERY entry, directories included → (kind, content): a directory's mode,
                       a link's target, a file's sha256 and full mode, ``other`` for the rest.
``inodes``             EVERY entry, directories included → (inode, type bits): was it moved back,
                       or recreated?
=====================  =========================================================================
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

Entries = dict[str, tuple[str, bytes, bool]]
EntryHashes = dict[str, tuple[str, str, bool]]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _files(root: Path) -> list[Path]:
    return [p for p in sorted(root.rglob("*")) if p.is_file()]


def file_bytes(root: Path) -> dict[str, bytes]:
    """path → bytes of every file under ``root`` (links to files read through; directories implied)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in _files(root)}


def _walk_links_and_files(root: Path, *, include_git: bool = True) -> list[tuple[str, str, os.stat_result]]:
    """(rel, absolute path, lstat) of every regular file and link under ``root``, sorted."""
    found: list[tuple[str, str, os.stat_result]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        if not include_git:
            dirnames[:] = [d for d in dirnames if d != ".git"]
        dirnames.sort()
        for name in [*filenames, *(d for d in dirnames if os.path.islink(os.path.join(dirpath, d)))]:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode) or stat.S_ISREG(st.st_mode):
                found.append((os.path.relpath(path, root).replace(os.sep, "/"), path, st))
    return sorted(found)


def entries(root: Path) -> Entries:
    """file or link → (kind, bytes or link target, owner-executable); ``.git`` included."""
    out: Entries = {}
    for rel, path, st in _walk_links_and_files(root):
        if stat.S_ISLNK(st.st_mode):
            out[rel] = ("symlink", os.fsencode(os.readlink(path)), False)
        else:
            with open(path, "rb") as f:
                out[rel] = ("file", f.read(), bool(st.st_mode & stat.S_IXUSR))
    return out


def entry_hashes(root: Path, *, include_git: bool = False) -> EntryHashes:
    """file or link → (kind, sha256 of the bytes or the link target, owner-executable)."""
    out: EntryHashes = {}
    for rel, path, st in _walk_links_and_files(root, include_git=include_git):
        if stat.S_ISLNK(st.st_mode):
            out[rel] = ("symlink", os.readlink(path), False)
        else:
            with open(path, "rb") as f:
                out[rel] = ("file", _sha(f.read()), bool(st.st_mode & stat.S_IXUSR))
    return out


def entries_and_modes(root: Path) -> dict[str, tuple[str, str]]:
    """EVERY entry below ``root``, directories included (links not followed) → (kind, content):
    ``dir`` + mode, ``link`` + target, ``file`` + sha256 and full mode, ``other`` + type bits."""
    out: dict[str, tuple[str, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st = p.lstat()
            rel = p.relative_to(root).as_posix()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", oct(stat.S_IMODE(st.st_mode)))
            elif stat.S_ISREG(st.st_mode):
                out[rel] = ("file", _sha(p.read_bytes()) + oct(st.st_mode))
            else:
                out[rel] = ("other", oct(stat.S_IFMT(st.st_mode)))
    return out


def inodes(root: Path) -> dict[str, tuple[int, int]]:
    """path → (inode, file type bits) of every entry (directories included), links not followed."""
    out: dict[str, tuple[int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            out[os.path.relpath(p, root).replace(os.sep, "/")] = (st.st_ino, stat.S_IFMT(st.st_mode))
    return out
