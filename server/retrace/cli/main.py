"""Entry point of the ``retrace`` console script: argument parsing and error policy.

Contract: ``main(argv) -> exit code``. 0 success (also: nothing to restore, any dry run), 1 an
expected error (one line ``retrace: error: <message>`` on stderr, nothing changed) or a failed
restore, 2 a usage error or a remote error (``retrace remote``), 3 a restore refused because of
conflicts, 4 ``verify`` found damage, 130 interrupted.
Expected errors never print a traceback; anything else is a bug and does.

Start-up is part of every call (other agents run a command after each tool call): this module
imports only the parser (``parser.py``, argparse alone; not even that for ``retrace hook``, which
:mod:`retrace.cli.hook` parses itself); the chosen command's module is imported
when it runs, and the error classes only when an error is raised.
"""

from __future__ import annotations

import io
import sys

from retrace import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at start-up; only the type checker needs it
    from collections.abc import Sequence


def _error(message: str) -> int:
    from retrace.cli.format import say, terminal_text

    first_line = message.strip().splitlines()[0] if message.strip() else "unknown error"
    # Errors name paths and values from stored data: nothing in them may drive the terminal.
    say(f"retrace: error: {terminal_text(first_line)}", err=True)
    return 1


def _expected_error_exit(exc: Exception) -> int | None:
    """The exit code of an expected error (after printing its one line), ``None`` for a bug."""
    from retrace.cli.errors import REMOTE_ERROR_EXIT, CliError, explain
    from retrace.engine.errors import RetraceError
    from retrace.sync.errors import RemoteError

    if isinstance(exc, CliError):
        return _error(str(exc))
    if isinstance(exc, RemoteError):
        _error(str(exc))
        return REMOTE_ERROR_EXIT
    if isinstance(exc, RetraceError):
        return _error(explain(exc))
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        return _error(f"{exc.strerror or exc}{where}")
    return None


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        # Paths that are not valid in the terminal's encoding must not crash the output.
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["hook"]:
        from retrace.cli import hook  # another agent's hook: never an error exit, nothing on stdout

        return hook.main(words[1:])
    from retrace.cli.parser import build_parser  # after the hook route: a hook never builds it

    args = build_parser(__version__).parse_args(words)
    if getattr(args, "workspace", ".") is None and args.command != "hook":
        from retrace.cli.folders import default_workspace  # VS Code's terminal: its folder

        args.workspace = default_workspace()
    try:
        code: int = args.handler(args)
    except KeyboardInterrupt:
        print("retrace: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        expected = _expected_error_exit(exc)
        if expected is None:
            raise
        return expected
    return code


if __name__ == "__main__":
    sys.exit(main())
