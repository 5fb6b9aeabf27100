"""No source file grows past a size a reader can hold in mind.

Every Python module of the server, every TypeScript module of the extension and every script
stays at or under :data:`MAX_LINES`; a file that outgrows it is split along the concepts it holds
(one room per concept), not trimmed of comments.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 600
SOURCES = (("server/retrace", "*.py"), ("extension/src", "*.ts"), ("scripts", "*.mjs"), ("scripts", "*.py"))


def _sources() -> list[Path]:
    return sorted(p for folder, pattern in SOURCES for p in (ROOT / folder).rglob(pattern))


def test_sources_are_found() -> None:
    names = {p.name for p in _sources()}
    assert {"engine.py", "extension.ts"} <= names  # the glob really looks at the code


def test_no_source_file_is_over_the_limit() -> None:
    too_long = {}
    for path in _sources():
        with path.open(encoding="utf-8") as f:
            lines = sum(1 for _ in f)
        if lines > MAX_LINES:
            too_long[str(path.relative_to(ROOT))] = lines
    assert too_long == {}, f"split these along their concepts (limit {MAX_LINES} lines): {too_long}"
