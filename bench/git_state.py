"""What recording the git state costs per checkpoint, side by side with ``git status``.

Usage: .venv/bin/python -m bench.git_state [calls]
A repository with packed refs in a temporary folder; the cached reader (as the engine holds it)
read ``calls`` times; ``git status --porcelain`` (what this design avoids per checkpoint) 50 times.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from retrace.engine.gitstate import GitStateReader


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "b",
            "GIT_AUTHOR_EMAIL": "b@b",
            "GIT_COMMITTER_NAME": "b",
            "GIT_COMMITTER_EMAIL": "b@b",
        }
        for args in (
            ["init", "-q", "-b", "main"],
            ["commit", "-q", "--allow-empty", "-m", "x"],
            ["pack-refs", "--all"],
        ):
            subprocess.run(["git", *args], cwd=tmp, env=env, check=True)
        reader = GitStateReader(Path(tmp))
        reader.read()
        t = time.perf_counter()
        for _ in range(calls):
            reader.read()
        ours = (time.perf_counter() - t) / calls
        t = time.perf_counter()
        for _ in range(50):
            subprocess.run(["git", "status", "--porcelain"], cwd=tmp, capture_output=True, check=True)
        status = (time.perf_counter() - t) / 50
    load = os.getloadavg()[0]
    print(
        f"git state read: {ours * 1e6:.1f} us/checkpoint; git status: {status * 1e3:.2f} ms; "
        f"ratio {status / ours:.0f}x; load average {load:.1f}"
    )


if __name__ == "__main__":
    main()
