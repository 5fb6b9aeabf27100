"""Smoke test of ``python -m bench.relay`` at a tiny size: a real server holds the store and every
variant runs (correctness only, never speed; the figures come from the real command)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.relay import main

pytestmark = pytest.mark.slow


def test_the_relay_bench_forwards_through_a_real_server(tmp_path: Path) -> None:
    out = tmp_path / "relay.md"
    assert main(["--files=20", "--runs=1", f"--work={tmp_path / 'work'}", f"--out={out}"]) == 0
    text = out.read_text()
    assert "| retrace checkpoint --path F (forwarded) |" in text
    assert "| client call alone (in process) |" in text
    assert " 0 notifications" not in text  # the forwarded checkpoints reached the editor
