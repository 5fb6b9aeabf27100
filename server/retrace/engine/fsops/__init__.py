"""The file-system backend: every directory-relative operation the engine performs on the
workspace, behind one interface with two implementations.

Safety contract (both backends): an operation named by ``(directory handle, entry name)`` acts in
the very directory the handle was opened on — the one whose identity (device, inode) was checked
when it was resolved, component by component, from the workspace root — or fails. No component
that is (or becomes) a symlink, junction or other reparse point is ever traversed; no final
symlink is followed by an open; a create never replaces (``O_EXCL``); a no-replace rename never
overwrites an entry that exists when it runs (atomically with Linux's ``renameat2`` and with
Windows's ``MoveFileEx`` behind ``os.rename``; a checked rename on other systems).

* :mod:`.posix` (Linux, macOS, the BSDs): descriptor-relative system calls (``openat`` with
  ``O_DIRECTORY | O_NOFOLLOW``, ``fstatat``, ``renameat``/``renameat2``, ``unlinkat``,
  ``mkdirat``, ``symlinkat``). A handle IS an open directory descriptor: the kernel resolves each
  name inside that directory, so a component swapped for a link after the check changes nothing.
  The guarantee is atomic: there is no check-then-use window.
* :mod:`.portable` (Windows, and any platform whose ``os.open`` lacks ``dir_fd``): paths only,
  built on what Windows and macOS both offer. A handle is a directory's absolute path plus the
  identity ``lstat`` gave it when every component was checked (not a link, not a junction or
  other reparse point: ``st_file_attributes & FILE_ATTRIBUTE_REPARSE_POINT`` on Windows). Every
  operation re-checks the directory's identity right before it runs and again right after, and
  an open checks the opened descriptor (``fstat``) against the path (``lstat``,
  ``os.path.samestat``). This NARROWS the check-then-use window to the system call itself but
  cannot CLOSE it: Windows has no ``openat``, so a path is resolved again by every call, and a
  process that swaps a directory for a junction and back within that one call is not seen
  before the call acts. What the backend does then is in :mod:`.portable` (detect after the fact
  and undo what can be undone; what cannot be undone is named there).

Chosen by :func:`backend`: ``RETRACE_FS_BACKEND`` = ``posix`` | ``portable`` forces one (any
other value is a :class:`BackendChoiceError`, one line); unset or empty, ``posix`` where
``os.open`` accepts ``dir_fd`` (:func:`retrace.oscompat.has_dir_fd`), else ``portable``. Read at
call time (each :class:`~retrace.engine.workspace.DirTree` asks once), so tests force either.
"""

from __future__ import annotations

import os

from retrace import oscompat
from retrace.engine.fsops.base import ENV, NAMES, Backend, BackendChoiceError, Dir
from retrace.engine.fsops.portable import PORTABLE
from retrace.engine.fsops.posix import POSIX

__all__ = ["ENV", "NAMES", "Backend", "BackendChoiceError", "Dir", "backend", "choice"]


def choice() -> str:
    """The backend name :func:`backend` picks now (see the module docstring)."""
    forced = os.environ.get(ENV, "").strip()
    if forced and forced not in NAMES:
        raise BackendChoiceError(f"{ENV}={forced!r} is not a file-system backend; use 'posix' or 'portable'")
    if forced == "posix" and not oscompat.has_dir_fd():
        raise BackendChoiceError(oscompat.dir_fd_missing(f"{ENV}=posix") or "")
    if forced:
        return forced
    return "posix" if oscompat.has_dir_fd() else "portable"


def backend() -> Backend:
    """The backend to use now (:func:`choice`)."""
    if choice() == "posix":
        return POSIX
    return PORTABLE
