"""Walking a workspace the way every strategy must see it, and fingerprinting its state.

The ignore set is Retrace's: ``BUILTIN_EXCLUDES`` plus the workspace's root ``.gitignore`` (the
generated workspaces have no nested ones). ``walk`` is a plain ``os.scandir`` stat walk that
prunes ignored directories and never follows symlinks; the floor strategy's shell-call capture is
exactly one such walk, so it is written to be as cheap as Python allows (one regex per name).
``tree_digest`` hashes every tracked file's path, exec bit and bytes: two trees with the same
digest are byte-identical as far as a restore is concerned.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import pathspec

from retrace.engine.config import BUILTIN_EXCLUDES, TOOL_FOLDER_PATTERNS


class IgnoreRules:
    """Gitignore rules split for speed: bare names match a basename; anything else goes to pathspec."""

    def __init__(self, patterns: list[str]) -> None:
        dir_names: list[str] = []
        any_names: list[str] = []
        complex_patterns: list[str] = []
        for raw in patterns:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("!"):
                raise ValueError(f"negated ignore patterns are not supported by the benchmark: {line!r}")
            body = line[:-1] if line.endswith("/") else line
            if "/" in body or "**" in body:
                complex_patterns.append(line)
            elif line.endswith("/"):
                dir_names.append(fnmatch.translate(body))
            else:
                any_names.append(fnmatch.translate(body))
        self._dir_re = re.compile("|".join(dir_names + any_names)) if dir_names or any_names else None
        self._file_re = re.compile("|".join(any_names)) if any_names else None
        self._spec = pathspec.GitIgnoreSpec.from_lines(complex_patterns) if complex_patterns else None

    @classmethod
    def for_workspace(cls, root: Path) -> IgnoreRules:
        gitignore = root / ".gitignore"
        extra = gitignore.read_text(encoding="utf-8").splitlines() if gitignore.exists() else []
        return cls([*BUILTIN_EXCLUDES, *TOOL_FOLDER_PATTERNS, *extra])

    def ignores_dir(self, rel: str, name: str) -> bool:
        if self._dir_re is not None and self._dir_re.match(name):
            return True
        return self._spec is not None and self._spec.match_file(rel + "/")

    def ignores_file(self, rel: str, name: str) -> bool:
        if self._file_re is not None and self._file_re.match(name):
            return True
        return self._spec is not None and self._spec.match_file(rel)


def walk(root: Path, rules: IgnoreRules) -> Iterator[tuple[str, os.stat_result]]:
    """Every tracked file and symlink under ``root`` as (posix relative path, lstat result)."""
    stack: list[tuple[str, str]] = [(str(root), "")]
    while stack:
        abs_dir, rel_dir = stack.pop()
        with os.scandir(abs_dir) as entries:
            for entry in entries:
                rel = f"{rel_dir}{entry.name}"
                if entry.is_dir(follow_symlinks=False):
                    if not rules.ignores_dir(rel, entry.name):
                        stack.append((entry.path, rel + "/"))
                elif not rules.ignores_file(rel, entry.name):
                    yield rel, entry.stat(follow_symlinks=False)


def file_digest(path: Path, st: os.stat_result) -> str:
    """SHA-256 of a file's bytes (of the link target for a symlink)."""
    if stat.S_ISLNK(st.st_mode):
        return hashlib.sha256(os.readlink(path).encode("utf-8", "surrogateescape")).hexdigest()
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def tree_digest(root: Path, rules: IgnoreRules | None = None) -> str:
    """One hash over (path, kind, exec bit, content hash) of every tracked file, in path order."""
    rules = rules or IgnoreRules.for_workspace(root)
    h = hashlib.sha256()
    for rel, st in sorted(walk(root, rules)):
        kind = "l" if stat.S_ISLNK(st.st_mode) else ("x" if st.st_mode & 0o111 else "f")
        h.update(f"{rel}\0{kind}\0{file_digest(root / rel, st)}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def du_bytes(path: Path) -> int:
    """Disk usage like ``du -s --block-size=1``: allocated blocks, hard links counted once."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in [*files, "."]:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except FileNotFoundError:
                continue
            key = (st.st_dev, st.st_ino)
            if key not in seen:
                seen.add(key)
                total += st.st_blocks * 512
    return total


def apparent_bytes(path: Path) -> int:
    """Sum of file sizes (``du --apparent-size``): what the store holds, ignoring block rounding."""
    return sum(
        os.lstat(os.path.join(dirpath, name)).st_size
        for dirpath, _dirs, files in os.walk(path)
        for name in files
    )
