"""Every module of the server imports on (simulated) Windows, and the CLI answers ``--help``.

Runs a real isolated interpreter (``python -I``) with the POSIX-only modules unimportable and the
POSIX-only ``os``/``signal`` attributes removed (see :mod:`simulated_windows`), so an import-time
use of ``fcntl``, ``os.O_NOFOLLOW``, ``signal.SIGKILL``, ... anywhere in ``retrace`` fails here.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from tests.portability.simulated_windows import PRELUDE

pytestmark = pytest.mark.slow


_IMPORT_ALL = textwrap.dedent(
    """
    import importlib, pkgutil, traceback
    import retrace
    failed = []
    names = ["retrace"]
    for info in pkgutil.walk_packages(retrace.__path__, "retrace.", onerror=lambda n: failed.append(n)):
        if info.name.rpartition(".")[2] == "__main__":
            continue  # runs the program; imported below through runpy-free means
        names.append(info.name)
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException:
            failed.append(name + ":\\n" + traceback.format_exc(limit=3))
    print("IMPORTED", len(names) - len(failed), "OF", len(names))
    for f in failed:
        print("FAILED", f)
    raise SystemExit(1 if failed else 0)
    """
)

_CLI_HELP = textwrap.dedent(
    """
    import runpy, sys
    # ``python -m retrace --help`` and ``python -m retrace.offline --help``: the real entry points.
    for module in ("retrace", "retrace.offline"):
        sys.argv = [module, "--help"]
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            code = exc.code
        else:
            code = 0
        print("EXIT", module, code)
        if code:
            raise SystemExit(code)
    """
)


def _run(body: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-c", PRELUDE + body],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_prelude_really_hides_posix() -> None:
    """The simulation is not a no-op: importing fcntl and using os.killpg fail inside it."""
    probe = textwrap.dedent(
        """
        import os, signal, sys
        try:
            import fcntl
        except ModuleNotFoundError:
            print("no fcntl")
        print(hasattr(os, "killpg"), hasattr(os, "O_NOFOLLOW"), hasattr(signal, "SIGKILL"), sys.platform)
        """
    )
    out = _run(probe)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["no fcntl", "False False False win32"]


def test_every_retrace_module_imports_on_windows() -> None:
    out = _run(_IMPORT_ALL)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "IMPORTED" in out.stdout


def test_cli_help_runs_on_windows() -> None:
    out = _run(_CLI_HELP)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "usage: retrace" in out.stdout
    assert "EXIT retrace 0" in out.stdout and "EXIT retrace.offline 0" in out.stdout
