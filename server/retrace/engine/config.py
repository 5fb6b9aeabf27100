"""Engine configuration. Defaults here must equal the extension's package.json defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import Field

from retrace.camel import CamelModel

BUILTIN_EXCLUDES: tuple[str, ...] = (
    ".git/",
    ".hg/",
    ".svn/",
    "__pycache__/",
    ".tox/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".next/",
    ".DS_Store",
)
"""Never captured, whatever .gitignore says (gitignore syntax): names no real source uses.
Nested repositories' files are captured; their ``.git`` directories never are."""


@dataclass(frozen=True)
class ToolFolder:
    """How to recognise a tool's output folder whose NAME real source also uses (``venv``,
    ``build``, ``target``...): by a marker file inside it or next to it, never by name alone
    (``stdlib/venv/__init__.pyi`` is source)."""

    inside: tuple[str, ...] = ()
    beside: tuple[str, ...] = ()
    """Files in the folder's parent that mark it (``package.json`` for ``node_modules``)."""


TOOL_MARKERS: tuple[str, ...] = ("pyvenv.cfg", "CACHEDIR.TAG")
"""A directory holding one of these is a tool folder whatever its name (a virtual environment,
a cache tagged per the Cache Directory Tagging specification)."""

TOOL_FOLDERS: Mapping[str, ToolFolder] = {
    ".venv": ToolFolder(),
    "venv": ToolFolder(),
    "node_modules": ToolFolder(
        inside=(".package-lock.json", ".modules.yaml", ".yarn-state.yml", ".yarn-integrity"),
        beside=("package.json",),
    ),
    "target": ToolFolder(inside=(".rustc_info.json",), beside=("Cargo.toml", "pom.xml")),
    "build": ToolFolder(
        inside=("CMakeCache.txt",),
        beside=("setup.py", "pyproject.toml", "build.gradle", "build.gradle.kts", "package.json"),
    ),
    "dist": ToolFolder(beside=("setup.py", "pyproject.toml", "package.json")),
}
"""Conventional tool-folder names, excluded only when a marker confirms them."""

TOOL_FOLDER_PATTERNS: tuple[str, ...] = tuple(f"{name}/" for name in TOOL_FOLDERS)
"""The tool-folder names as plain patterns, for consumers that cannot check markers (text
search, the benchmark's reference walk)."""


class RetentionPolicy(CamelModel):
    max_checkpoints: int = 5000
    """Keep at most this many checkpoints (oldest dropped first; the head is always kept)."""
    max_age_days: float = 30.0
    max_bytes: int = 2 * 1024**3
    """Total store size quota."""
    idle_minutes: float = 10.0
    """The editor's server applies retention on its own at start-up and after this long with
    no agent turn (``0``: never on its own; an explicit collection still works)."""


DEFAULT_MAX_FILE_BYTES = 8 * 1024 * 1024


class EngineConfig(CamelModel):
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    """Per-file size cap: larger files are recorded (size, mode) but their content is not stored."""
    excludes: list[str] = Field(default_factory=list)
    """Extra gitignore-style patterns to exclude, on top of BUILTIN_EXCLUDES and .gitignore."""
    use_gitignore: bool = True
    watcher: bool = True
    """Use a file-system watcher for shell-command capture (stat walk when off or unhealthy)."""
    durable_blobs: bool = False
    """fsync every blob before the journal append (power-loss safety). The journal append is
    always fsynced; a process crash (kill -9) is safe either way."""
    retention: RetentionPolicy = Field(default_factory=RetentionPolicy)
