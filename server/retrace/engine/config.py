"""Engine configuration. Defaults here must equal the extension's package.json defaults."""

from __future__ import annotations

from pydantic import Field

from retrace.camel import CamelModel

BUILTIN_EXCLUDES: tuple[str, ...] = (
    ".git/",
    ".hg/",
    ".svn/",
    "node_modules/",
    "__pycache__/",
    ".venv/",
    "venv/",
    ".tox/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    "dist/",
    "build/",
    "target/",
    ".next/",
    ".DS_Store",
)
"""Never captured, whatever .gitignore says (gitignore syntax). Nested repositories' files are
captured; their ``.git`` directories never are."""


class RetentionPolicy(CamelModel):
    max_checkpoints: int = 5000
    """Keep at most this many checkpoints (oldest dropped first; the head is always kept)."""
    max_age_days: float = 30.0
    max_bytes: int = 2 * 1024**3
    """Total store size quota."""


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
