"""A Python that looks like Windows to the code it imports, for import tests on Linux.

:data:`PRELUDE` is source for ``python -I -c``: it blocks the POSIX-only modules (an import hook
raising ``ModuleNotFoundError`` as Windows would), removes the POSIX-only functions, flags and
signals from ``os`` and ``signal``, and sets ``sys.platform``. The standard library and the
third-party dependencies are imported first, with the real platform: they choose their own
implementation at import time, and the point is whether *Retrace* imports on Windows. ``os.name``
stays ``posix`` because ``pathlib`` on Linux cannot make Windows paths; code that asks
``os.name`` is covered by the unit tests that monkeypatch it.
"""

from __future__ import annotations

BLOCKED_MODULES = ("fcntl", "termios", "resource", "pwd", "grp", "pty", "tty")

PRELUDE = r"""
import sys, os, signal, importlib.abc
# Dependencies and platform-sensitive standard modules, imported with the real platform.
for _name in ("asyncio", "subprocess", "pathlib", "shutil", "tempfile", "ctypes", "ctypes.util",
              "mmap", "select", "selectors", "socket", "threading", "multiprocessing",
              "logging", "json", "argparse", "importlib.resources", "platformdirs",
              "portalocker", "pydantic", "pygls", "lsprotocol", "anthropic", "httpx",
              "diff_match_patch", "pathspec", "zstandard"):
    try:
        __import__(_name)
    except ImportError:
        pass

BLOCKED = set(@BLOCKED@)

class _Windows(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (simulated Windows)", name=name)
        return None

for _m in list(sys.modules):
    if _m.partition(".")[0] in BLOCKED:
        del sys.modules[_m]
sys.meta_path.insert(0, _Windows())

for _attr in ("O_NOFOLLOW", "O_DIRECTORY", "O_CLOEXEC", "O_NONBLOCK", "O_NOCTTY", "O_SYNC",
              "killpg", "getpgid", "getpgrp", "setsid", "setpgid", "getuid", "geteuid", "getgid",
              "getegid", "setuid", "fork", "forkpty", "pread", "pwrite", "fchmod", "fchown",
              "lchown", "chown", "mkfifo", "sync", "fsync_dir", "getloadavg", "uname",
              "sched_getaffinity", "WNOHANG", "openpty", "nice", "statvfs", "fstatvfs"):
    if hasattr(os, _attr):
        delattr(os, _attr)
for _attr in ("SIGKILL", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGCHLD", "SIGPIPE", "SIGUSR1",
              "SIGUSR2", "SIGSTOP", "SIGCONT", "SIGTSTP", "pthread_kill", "pthread_sigmask",
              "setitimer", "alarm", "siginterrupt", "killpg"):
    if hasattr(signal, _attr):
        delattr(signal, _attr)
if not hasattr(signal, "CTRL_BREAK_EVENT"):
    signal.CTRL_BREAK_EVENT = 1
    signal.CTRL_C_EVENT = 0
os.supports_dir_fd = set()
os.supports_follow_symlinks = {os.stat}
os.supports_fd = {os.stat}
sys.platform = "win32"
""".replace("@BLOCKED@", repr(BLOCKED_MODULES))
