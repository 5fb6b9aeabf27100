"""The model credentials of a process that runs tool commands, held where no tool can read them.

Tool commands run as children of the server, with the user's rights. Anything in the server's
environment is theirs to read: their own inherited environment, and ``/proc/<server>/environ``,
which shows the environment the server was EXECUTED with (changing ``os.environ`` later does not
change it). So the key never stays in an environment:

* the preferred hand-off is an inherited pipe: ``RETRACE_API_KEY_FD=<fd>`` (what the VS Code
  extension does; each secret of :data:`SECRETS` has its own, e.g. ``RETRACE_OPENAI_API_KEY_FD``
  for an OpenAI-compatible endpoint's key). :func:`secure_process_start` reads the key once,
  closes the descriptor and removes the variable;
* a key that arrives in the environment (``ANTHROPIC_API_KEY``, e.g. from a shell) makes the
  process re-execute itself without it, handing the key to the new image through such a pipe,
  before any tool can run (POSIX; elsewhere it is only removed from ``os.environ``);
* on Linux the process then marks itself non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``): processes
  of the same user can no longer read its ``/proc/<pid>/mem`` or ``environ``.

:func:`get` returns a held credential (falling back to the environment for in-process use, e.g.
tests and the library API, where nothing was handed off).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import stat
import sys

from retrace import oscompat

log = logging.getLogger(__name__)

SECRETS: dict[str, str] = {
    "ANTHROPIC_API_KEY": "RETRACE_API_KEY_FD",
    "ANTHROPIC_AUTH_TOKEN": "RETRACE_AUTH_TOKEN_FD",
    "AWS_BEARER_TOKEN_BEDROCK": "RETRACE_BEDROCK_API_KEY_FD",
    "OPENAI_API_KEY": "RETRACE_OPENAI_API_KEY_FD",
}
"""Secret environment variable → the variable naming the descriptor it is handed over on: the
Anthropic key or token, a Bedrock API key and an OpenAI-compatible endpoint's key (the AWS
chain's own sources — ``~/.aws``, the
user's ``AWS_*`` variables — are the user's, read by the SDK where they are)."""

REMOTE_SECRETS: dict[str, str] = {
    "AWS_ACCESS_KEY_ID": "RETRACE_AWS_ACCESS_KEY_ID_FD",
    "AWS_SECRET_ACCESS_KEY": "RETRACE_AWS_SECRET_ACCESS_KEY_FD",
    "AWS_SESSION_TOKEN": "RETRACE_AWS_SESSION_TOKEN_FD",
    "RETRACE_REMOTE_KEY": "RETRACE_REMOTE_KEY_FD",
}
"""The remote's credentials and encryption key as the extension hands them over (from its
SecretStorage), on pipes like the model key. Only the hand-off is taken: ``AWS_*`` variables the
user set in the server's own environment stay there (tool commands saw them before a remote
existed, and an ``aws`` command the agent runs may need them)."""

REMOTE_KEY = "RETRACE_REMOTE_KEY"
"""Retrace's own variable for the remote's encryption key: hidden from tool commands even when
it comes from the environment."""
HANDOFF_VARS = frozenset(SECRETS.values()) | frozenset(REMOTE_SECRETS.values())
MAX_SECRET_BYTES = 16 * 1024
"""A pipe holds at least 64 KiB, so writing the secret before exec never blocks."""
_PR_SET_DUMPABLE = 4

_held: dict[str, str] = {}


def get(name: str) -> str | None:
    """The credential ``name`` (e.g. ``ANTHROPIC_API_KEY``): handed off at start, else the
    environment's (a process that never called :func:`secure_process_start`)."""
    return _held.get(name) or os.environ.get(name) or None


def child_env() -> dict[str, str]:
    """The environment for a tool command: the server's, without any credential or hand-off."""
    hidden = set(SECRETS) | HANDOFF_VARS | {REMOTE_KEY}
    return {name: value for name, value in os.environ.items() if name not in hidden}


def read_handoff(fd: int) -> str:
    """Read a secret from an inherited pipe to its end, then close it. A descriptor that is not
    a pipe (or socket pair, as Node.js creates) is refused and left open: it is not ours."""
    mode = os.fstat(fd).st_mode
    if fd < 3 or not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        raise ValueError(f"descriptor {fd} is not a hand-off pipe")  # a stale number: leave it be
    chunks: list[bytes] = []
    try:
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
            if sum(map(len, chunks)) > MAX_SECRET_BYTES:
                raise ValueError("the handed-off secret is too long")
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8").strip()


def remote_env() -> dict[str, str]:
    """The environment remote sync reads its credentials and key from: the process's, with the
    handed-off remote secrets (which win)."""
    env = dict(os.environ)
    env.update({name: _held[name] for name in REMOTE_SECRETS if _held.get(name)})
    return env


def _take_handoffs() -> None:
    for name, fd_var in {**SECRETS, **REMOTE_SECRETS}.items():
        raw = os.environ.pop(fd_var, None)
        if raw is None:
            continue
        try:
            value = read_handoff(int(raw))
        except (OSError, ValueError) as exc:
            log.error("could not read %s from descriptor %s: %s", name, raw, exc)
            continue
        if value:
            _held[name] = value


def _reexec_without(found: dict[str, str]) -> None:
    """Replace this process image with one whose environment holds no secret (never returns
    unless exec fails). Each secret travels in a pipe the new image reads at start."""
    env = {k: v for k, v in os.environ.items() if k not in SECRETS}
    for name, value in found.items():
        data = value.encode("utf-8")
        if len(data) > MAX_SECRET_BYTES:
            raise ValueError(f"{name} is too long to hand over")
        read_end, write_end = os.pipe()
        os.write(write_end, data)
        os.close(write_end)
        os.set_inheritable(read_end, True)
        env[SECRETS[name]] = str(read_end)
    argv = [sys.executable, *sys.orig_argv[1:]]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, argv, env)


def _deny_dumping() -> None:
    if not sys.platform.startswith("linux"):
        # Other platforms have no per-process switch for this; said once, so it is not silent.
        log.info("non-dumpable process (prctl) is Linux-only; not available on %s", sys.platform)
        return
    try:
        libc = oscompat.libc()
        if libc is None:
            raise OSError("the C library could not be opened")
        if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            log.warning("prctl(PR_SET_DUMPABLE, 0) failed: errno %d", ctypes.get_errno())
    except (OSError, AttributeError) as exc:
        log.warning("could not mark the process non-dumpable: %s", exc)


def secure_process_start(*, reexec: bool = True) -> None:
    """Call first in a process that will run tool commands, before any thread or child starts.

    Takes handed-off secrets, re-executes the process when a secret is still in the environment
    it was executed with (``reexec``; POSIX only), scrubs ``os.environ`` and denies dumping."""
    _take_handoffs()
    found = {name: value for name in SECRETS if (value := os.environ.get(name))}
    if found and reexec and os.name != "posix":
        log.info(
            "restart without the key in the environment needs exec (POSIX); removed from os.environ only"
        )
    if found and reexec and os.name == "posix":
        try:
            _reexec_without(found)
        except (OSError, ValueError) as exc:  # exec failed: keep running, at least scrubbed
            log.error("could not restart without the key in the environment: %s", exc)
    for name in SECRETS:
        value = os.environ.pop(name, None)
        if value:
            _held.setdefault(name, value)
    with contextlib.suppress(Exception):
        _deny_dumping()
