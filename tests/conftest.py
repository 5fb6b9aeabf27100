"""Every Python test runs with a HOME of its own (an empty folder made for the run).

The agent's shell commands run in a login shell (``bash -lc``), which reads the machine's
profile: a developer's ``~/.bashrc`` can do anything (``pyenv init`` rehashes its shims under a
lock file, and a command our tests kill on purpose mid-profile leaves that lock behind, after which
every login shell on the machine waits 60 s). Tests must not depend on, or damage, the profile of
whoever runs them: with an empty HOME a login shell reads only the system profile.

``RETRACE_NO_HOLDER=1`` too: a cold ``retrace checkpoint`` starts no background holder (its own
tests, ``tests/relay/test_holder.py``, unset it).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_HOME = tempfile.mkdtemp(prefix="retrace-test-home-")


def pytest_configure() -> None:
    os.environ["HOME"] = _HOME
    # No headless store holder outlives a test's command (retrace.relay.holder): a command-line
    # test gets a cold process every time. The holder's own tests turn it back on.
    os.environ["RETRACE_NO_HOLDER"] = "1"


def pytest_unconfigure() -> None:
    shutil.rmtree(_HOME, ignore_errors=True)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store path of the test's own (not created: the engine or the CLI makes it). A test
    module or folder needing another (an existing folder, a path with a space) defines its own."""
    return tmp_path / "store"


# ---------------------------------------------------------------- measured test durations
# tests/timings.json holds each test's measured duration (setup + call + teardown, seconds) from
# a full run (regenerate: `RETRACE_TEST_TIMINGS=record bash scripts/test.sh`, or any pytest run with
# that variable for the tests it runs). It serves two purposes:
#   * the fast lane: a test measured at SLOW_S seconds or more is marked `slow` here as if it
#     carried the marker (the fast lane, `-m "not slow"`, leaves it out; the full run keeps it);
#   * scheduling: test files run slowest first, so with `--dist loadfile --no-loadscope-reorder`
#     the long files start at once and the short ones fill the end instead of a long file
#     starting last and running alone.
# A test missing from the file (new, renamed) stays in the fast lane and is scheduled with the
# files of unknown duration, first (unknown may be long). Nothing is ever dropped or skipped here.
TIMINGS = Path(__file__).resolve().parent / "timings.json"
SLOW_S = 1.0
"""A test measured at this many seconds or more (on the recorded run) is left out of the fast lane."""


def _load_timings() -> dict[str, float]:
    try:
        data = json.loads(TIMINGS.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    tests = data.get("tests") if isinstance(data, dict) else None
    return {str(k): float(v) for k, v in tests.items()} if isinstance(tests, dict) else {}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    timings = _load_timings()
    if not timings:
        return
    per_file: dict[str, float] = {}
    for item in items:
        seconds = timings.get(item.nodeid)
        if seconds is not None and seconds >= SLOW_S and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
        path = item.nodeid.split("::", 1)[0]
        per_file[path] = per_file.get(path, 0.0) + (seconds if seconds is not None else 0.0)
    known = {nodeid.split("::", 1)[0] for nodeid in timings}
    unknown_first = max(per_file.values(), default=0.0) + 1.0

    # A stable sort: within a file the tests keep their order (fixtures, module state).
    def file_seconds(item: pytest.Item) -> float:
        path = item.nodeid.split("::", 1)[0]
        return per_file[path] if path in known else unknown_first

    items.sort(key=file_seconds, reverse=True)


_RECORDED: dict[str, float] = {}
_LOAD_AT_START = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """With RETRACE_TEST_TIMINGS=record, sum each test's phases (under xdist the controller sees
    every worker's reports)."""
    if os.environ.get("RETRACE_TEST_TIMINGS") == "record":
        _RECORDED[report.nodeid] = _RECORDED.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Merge the recorded durations into tests/timings.json (a partial run updates its tests only),
    with the conditions they were measured in."""
    if hasattr(session.config, "workerinput") or not _RECORDED:
        return
    try:
        old = json.loads(TIMINGS.read_text("utf-8"))
    except (OSError, ValueError):
        old = {}
    tests = {**(old.get("tests") or {}), **{k: round(v, 2) for k, v in _RECORDED.items()}}
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    measured = {
        "cpus": os.cpu_count(),
        "load1_at_start": round(_LOAD_AT_START[0], 2),
        "load1_at_end": round(load[0], 2),
        "tests_recorded": len(_RECORDED),
        "workers": getattr(session.config.option, "numprocesses", None),
    }
    data = {"measured": measured, "tests": dict(sorted(tests.items()))}
    TIMINGS.write_text(json.dumps(data, indent=0, ensure_ascii=False) + "\n", "utf-8")


@pytest.fixture
def relay_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short private relay directory for this test (a socket path must stay within
    ``sun_path`` whatever pytest's temporary paths are), set for this process and every child
    through ``RETRACE_RELAY_DIR``; no ``RETRACE_STORE`` leaks in from the caller."""
    parent = Path(tempfile.mkdtemp(prefix="rr", dir="/tmp"))  # short on purpose (sun_path)
    path = parent / "relay"
    monkeypatch.setenv("RETRACE_RELAY_DIR", str(path))
    monkeypatch.delenv("RETRACE_STORE", raising=False)
    yield path
    shutil.rmtree(parent, ignore_errors=True)
