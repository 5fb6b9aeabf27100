"""Which workspace a command works on when ``--workspace`` is not given.

VS Code's integrated terminal carries ``RETRACE_WORKSPACE_FOLDERS`` (set by the extension's
environment collection): the window's workspace folders, absolute paths separated by
``os.pathsep``. A command run in one of them or below works on that folder — the deepest one when
folders nest —, so ``retrace log`` after a ``cd src`` still shows the store the timeline shows
(the folder's store follows from :func:`retrace.engine.store.home.default_store_dir`, the rule the
extension's server follows too). Anywhere else, and without the variable, the current directory,
as before. An explicit ``--workspace`` (even ``.``) always wins; ``retrace hook`` keeps its own
rule (the agent's project folder).

The variable is only compared with: an entry that is not absolute, holds a NUL, or a variable
over :data:`MAX_BYTES` names no folder. Entries and the current directory are compared as real
paths (symlinks resolved), letter case ignored where the platform ignores it.

:func:`folder_for` is pure (table-tested, any path flavour); :func:`default_workspace` is the edge.
Standard library only: it runs at every command's start.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable
from types import ModuleType

ENV = "RETRACE_WORKSPACE_FOLDERS"
MAX_BYTES = 64 * 1024
"""A window has a handful of folders; a bigger value is not the extension's (never parsed)."""
MAX_FOLDERS = 256


def _same(p: str) -> str:
    return p


def candidates(folders: str, *, sep: str, path: ModuleType = posixpath) -> list[str]:
    """The usable entries of the variable's value, normalised (``/a/./b/`` is ``/a/b``)."""
    if len(folders.encode("utf-8", "surrogateescape")) > MAX_BYTES:
        return []
    entries = [e for e in folders.split(sep) if e and "\0" not in e and path.isabs(e)]
    return [path.normpath(e) for e in entries[:MAX_FOLDERS]]


def _inside(child: str, folder: str, path: ModuleType) -> bool:
    if child == folder:
        return True
    prefix = folder if folder.endswith(path.sep) else folder + path.sep
    return child.startswith(prefix)


def folder_for(
    cwd: str,
    folders: str,
    *,
    sep: str,
    path: ModuleType = posixpath,
    ignore_case: bool = False,
    real: Callable[[str], str] = _same,
) -> str | None:
    """The folder (real path) of ``folders`` holding ``cwd`` (a real path), the deepest when
    several do; ``None`` when none does. ``real`` resolves an entry (the edge passes
    ``os.path.realpath``)."""
    fold: Callable[[str], str] = str.casefold if ignore_case else _same
    here = fold(path.normpath(cwd))
    best: str | None = None
    for entry in candidates(folders, sep=sep, path=path):
        folder = path.normpath(real(entry))
        if _inside(here, fold(folder), path) and (best is None or len(folder) > len(best)):
            best = folder
    return best


def default_workspace() -> str:
    """The workspace of a command given no ``--workspace``: the terminal's folder holding the
    current directory, else ``.``."""
    raw = os.environ.get(ENV)
    if not raw:
        return "."
    try:
        cwd = os.path.realpath(os.curdir)
    except OSError:  # the current directory was deleted: the command reports it as before
        return "."
    from retrace.oscompat import ignores_case

    real = os.path.realpath
    found = folder_for(cwd, raw, sep=os.pathsep, path=os.path, ignore_case=ignores_case(), real=real)
    return found if found is not None else "."
