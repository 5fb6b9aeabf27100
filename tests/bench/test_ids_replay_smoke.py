"""``bench.ids_replay`` at a tiny size (correctness only, never speed; the figures come from the
real command, see bench/README.md)."""

from __future__ import annotations

import sys

import pytest

from bench import ids_replay


def test_ids_replay_runs_and_reports(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["ids_replay", "--files", "5", "--checkpoints", "12", "--rounds", "1"])
    ids_replay.main()
    out = capsys.readouterr().out
    assert "checkpoints=12 files=5" in out and "open(writer)" in out
