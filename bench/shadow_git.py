"""The shadow-git baseline, done the way Cline and Roo Code do it.

A separate git directory outside the workspace (``GIT_DIR``) whose ``core.worktree`` is the
workspace; the ignore set written to ``info/exclude`` (the workspace's own ``.gitignore`` is
honoured by git itself); after every tool call ``git add -A`` then ``git commit --allow-empty``
(one subprocess each, as their git wrappers do); restore = ``git reset --hard <sha>`` then
``git clean -fd``. ``gc.autoDetach`` is off so an automatic ``git gc`` runs inside the call that
triggers it instead of racing the measurements in the background; everything else is git's
defaults. Warm open = one more ``add -A`` + commit with nothing changed (what the next
checkpoint after a restart costs).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from bench.trace import Step
from retrace.engine.config import BUILTIN_EXCLUDES, TOOL_FOLDER_PATTERNS

_COMMIT_LINE = re.compile(r"^\[[^\]]*?([0-9a-f]{7,40})\]", re.MULTILINE)


class ShadowGit:
    name = "shadow-git"

    def __init__(self, workspace: Path, store: Path) -> None:
        self.workspace = workspace
        self.git_dir = store / "shadow.git"
        self.env = {
            **os.environ,
            "GIT_DIR": str(self.git_dir),
            "GIT_WORK_TREE": str(workspace),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "LC_ALL": "C",
        }

    def _git(self, *args: str) -> str:
        proc = subprocess.run(
            ["git", *args], cwd=self.workspace, env=self.env, capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
        return proc.stdout

    def _commit(self, message: str) -> str:
        self._git("add", "-A")
        out = self._git("commit", "--allow-empty", "--no-verify", "-m", message)
        m = _COMMIT_LINE.search(out)
        if m is None:
            raise RuntimeError(f"cannot find the commit id in git's output: {out[:200]!r}")
        return m.group(1)

    def open(self) -> str:
        if not self.git_dir.exists():
            self._git("init", "-q")
            for key, value in (
                ("core.worktree", str(self.workspace)),
                ("user.name", "Retrace Bench"),
                ("user.email", "bench@retrace.invalid"),
                ("commit.gpgSign", "false"),
                ("gc.autoDetach", "false"),
            ):
                self._git("config", key, value)
            exclude = self.git_dir / "info" / "exclude"
            exclude.parent.mkdir(parents=True, exist_ok=True)
            exclude.write_text("\n".join((*BUILTIN_EXCLUDES, *TOOL_FOLDER_PATTERNS)) + "\n", encoding="utf-8")
            return self._commit("baseline")
        return self._commit("reopen")

    def checkpoint(self, step: Step) -> str:
        return self._commit(f"{step.tool}: {step.label}")

    def restore(self, cp_id: str) -> None:
        self._git("reset", "--hard", "-q", cp_id)
        self._git("clean", "-fdq")

    def close(self) -> None:
        pass

    def storage_path(self) -> Path:
        return self.git_dir
