"""Entry point of the ``retrace`` console script: argument parsing and error policy.

Contract: ``main(argv) -> exit code``. 0 success (also: nothing to restore, any dry run), 1 an
expected error (one line ``retrace: error: <message>`` on stderr, nothing changed) or a failed
restore, 2 a usage error or a remote error (``retrace remote``), 3 a restore refused because of
conflicts, 4 ``verify`` found damage, 130 interrupted.
Expected errors never print a traceback; anything else is a bug and does.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, get_args

from retrace import __version__
from retrace.cli import commands, handoff, metrics, remote
from retrace.cli.format import say, terminal_text
from retrace.engine.errors import RetraceError
from retrace.engine.models import ConflictResolution
from retrace.engine.store.events import RestoreReason
from retrace.sync.errors import RemoteError

_RESOLUTIONS: tuple[ConflictResolution, ...] = ("overwrite", "skip", "merge")


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line (plus where to find help) instead of argparse's usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _resolution(text: str) -> tuple[str, ConflictResolution]:
    # rpartition: a path may itself contain '='; the choice never does.
    path, sep, choice = text.rpartition("=")
    if not sep or not path:
        raise argparse.ArgumentTypeError(f"expected PATH=overwrite|skip|merge, got {text!r}")
    for allowed in _RESOLUTIONS:
        if choice == allowed:
            return path, allowed
    raise argparse.ArgumentTypeError(f"{choice!r} is not one of overwrite, skip, merge (in {text!r})")


def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument(
        "--workspace", metavar="PATH", default=".", help="workspace folder (default: current directory)"
    )
    common.add_argument(
        "--store",
        metavar="DIR",
        default=None,
        help="store directory (default: $RETRACE_STORE, else per-workspace user data)",
    )
    as_json = _Parser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="print JSON (camelCase engine models)")

    parser = _Parser(
        prog="retrace",
        description="Checkpoints after every agent tool call: list, diff and restore them headless.",
    )
    parser.add_argument("--version", action="version", version=f"retrace {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)

    def add(name: str, help_text: str, *parents: _Parser) -> _Parser:
        return sub.add_parser(name, help=help_text, description=help_text, parents=list(parents))

    p = add("init", "create the store and record the workspace baseline", common, as_json)
    p.set_defaults(handler=commands.cmd_init)

    p = add("checkpoint", "record a checkpoint of the workspace now; prints its id", common, as_json)
    p.add_argument("--label", default="", help="label shown in the timeline")
    p.add_argument(
        "--path",
        dest="paths",
        metavar="P",
        nargs="+",
        action="extend",
        help="capture exactly these changed paths, workspace-relative (default: detect every change)",
    )
    p.set_defaults(handler=commands.cmd_checkpoint)

    p = add("log", "list checkpoints, oldest first; * marks the head", common, as_json)
    p.add_argument("--session", metavar="ID", default=None, help="only this session's checkpoints")
    p.add_argument(
        "--path",
        metavar="FILE",
        default=None,
        help="only the checkpoints that changed FILE (workspace-relative), newest first",
    )
    p.set_defaults(handler=commands.cmd_log)

    p = add("show", "show a checkpoint and the files it changed", common, as_json)
    p.add_argument("id", help="checkpoint id, unique prefix, or head")
    p.set_defaults(handler=commands.cmd_show)

    p = add("diff", "changes from checkpoint A to B (default B: the workspace now)", common, as_json)
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B", nargs="?", default=None)
    p.add_argument("--stat", action="store_true", help="per-file +/- counts instead of the patch")
    p.set_defaults(handler=commands.cmd_diff)

    _add_restore(
        add("restore", "restore the workspace (and/or conversation) to a checkpoint", common, as_json)
    )

    p = add("gc", "apply retention and delete unreferenced blobs", common, as_json)
    p.set_defaults(handler=commands.cmd_gc)

    p = add("stats", "storage used, capture/restore latency, restore success rate", common, as_json)
    p.set_defaults(handler=commands.cmd_stats)

    _add_verify(
        add(
            "verify",
            "check every journal line, manifest and blob of the store; exit 0 clean, 4 damage found",
            common,
            as_json,
        )
    )
    _add_agent_commands(add, common)
    remote.add_parser(add, common, as_json)
    handoff.add_parsers(add, common, as_json)
    metrics.add_parser(add, common, as_json)
    return parser


def _add_restore(p: _Parser) -> None:
    p.add_argument("id", help="checkpoint id, unique prefix, or head")
    p.add_argument("--mode", choices=("code", "conversation", "both"), default="code")
    p.add_argument("--dry-run", action="store_true", help="show the plan; change nothing")
    p.add_argument("--force", action="store_true", help="overwrite every conflicting file")
    p.add_argument(
        "--resolve",
        dest="resolutions",
        metavar="PATH=overwrite|skip|merge",
        type=_resolution,
        action="append",
        default=[],
        help="decide one conflicting file (repeatable)",
    )
    p.add_argument(
        "--path",
        dest="paths",
        metavar="P",
        nargs="+",
        action="extend",
        help="restore only these paths (workspace-relative)",
    )
    p.add_argument(
        "--reason",
        choices=get_args(RestoreReason),
        default=None,
        help="why you restore (optional; recorded with the restore, counted in retrace metrics)",
    )
    p.set_defaults(handler=commands.cmd_restore)


def _add_verify(p: _Parser) -> None:
    p.add_argument("--quick", action="store_true", help="journals and blob presence only (no blob is read)")
    p.add_argument(
        "--repair",
        action="store_true",
        help="move damaged pieces into the store's quarantine/ (never deletes) and rebuild indexes",
    )
    p.set_defaults(handler=commands.cmd_verify)


def _add_agent_commands(add: Callable[..., _Parser], common: _Parser) -> None:
    p = add("serve", "run the JSON-RPC server on stdio (what the VS Code extension starts)")
    p.set_defaults(handler=commands.cmd_serve)

    p = add("run", "run one agent task headless (prints events; exits when the turn ends)", common)
    p.add_argument("task", help="the prompt")
    p.add_argument("--permission", choices=("auto", "deny"), default="auto", help="writes and commands")
    p.add_argument("--session", metavar="ID", default=None, help="continue this session")
    p.add_argument(
        "--mcp",
        metavar="FILE",
        type=Path,
        default=None,
        help="MCP servers whose tools the agent may use: a JSON file with a `servers` map (.vscode/mcp.json)",
    )
    p.add_argument(
        "--mirror-git",
        action="store_true",
        help="commit the turn's end onto the git branch retrace/<session id> (never checked out)",
    )
    p.set_defaults(handler=commands.cmd_run)

    p = add("fake-model", "serve the local fake Messages API (offline demo and tests)")
    p.add_argument("--scenario", metavar="FILE|NAME", default=None)
    p.add_argument("--port", metavar="N", type=int, default=None)
    p.set_defaults(handler=commands.cmd_fake_model)


def _error(message: str) -> int:
    first_line = message.strip().splitlines()[0] if message.strip() else "unknown error"
    # Errors name paths and values from stored data: nothing in them may drive the terminal.
    say(f"retrace: error: {terminal_text(first_line)}", err=True)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        # Paths that are not valid in the terminal's encoding must not crash the output.
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except commands.CliError as exc:
        return _error(str(exc))
    except RemoteError as exc:
        _error(str(exc))
        return remote.REMOTE_ERROR_EXIT
    except RetraceError as exc:
        return _error(commands.explain(exc))
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        return _error(f"{exc.strerror or exc}{where}")
    except KeyboardInterrupt:
        print("retrace: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
