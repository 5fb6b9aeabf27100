"""Fixtures for the data-safety tests: the real ``retrace`` CLI on a temporary workspace + store."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.cli_support import Cli


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    ws = tmp_path / "work space"
    ws.mkdir()
    return Cli(ws, tmp_path / "store")
