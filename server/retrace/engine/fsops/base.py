"""The backend interface (:class:`Backend`) and its directory handle (:class:`Dir`); the
contract is in :mod:`retrace.engine.fsops`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

from retrace.engine.errors import RetraceError

ENV = "RETRACE_FS_BACKEND"
NAMES = ("posix", "portable")


class BackendChoiceError(RetraceError):
    """``RETRACE_FS_BACKEND`` names no backend, or one this platform cannot run."""


@dataclass(eq=False)
class Dir:
    """An opened directory: ``path`` (absolute; what the portable backend operates through and
    what messages name), ``fd`` (the posix backend's descriptor; -1 in the portable backend)
    and ``ident`` ((device, inode) when it was checked)."""

    path: str
    fd: int
    ident: tuple[int, int]


class Backend(Protocol):
    """The operations of the safety contract above. Errors are ``OSError`` as the system raises
    them; a link where a directory component must be is ``OSError(ELOOP)`` (a non-directory:
    ``NotADirectoryError``) from :meth:`open_dir`, and an identity that moved under a portable
    operation is ``OSError(ESTALE)``."""

    name: str

    def open_root(self, path: str) -> Dir: ...

    def open_dir(self, parent: Dir, name: str) -> Dir: ...

    def close(self, d: Dir) -> None: ...

    def dir_stat(self, d: Dir) -> os.stat_result: ...

    def lstat(self, d: Dir, name: str) -> os.stat_result: ...

    def readlink(self, d: Dir, name: str) -> str: ...

    def open_file(self, d: Dir, name: str) -> int:
        """Open an existing entry for reading without following a final link, never blocking
        (the caller checks the type on the descriptor)."""
        ...

    def create_file(self, d: Dir, name: str, mode: int) -> int:
        """Create ``name`` exclusively (``O_EXCL``, write-only) and return its descriptor."""
        ...

    def symlink(self, target: str, d: Dir, name: str) -> None: ...

    def mkdir(self, d: Dir, name: str, mode: int) -> None: ...

    def rmdir(self, d: Dir, name: str) -> None: ...

    def unlink(self, d: Dir, name: str) -> None: ...

    def remove_tree(self, d: Dir, name: str) -> None:
        """Remove ``name``: a whole tree for a directory (never following a link inside)."""
        ...

    def listdir(self, d: Dir) -> list[str]: ...

    def rename(self, src: Dir, src_name: str, dst: Dir, dst_name: str) -> None:
        """Rename, replacing an existing ``dst_name`` (as ``rename(2)``)."""
        ...

    def rename_noreplace(self, src: Dir, src_name: str, dst: Dir, dst_name: str) -> None:
        """Rename; an existing ``dst_name`` is ``FileExistsError``."""
        ...

    def exchange(self, a: Dir, a_name: str, b: Dir, b_name: str) -> bool:
        """Swap two entries atomically; ``False`` (nothing done) where unsupported."""
        ...

    def fchmod(self, fd: int, d: Dir, name: str, mode: int) -> None:
        """Set the mode of the open file ``fd`` (which is ``name`` in ``d``)."""
        ...

    def fsync_dir(self, d: Dir) -> None: ...
