"""Smoke test of the real-code replay on locally generated "versions" (no network).

Four versions of a small project (edits, a deletion, a rename, a new and a removed directory, an
exec bit flip) replayed through every strategy and variant: every restore byte-exact, the same
trees everywhere, the report renders. ``sync`` (what makes the workspace a version) is checked
directly. The real figures come from ``python -m bench.replay`` (see bench/README.md).
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from bench.replay import RUNS, measure
from bench.replay_report import render
from bench.versions import sync, versions

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the shadow-git baseline needs git")

V1 = {
    "setup.py": "from setuptools import setup\nsetup()\n",
    "pkg/__init__.py": "VERSION = '1.0'\n",
    "pkg/core.py": "def f():\n    return 1\n",
    "pkg/old.py": "OLD = True\n",
    "docs/index.md": "# Docs\n",
    "scripts/run.sh": "#!/bin/sh\necho hi\n",
}


def _versions() -> dict[str, dict[str, str | None]]:
    return {
        "1.0": dict(V1),
        "1.1": {
            "pkg/__init__.py": "VERSION = '1.1'\n",
            "pkg/core.py": "def f():\n    return 2\n",
            "pkg/old.py": None,
        },
        "1.2": {"pkg/__init__.py": "VERSION = '1.2'\n", "docs/index.md": None, "pkg/sub/new.py": "NEW = 1\n"},
        "1.10": {
            "pkg/core.py": None,
            "pkg/engine.py": "def f():\n    return 2\n",
            "pkg/__init__.py": "V = 10\n",
        },
    }


def make_versions(cache: Path, project: str) -> None:
    tree: dict[str, str] = {}
    for version, changes in _versions().items():
        for rel, text in changes.items():
            if text is None:
                tree.pop(rel, None)
            else:
                tree[rel] = text
        root = cache / project / "v" / version
        for rel, text in tree.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        if version == "1.10":
            (root / "scripts/run.sh").chmod(0o755)


def test_sync_makes_the_workspace_equal_the_version_and_reports_what_changed(tmp_path: Path) -> None:
    make_versions(tmp_path / "cache", "proj")
    assert versions(tmp_path / "cache", "proj") == ["1.0", "1.1", "1.2", "1.10"]
    ws = tmp_path / "ws"
    ws.mkdir()
    v = tmp_path / "cache" / "proj" / "v"
    assert sync(ws, v / "1.0") == sorted(V1)
    assert sync(ws, v / "1.0") == []
    assert sync(ws, v / "1.1") == ["pkg/__init__.py", "pkg/core.py", "pkg/old.py"]
    assert sync(ws, v / "1.2") == ["docs/index.md", "pkg/__init__.py", "pkg/sub/new.py"]
    assert not (ws / "docs").exists()
    assert sync(ws, v / "1.10") == ["pkg/__init__.py", "pkg/core.py", "pkg/engine.py", "scripts/run.sh"]
    assert (ws / "scripts/run.sh").stat().st_mode & 0o111


def test_every_strategy_and_variant_replays_the_versions_byte_exact(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    make_versions(cache, "proj")
    results = [measure(name, variant, "proj", cache, tmp_path / "run") for name, variant in RUNS]
    for r in results:
        assert r["exact"], (r["strategy"], r["variant"], r["restores"])
        assert r["checkpoint"]["count"] == 3 and r["changed"] == [3, 3, 4]
    assert len({tuple(sorted(r["digests"].items())) for r in results}) == 1
    report = render(results, "proj", "python -m bench.replay", datetime.now(UTC))
    assert "## Replay: proj" in report and "≥ 10× faster than shadow git" in report
    assert "| NO |" not in report and "crashed" not in report
