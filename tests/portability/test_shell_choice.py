"""The shell tool uses the platform's shell and kills the whole process tree the platform's way.

Pure choices (which shell, which arguments, which spawn options, which kill) are checked for
Linux, macOS and Windows by passing the platform in; the POSIX choices are then exercised for
real (``/bin/sh`` when bash is missing, the group killed on timeout), and on simulated Windows the
tool description the model sees names cmd.exe.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.portability.simulated_windows import PRELUDE
from tests.process_support import dies

from retrace.agent.tools import ToolContext, execute
from retrace.agent.tools import run_command as run_command_module
from retrace.agent.tools import shell as shell_module
from retrace.agent.tools.shell import Shell, choose_shell, describe, kill_tree, spawn_options
from retrace.engine.config import EngineConfig

pytestmark = pytest.mark.slow


def _which(*present: str) -> object:
    def which(name: str) -> str | None:
        return f"/usr/bin/{name}" if name in present else None

    return which


@pytest.mark.parametrize("platform", ["linux", "darwin"])
def test_posix_uses_bash_login_shell_when_present(platform: str) -> None:
    shell = choose_shell(platform=platform, env={}, which=_which("bash"))
    assert shell.kind == "bash"
    assert shell.argv("make test") == ["bash", "-lc", "make test"]
    assert "bash" in describe(shell)


@pytest.mark.parametrize("platform", ["linux", "darwin"])
def test_posix_without_bash_falls_back_to_bin_sh(platform: str) -> None:
    shell = choose_shell(platform=platform, env={}, which=_which())
    assert shell.kind == "sh"
    assert shell.argv("ls") == ["/bin/sh", "-c", "ls"]
    assert "sh" in describe(shell) and "bash" not in describe(shell)


def test_windows_uses_comspec() -> None:
    comspec = r"C:\Windows\System32\cmd.exe"
    shell = choose_shell(platform="win32", env={"COMSPEC": comspec}, which=_which("bash"))
    assert shell.kind == "cmd" and shell.program == comspec
    assert shell.argv("dir") is None  # a command line for %COMSPEC% /c, not an argument vector
    assert "cmd.exe" in describe(shell)


def test_windows_without_comspec_uses_cmd_exe() -> None:
    shell = choose_shell(platform="win32", env={}, which=_which())
    assert shell.kind == "cmd" and shell.program == "cmd.exe"


@pytest.mark.parametrize(
    ("present", "program"), [(("pwsh", "powershell"), "pwsh"), (("powershell",), "powershell")]
)
def test_windows_powershell_when_configured(present: tuple[str, ...], program: str) -> None:
    shell = choose_shell(platform="win32", env={"RETRACE_SHELL": "powershell"}, which=_which(*present))
    assert shell.kind == "powershell"
    argv = shell.argv("Get-ChildItem")
    assert argv is not None and argv[0] == f"/usr/bin/{program}"
    assert argv[1:] == ["-NoProfile", "-NonInteractive", "-Command", "Get-ChildItem"]
    assert "PowerShell" in describe(shell)


def test_configured_sh_on_posix() -> None:
    shell = choose_shell(platform="linux", env={"RETRACE_SHELL": "sh"}, which=_which("bash"))
    assert shell.kind == "sh"


def test_spawn_options_per_platform() -> None:
    assert spawn_options("linux") == {"start_new_session": True}
    assert spawn_options("darwin") == {"start_new_session": True}
    win = spawn_options("win32")
    assert win == {"creationflags": 0x00000200}  # CREATE_NEW_PROCESS_GROUP


def test_kill_tree_on_windows_runs_taskkill_for_the_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def fake_run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 0)

    def no_killpg(*args: object) -> None:
        raise AssertionError("killpg must not be used on Windows")

    monkeypatch.setattr(shell_module.subprocess, "run", fake_run)
    monkeypatch.setattr(shell_module.os, "killpg", no_killpg, raising=False)
    kill_tree(4242, platform="win32")
    assert calls == [["taskkill", "/F", "/T", "/PID", "4242"]]


def test_kill_tree_on_windows_survives_a_missing_taskkill(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(argv: list[str], **kwargs: object) -> None:
        raise FileNotFoundError(2, "no taskkill", argv[0])

    monkeypatch.setattr(shell_module.subprocess, "run", missing)
    kill_tree(4242, platform="win32")  # best effort: the caller still kills the shell itself


def test_kill_tree_on_posix_kills_the_group(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, int]] = []
    monkeypatch.setattr(shell_module.os, "killpg", lambda pid, sig: calls.append((pid, sig)))
    kill_tree(4242, platform="linux")
    assert calls == [(4242, signal.SIGKILL)]


def test_kill_tree_of_a_gone_group_is_quiet() -> None:
    proc = subprocess.Popen(["true"], start_new_session=True)
    proc.wait()
    kill_tree(proc.pid, platform=sys.platform)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ToolContext(workspace=ws, engine_config=EngineConfig(), output_cap_bytes=2000)


async def test_without_bash_the_tool_really_runs_bin_sh(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        run_command_module, "SHELL", choose_shell(platform=sys.platform, env={}, which=_which())
    )
    result = await execute(
        "run_command", {"command": 'echo "$0"; [ -n "$BASH_VERSION" ] && echo BASH; true'}, ctx
    )
    assert not result.is_error, result.output
    lines = result.output.splitlines()
    assert lines[0] in ("/bin/sh", "sh") and "BASH" not in lines


async def test_sh_fallback_still_kills_the_group_on_timeout(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_command_module, "SHELL", Shell("sh", "/bin/sh", "POSIX sh (/bin/sh)"))
    result = await execute(
        "run_command", {"command": "sleep 60 & echo $! > bg.pid; sleep 60", "timeout_s": 1}, ctx
    )
    assert result.is_error and "timed out" in result.output
    pid = int((ctx.workspace / "bg.pid").read_text())
    assert await dies(pid)


def test_the_model_is_told_the_shell_on_simulated_windows() -> None:
    body = textwrap.dedent(
        """
        import os
        os.environ["COMSPEC"] = r"C:\\Windows\\System32\\cmd.exe"
        from retrace.agent.tools import TOOLS
        print(TOOLS["run_command"].description)
        """
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", PRELUDE + body], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    assert "cmd.exe" in out.stdout and "bash" not in out.stdout
