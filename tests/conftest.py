"""Every Python test runs with a HOME of its own (an empty folder made for the run).

The agent's shell commands run in a login shell (``bash -lc``), which reads the machine's
profile: a developer's ``~/.bashrc`` can do anything (``pyenv init`` rehashes its shims under a
lock file, and a command our tests kill on purpose mid-profile leaves that lock behind, after which
every login shell on the machine waits 60 s). Tests must not depend on, or damage, the profile of
whoever runs them: with an empty HOME a login shell reads only the system profile.
"""

from __future__ import annotations

import os
import shutil
import tempfile

_HOME = tempfile.mkdtemp(prefix="retrace-test-home-")


def pytest_configure() -> None:
    os.environ["HOME"] = _HOME


def pytest_unconfigure() -> None:
    shutil.rmtree(_HOME, ignore_errors=True)
