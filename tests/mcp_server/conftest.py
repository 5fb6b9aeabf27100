"""The ``retrace mcp`` tests' support paths and shared fixtures: a workspace whose path has a space,
its store, and both seeded (``relay_dir`` is the suite's, tests/conftest.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # mcp_support
sys.path.insert(0, str(HERE.parent / "lsp"))  # the editor stand-in (lsp_support)

from mcp_support import Seeded, seed  # noqa: E402  (after the path above)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "work space"
    root.mkdir()
    return root


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def seeded(relay_dir: Path, workspace: Path, store: Path) -> Seeded:
    return seed(workspace, store)
