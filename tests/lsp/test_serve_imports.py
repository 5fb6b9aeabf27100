"""``python -m retrace serve`` (what the extension starts) goes straight to the server: the
command line's modules (argument parser, its commands and what they import) are not imported
before the server answers. Checked on a real process that serves an empty stdin and exits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("args", [["serve"], []])
def test_the_server_starts_without_the_command_line(tmp_path: Path, args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "retrace", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=True,
    )
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "import time:" in line}
    assert "retrace.lsp.main" in imported and "retrace.lsp.transport" in imported
    assert not {m for m in imported if m == "retrace.cli" or m.startswith("retrace.cli.")}
