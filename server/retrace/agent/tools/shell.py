"""Which shell runs ``run_command`` on this platform, and how its process tree is started and killed.

* POSIX (Linux, macOS): ``bash -lc`` (a login shell: the user's PATH), or ``/bin/sh -c`` when
  bash is missing; the command gets its own session/process group and the group is killed with
  ``SIGKILL``.
* Windows: ``%COMSPEC%`` (cmd.exe), or PowerShell (``pwsh``, else Windows PowerShell) when
  ``RETRACE_SHELL=powershell``; the command gets a new process group and the tree is killed with
  ``taskkill /F /T``. cmd.exe is given a command LINE (``%COMSPEC% /c "<command>"``, Python's own
  ``shell=True`` form), not an argument vector: an argument vector is re-quoted by the C runtime
  rules (``\\"``), which cmd.exe does not understand, so a command containing quotes would change.

With bash or sh a session's ``cd`` and exported variables carry over between calls
(:mod:`retrace.agent.terminal`); cmd.exe and PowerShell commands always start at the workspace
root with the base environment (no state is kept there).

``RETRACE_SHELL`` (``bash``, ``sh``, ``cmd``, ``powershell``/``pwsh``) overrides the choice where
that shell exists on the platform. :func:`describe` is what the model is told, so it writes
commands for the shell that will run them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

ShellKind = Literal["bash", "sh", "cmd", "powershell"]

CREATE_NEW_PROCESS_GROUP = 0x00000200
"""``subprocess.CREATE_NEW_PROCESS_GROUP`` (defined by Python on Windows only)."""
_TASKKILL_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Shell:
    kind: ShellKind
    program: str
    """The executable: ``bash`` (found on PATH), ``/bin/sh``, ``%COMSPEC%``, ``pwsh``..."""
    label: str
    """How the model is told which shell it writes for."""

    def argv(self, command: str) -> list[str] | None:
        """The argument vector that runs ``command``; ``None`` for cmd.exe, which is given a
        command line (see the module documentation)."""
        if self.kind == "bash":
            return [self.program, "-lc", command]
        if self.kind == "sh":
            return [self.program, "-c", command]
        if self.kind == "powershell":
            return [self.program, "-NoProfile", "-NonInteractive", "-Command", command]
        return None


def choose_shell(
    *,
    platform: str | None = None,
    env: Mapping[str, str] | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> Shell:
    """The shell for ``platform`` (default: this one) given the environment ``env``."""
    platform = sys.platform if platform is None else platform
    env = os.environ if env is None else env
    wanted = env.get("RETRACE_SHELL", "").strip().lower()
    if platform == "win32":
        if wanted in ("powershell", "pwsh"):
            program = which("pwsh") or which("powershell") or "powershell.exe"
            return Shell("powershell", program, "PowerShell")
        comspec = env.get("COMSPEC") or env.get("ComSpec") or "cmd.exe"
        return Shell("cmd", comspec, "Windows cmd.exe")
    if wanted != "sh" and which("bash") is not None:
        return Shell("bash", "bash", "bash")
    return Shell("sh", "/bin/sh", "POSIX sh (/bin/sh)")


def describe(shell: Shell) -> str:
    """The ``run_command`` tool description the model sees: it names the shell."""
    examples = {
        "bash": "tests, builds, git status",
        "sh": "tests, builds, git status; POSIX sh syntax only",
        "cmd": "tests, builds, git status; cmd.exe syntax: use 'dir', 'type', '&&'",
        "powershell": "tests, builds, git status; PowerShell syntax",
    }[shell.kind]
    where = (
        "in a persistent shell session: the working directory (starts at the workspace root) and "
        "exported variables carry over to the next call"
        if shell.kind in ("bash", "sh")
        else "in the workspace root"
    )
    return (
        f"Run a {shell.label} command {where} (e.g. {examples}). "
        "Output is capped; the exit code is reported. Killed after timeout_s seconds."
    )


def spawn_options(platform: str | None = None) -> dict[str, Any]:
    """``subprocess`` keyword arguments that put the command in a process group of its own, so
    :func:`kill_tree` can end it together with everything it started."""
    platform = sys.platform if platform is None else platform
    if platform == "win32":
        return {"creationflags": CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


def kill_tree(pid: int, *, platform: str | None = None) -> None:
    """Kill the process group (POSIX) or process tree (Windows) led by ``pid``; quiet when it
    is already gone. Windows: ``taskkill /F /T`` finds the tree from the live parent links, so
    children of a shell that already exited are not reached there."""
    platform = sys.platform if platform is None else platform
    if platform == "win32":
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                ["taskkill", "/F", "/T", "/PID", str(pid)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=_TASKKILL_TIMEOUT_S,
                check=False,
            )
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
