"""THE rule for which folder of a multi-root workspace owns a path (pure: no file system).

A workspace has one or more folders, each with its own store. :class:`FolderRouter` maps a path
to ``(folder, folder-relative path)``:

- **One folder**: exactly the single-folder rule, :func:`~retrace.engine.workspace.normalize_rel`
  against it (a relative path is relative to the folder, even when its first component happens to
  be the folder's own name).
- **Several folders**: an absolute path goes to the *innermost* folder holding it (nested folders:
  the deepest root wins, whatever the folders' order); a relative path must start with a folder's
  name (``web/src/i.ts``), then is routed as the absolute path it names, so ``mono/packages/pkg/x``
  reaches a nested ``pkg`` folder too. Two folders with the same name are told apart only by their
  absolute paths (:class:`AmbiguousFolderName`).
- A path outside every folder is refused with the single-folder refusal, word for word (the first
  folder's). Every check of the path itself is ``normalize_rel``'s (no ``..``, NUL, Windows names).

Routers never change: adding or removing a folder makes a new one (:meth:`FolderRouter.with_folder`,
:meth:`FolderRouter.without`), so a turn holding the old router is not disturbed, and a path in a
removed folder is outside every folder for anyone using the new one.
"""

from __future__ import annotations

import ntpath
import posixpath
import sys
from dataclasses import dataclass

from retrace.engine.workspace import EscapeError, normalize_rel


class AmbiguousFolderName(EscapeError):  # noqa: N818 (contract names)
    """Two workspace folders carry the name a relative path starts with."""

    code = "ambiguousFolder"


@dataclass(frozen=True)
class Folder:
    """One workspace folder: its display name (VS Code's ``WorkspaceFolder.name``) and absolute root."""

    name: str
    root: str


@dataclass(frozen=True)
class Routed:
    """Where a path lives: its folder and the path relative to that folder (``normalize_rel``'s form)."""

    folder: Folder
    rel: str


def folder_name(root: str, *, windows: bool | None = None) -> str:
    """A folder's default name: the last component of its root (the root itself for ``/``)."""
    windows = sys.platform == "win32" if windows is None else windows
    flavour = ntpath if windows else posixpath
    stripped = root.rstrip("\\/") if windows else root.rstrip("/")
    return flavour.basename(stripped) or root


