"""The real ``retrace`` CLI as a subprocess on a temporary workspace + store, shared by the CLI
tests and the data-safety tests."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

RETRACE = Path(sys.executable).with_name("retrace")


def tree(root: Path) -> dict[str, str]:
    """path → sha256 of every file under ``root`` (directories implied)."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


class Cli:
    def __init__(self, workspace: Path, store: Path) -> None:
        self.workspace = workspace
        self.store = store
        self.env = {k: v for k, v in os.environ.items() if k != "RETRACE_STORE"}

    def __call__(
        self, *args: str, code: int | None = 0, where: bool = True
    ) -> subprocess.CompletedProcess[str]:
        cmd = [str(RETRACE), *args]
        if where:
            cmd += ["--workspace", str(self.workspace), "--store", str(self.store)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=self.env, timeout=120, check=False)
        assert "Traceback" not in proc.stderr, proc.stderr
        if code is not None:
            assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
        return proc

    def json(self, *args: str, code: int = 0) -> Any:
        return json.loads(self(*args, "--json", code=code).stdout)
