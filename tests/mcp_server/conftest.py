"""Fixtures of the ``retrace mcp`` tests: a seeded workspace and store, and a short private relay
directory per test (the socket path must stay within ``sun_path``), set for this process and
every child through ``RETRACE_RELAY_DIR``."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrace.relay import wire

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # mcp_support
sys.path.insert(0, str(HERE.parent / "lsp"))  # the editor stand-in (lsp_support)


@pytest.fixture
def relay_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    parent = Path(tempfile.mkdtemp(prefix="rm", dir="/tmp"))  # short on purpose (sun_path)
    path = parent / "relay"
    monkeypatch.setenv(wire.RELAY_DIR_ENV, str(path))
    monkeypatch.delenv("RETRACE_STORE", raising=False)
    yield path
    shutil.rmtree(parent, ignore_errors=True)
