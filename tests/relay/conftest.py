"""Fixtures of the relay tests: a short private relay directory per test (the socket path must
stay within ``sun_path`` whatever pytest's temporary paths are), set for this process and every
child through ``RETRACE_RELAY_DIR``."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrace.relay import wire


@pytest.fixture
def relay_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    parent = Path(tempfile.mkdtemp(prefix="rr", dir="/tmp"))  # short on purpose (sun_path)
    path = parent / "relay"
    monkeypatch.setenv(wire.RELAY_DIR_ENV, str(path))
    yield path
    shutil.rmtree(parent, ignore_errors=True)


sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lsp"))  # the editor stand-in (lsp_support)
