"""Smoke test of ``bench/multiroot.py`` at a tiny size: correctness only, never speed (the figures
come from ``python -m bench.multiroot``, bench/RESULTS_multiroot.md)."""

from __future__ import annotations

from pathlib import Path

from bench.multiroot import make_tree, measure, render


def test_a_tiny_folder_is_measured_idle_and_changed(tmp_path: Path) -> None:
    make_tree(tmp_path / "api", 20)
    figures = measure(tmp_path / "api", tmp_path / "store", rounds=2)
    assert figures.files == 20 and len(figures.idle_ms) == 2 and len(figures.changed_ms) == 2
    assert render([figures], "test").splitlines()[-1].startswith("| 20 |")
