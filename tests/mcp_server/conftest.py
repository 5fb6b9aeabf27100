"""The ``retrace mcp`` tests' shared fixtures: a workspace whose path has a space,
its store, and both seeded (``relay_dir`` is the suite's, tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.mcp_server.mcp_support import Seeded, seed
from tests.workspaces import project


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return project(tmp_path, "work space")


@pytest.fixture
def seeded(relay_dir: Path, workspace: Path, store: Path) -> Seeded:
    return seed(workspace, store)
