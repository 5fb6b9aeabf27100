"""What belongs to the workspace: the ignore rules.

:class:`Ignorer` — BUILTIN_EXCLUDES and ``config.excludes`` always win; tool folders (a venv,
``node_modules``, build output) are recognised by their marker files, never by name alone; then
every ``.gitignore`` in the tree (nested ones relative to their directory, the deepest
deciding), gitwildmatch semantics via ``pathspec``. ``.git`` is never entered, whatever the
rules say. Simple name patterns (``.DS_Store``, ``*.log``) are matched by set lookup: the walk of
a 50k-file tree must stay close to the cost of its ``lstat`` calls. With a ``source`` the rules
are a recorded state's (a checkpoint's own ``.gitignore`` files), which is how a restore knows
what its target considered ignored (:func:`kept_by_rules`).
"""

# String paths and os-level calls on purpose: hot paths, no Path object per file.
# ruff: noqa: PTH118

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

import pathspec

from retrace.engine.capture.fs import read_regular
from retrace.engine.config import BUILTIN_EXCLUDES, TOOL_FOLDERS, TOOL_MARKERS, EngineConfig

_GLOB = set("*?[]\\!")


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
        self._dirs_out: dict[str, bool] = {}

    def set_excludes(self, excludes: list[str]) -> None:
        """The user's excludes from now on (a settings change); every cached answer is dropped.
        Changed in place: the capture and its watcher share this object."""
        fixed = [_Rules(list(BUILTIN_EXCLUDES)), _Rules(list(excludes))]
        self._fixed = [r for r in fixed if not r.empty]
        self.forget()

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
                # A symlinked .gitignore is never followed, a FIFO or a device never blocks
                # (no rules then); one syscall when it is absent.
                data = read_regular(p, 1 << 22)
            except OSError:
                data = b""
            lines = data.decode("utf-8", errors="replace").splitlines()
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
        self._dirs_out.clear()

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
        included). The ancestors' verdict is cached per directory (until :meth:`forget`)."""
        cut = rel.rfind("/")
        if cut > 0 and self._dir_out(rel[:cut]):
            return True
        return self.excluded(rel, is_dir) or (is_dir and self.tool_folder(rel))

    def _dir_out(self, d: str) -> bool:
        """Whether directory ``d`` or one of its ancestors is excluded (a tool folder included)."""
        known = self._dirs_out
        todo: list[str] = []
        verdict = False
        while d:
            v = known.get(d)
            if v is not None:
                verdict = v
                break
            todo.append(d)
            cut = d.rfind("/")
            d = d[:cut] if cut > 0 else ""
        for anc in reversed(todo):  # outermost first
            verdict = verdict or self.excluded(anc, True) or self.tool_folder(anc)
            known[anc] = verdict
        return verdict


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


def kept_by_rules(paths: Iterable[str], now: Ignorer, target: Ignorer) -> dict[str, str]:
    """Which of the paths a restore would change it must keep, with the reason: a path
    ignored by the rules on disk now or by the target's own rules was never tracked content
    at that end (an ``.env`` the agent un-ignored, or one the user edits after it became
    ignored), so it is not the restore's to delete, overwrite or create."""
    kept: dict[str, str] = {}
    for p in paths:
        if now.excluded_path(p, False):
            kept[p] = "ignored by the current ignore rules: left as it is"
        elif target.excluded_path(p, False):
            kept[p] = "ignored at the restored checkpoint: left as it is and no longer tracked"
    return kept