class FolderRouter:
    """Routes paths to the folders of one workspace (see the module docstring)."""

    def __init__(self, folders: list[Folder] | tuple[Folder, ...], *, windows: bool | None = None) -> None:
        self.windows = sys.platform == "win32" if windows is None else windows
        self.folders: tuple[Folder, ...] = tuple(folders)

    # ------------------------------------------------------------------ changes (new routers)
    def with_folder(self, folder: Folder) -> FolderRouter:
        """This router plus ``folder`` (a root already present: unchanged)."""
        if any(self._same_root(f.root, folder.root) for f in self.folders):
            return self
        return FolderRouter([*self.folders, folder], windows=self.windows)

    def without(self, root: str) -> FolderRouter:
        """This router less the folder at ``root``."""
        kept = [f for f in self.folders if not self._same_root(f.root, root)]
        return FolderRouter(kept, windows=self.windows)

    def overlapping(self, folder: Folder) -> Folder | None:
        """A folder of this router that holds ``folder`` or lies inside it (``None``: none). Such
        a pair cannot each have a store of its own: both would record (and restore) the inner
        folder's files."""
        for known in self.folders:
            if self._same_root(known.root, folder.root):
                continue
            if self._inside(folder.root, known.root) or self._inside(known.root, folder.root):
                return known
        return None

    # ------------------------------------------------------------------ lookups
    def folder(self, key: str) -> Folder:
        """The folder a request names: its root (absolute) or its name when no other folder has it."""
        for folder in self.folders:
            if self.is_absolute(key) and self._same_root(folder.root, key):
                return folder
        named = self.named(key)
        if len(named) == 1:
            return named[0]
        if len(named) > 1:
            raise AmbiguousFolderName(self._ambiguous(key))
        known = ", ".join(f.name for f in self.folders) or "none"
        raise EscapeError(f"{key!r} is not a folder of this workspace (folders: {known})")

    def route(self, path: str) -> Routed:
        """The folder owning ``path`` and the path relative to it, or :class:`EscapeError`."""
        if not self.folders:
            raise EscapeError(f"{path} is outside the workspace: no workspace folder is open")
        if len(self.folders) == 1:
            only = self.folders[0]
            return Routed(only, normalize_rel(path, only.root, windows=self.windows))
        if self.is_absolute(path):
            return self._innermost(path)
        text = path.replace("\\", "/") if self.windows else path
        parts = [p for p in text.split("/") if p not in ("", ".")]
        if not parts or "\x00" in text or ".." in parts:
            raise EscapeError(f"{path!s} is not a path inside the workspace")
        named = self.named(parts[0])
        if len(named) > 1:
            raise AmbiguousFolderName(self._ambiguous(parts[0]))
        if not named:
            names = ", ".join(f"{f.name}/…" for f in self.folders)
            raise EscapeError(
                f"{path!s}: this workspace has several folders; start with a folder's name ({names})"
            )
        rest = "/".join(parts[1:])
        if not rest:
            raise EscapeError(f"{path!s} is not a path inside the workspace")
        rel = normalize_rel(rest, None, windows=self.windows)  # refuses `..`, NUL, reserved names
        sep = "\\" if self.windows else "/"
        return self._innermost(named[0].root.rstrip("\\/") + sep + rel.replace("/", sep))

    # ------------------------------------------------------------------ rules
    def _innermost(self, path: str) -> Routed:
        best: Routed | None = None
        depth = -1
        for folder in self.folders:
            try:
                rel = normalize_rel(path, folder.root, windows=self.windows)
            except EscapeError:
                continue
            folder_depth = self._depth(folder.root)
            if folder_depth > depth:
                best, depth = Routed(folder, rel), folder_depth
        if best is None:
            # Nothing holds it: the single-folder refusal, word for word (the first folder's).
            normalize_rel(path, self.folders[0].root, windows=self.windows)
            raise EscapeError(f"{path} is outside the workspace")  # pragma: no cover (raised above)
        return best

    def rel_in(self, path: str, root: str) -> str | None:
        """``path`` relative to the folder at ``root`` when this router routes it there (the
        innermost folder holding it), else ``None`` (another folder's, outside every folder, or
        not a path at all). What the editor reports about a path (unsaved, open) is matched to a
        folder through this, never through a path relative to another folder."""
        try:
            routed = self.route(path)
        except EscapeError:
            return None
        return routed.rel if self._same_root(routed.folder.root, root) else None

    def named(self, name: str) -> list[Folder]:
        """The folders called ``name`` (letter case ignored on Windows)."""
        if self.windows:
            return [f for f in self.folders if f.name.casefold() == name.casefold()]
        return [f for f in self.folders if f.name == name]

    def _ambiguous(self, name: str) -> str:
        roots = ", ".join(f.root for f in self.named(name))
        return f"several workspace folders are named {name!r} ({roots}): name the file by its absolute path"

    def is_absolute(self, path: str) -> bool:
        """Whether ``path`` is absolute under this router's platform rules."""
        return ntpath.isabs(path) if self.windows else path.startswith("/")

    def _norm(self, root: str) -> str:
        if self.windows:
            return ntpath.normcase(ntpath.normpath(root))
        return posixpath.normpath(root)

    def _same_root(self, a: str, b: str) -> bool:
        return self._norm(a) == self._norm(b)

    def _inside(self, inner: str, outer: str) -> bool:
        a, b = self._norm(inner).replace("\\", "/"), self._norm(outer).replace("\\", "/")
        return a.startswith(b.rstrip("/") + "/")

    def _depth(self, root: str) -> int:
        norm = self._norm(root).replace("\\", "/")
        return len([p for p in norm.split("/") if p])
