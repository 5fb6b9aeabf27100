"""The measured-durations file (tests/timings.json) drives the fast lane and the file order.

Each test runs a real pytest in a scratch project whose conftest is the suite's own
(tests/conftest.py, copied), with a timings file written for the case, and reads what pytest
selected and in which order.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parent / "conftest.py"
QUIET_PYTEST = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
"""The scratch pytest loads no installed plugin (the suite's conftest needs none): their imports
cost ~2 CPU-seconds per run, most of what these tests spent."""


def _project(tmp_path: Path, timings: dict[str, float] | None) -> Path:
    root = tmp_path / "proj"
    tests = root / "tests"
    tests.mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n    serial: serial\n", "utf-8")
    shutil.copy(CONFTEST, tests / "conftest.py")
    (tests / "test_a.py").write_text("def test_a1():\n    pass\n\ndef test_a2():\n    pass\n", "utf-8")
    (tests / "test_b.py").write_text(
        "import pytest\n\n@pytest.mark.slow\ndef test_b1():\n    pass\n\ndef test_b2():\n    pass\n", "utf-8"
    )
    (tests / "test_c.py").write_text("def test_c1():\n    pass\n", "utf-8")
    if timings is not None:
        (tests / "timings.json").write_text(json.dumps({"tests": timings}), "utf-8")
    return root


def _collected(root: Path, *args: str, env: dict[str, str] | None = None) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, **QUIET_PYTEST, **(env or {})},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_a_test_measured_slow_leaves_the_fast_lane_and_the_full_run_keeps_it(tmp_path: Path) -> None:
    root = _project(tmp_path, {"tests/test_a.py::test_a2": 3.0, "tests/test_a.py::test_a1": 0.2})
    fast = _collected(root, "-m", "not slow")
    assert "tests/test_a.py::test_a2" not in fast
    assert "tests/test_a.py::test_a1" in fast
    assert "tests/test_b.py::test_b1" not in fast  # the explicit marker still counts
    assert len(_collected(root)) == 5  # the full run drops nothing


def test_files_run_slowest_first_and_unknown_files_lead(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {"tests/test_a.py::test_a1": 0.1, "tests/test_a.py::test_a2": 0.1, "tests/test_b.py::test_b1": 5.0},
    )
    order = _collected(root)
    files = [nodeid.split("::")[0] for nodeid in order]
    # test_c.py has no measurement: first (it may be long); then b (5 s); then a (0.2 s).
    assert files == [
        "tests/test_c.py",
        "tests/test_b.py",
        "tests/test_b.py",
        "tests/test_a.py",
        "tests/test_a.py",
    ]
    assert order[1:3] == ["tests/test_b.py::test_b1", "tests/test_b.py::test_b2"]  # order kept within a file
    assert order[3:] == ["tests/test_a.py::test_a1", "tests/test_a.py::test_a2"]


@pytest.mark.parametrize("content", [None, "not json", '{"tests": 3}', "[]"])
def test_a_missing_or_damaged_timings_file_changes_nothing(tmp_path: Path, content: str | None) -> None:
    root = _project(tmp_path, None)
    if content is not None:
        (root / "tests" / "timings.json").write_text(content, "utf-8")
    assert _collected(root, "-m", "not slow") == [
        "tests/test_a.py::test_a1",
        "tests/test_a.py::test_a2",
        "tests/test_b.py::test_b2",
        "tests/test_c.py::test_c1",
    ]


def test_recording_merges_into_the_timings_file(tmp_path: Path) -> None:
    root = _project(tmp_path, {"tests/test_c.py::test_c1": 9.0, "tests/gone.py::test_x": 1.5})
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_a.py"],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, **QUIET_PYTEST, "RETRACE_TEST_TIMINGS": "record"},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((root / "tests" / "timings.json").read_text("utf-8"))
    assert set(data["tests"]) == {
        "tests/test_a.py::test_a1",
        "tests/test_a.py::test_a2",
        "tests/test_c.py::test_c1",
        "tests/gone.py::test_x",
    }
    assert data["tests"]["tests/test_c.py::test_c1"] == 9.0  # not run here: kept
    assert 0 <= data["tests"]["tests/test_a.py::test_a1"] < 9.0
    assert data["measured"]["tests_recorded"] == 2
