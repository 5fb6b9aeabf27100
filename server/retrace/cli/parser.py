"""The ``retrace`` argument parser: every command, option and help text, built from argparse alone.

Light on purpose: ``retrace --version`` and ``--help`` build this parser and nothing else, so it
imports no engine, no pydantic and no command module. Each command names its function as a
:class:`Handler` (module + function name) that is imported only when that command runs; the
choices and defaults that belong to other modules are restated here as constants, each pinned to
its owner by ``tests/cli/test_cli_parser.py``.
"""

from __future__ import annotations

import argparse
from importlib import import_module

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at start-up; only the type checker needs it
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any, NoReturn

RESOLUTIONS = ("overwrite", "skip", "merge")
"""``engine.models.ConflictResolution``."""

RESTORE_REASONS = ("wrongApproach", "brokeTests", "unwantedChanges", "offTrack", "other")
"""``engine.store.events.RestoreReason``."""

INTEGRATED_AGENTS = ("claude-code", "gemini-cli")
"""``protocol.agents.IntegratedAgent`` (``app.hooks.registry.INSTALLS``): ``retrace integrate``'s agents."""

DEFAULT_BUDGET_BYTES = 2 * 1024**3
"""``engine.config.RetentionPolicy().max_bytes``: the default storage budget of ``retrace metrics``."""


class Handler:
    """A command's function, imported when the command runs (``module.name(args) -> exit code``)."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name

    def __call__(self, args: argparse.Namespace) -> int:
        function: Callable[[argparse.Namespace], int] = getattr(import_module(self.module), self.name)
        return function(args)

    def __repr__(self) -> str:
        return f"Handler({self.module}.{self.name})"


def _commands(name: str) -> Handler:
    return Handler("retrace.cli.commands", name)


class _Width:
    """The help text's width, asked of the terminal once per parser tree. argparse asks it on
    every ``add_argument`` (it builds a formatter to check the metavar), ~100 times per start."""

    def __init__(self) -> None:
        self._columns: int | None = None

    def __call__(self) -> int:
        if self._columns is None:
            import shutil  # as argparse.HelpFormatter does: its default width, computed once

            self._columns = shutil.get_terminal_size().columns - 2
        return self._columns


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line (plus where to find help) instead of argparse's usage dump."""

    def __init__(self, *args: Any, width: _Width, **kwargs: Any) -> None:
        self._width = width  # before argparse's own __init__, which adds -h through it
        super().__init__(*args, **kwargs)

    def _get_formatter(self) -> argparse.HelpFormatter:
        # Every parser here uses argparse's default formatter class.
        return argparse.HelpFormatter(prog=self.prog, width=self._width())

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _resolution(text: str) -> tuple[str, str]:
    # rpartition: a path may itself contain '='; the choice never does.
    path, sep, choice = text.rpartition("=")
    if not sep or not path:
        raise argparse.ArgumentTypeError(f"expected PATH=overwrite|skip|merge, got {text!r}")
    if choice in RESOLUTIONS:
        return path, choice
    raise argparse.ArgumentTypeError(f"{choice!r} is not one of overwrite, skip, merge (in {text!r})")


def _positive_bytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of bytes, got {text!r}")
    return value


PROVIDERS = ("anthropic", "bedrock", "vertex", "openai-compatible")
"""What answers ``retrace run`` (the editor's own models, ``vscode-lm``, need the editor)."""


def _model_options(p: argparse.ArgumentParser) -> None:
    """``retrace run``'s model: the settings' ``retrace.model`` section as options (credentials
    never: they come from the environment's hand-off, the AWS or Google chains)."""
    p.add_argument(
        "--provider", choices=PROVIDERS, default="anthropic", help="who answers (default anthropic)"
    )
    p.add_argument("--model", metavar="ID", default="", help="the model id in the provider's naming")
    p.add_argument("--region", metavar="NAME", default="", help="Bedrock's AWS region or Vertex's region")
    p.add_argument("--profile", metavar="NAME", default="", help="Bedrock: the AWS profile")
    p.add_argument("--project", metavar="ID", default="", help="Vertex: the Google Cloud project")
    p.add_argument("--endpoint", metavar="URL", default="", help="openai-compatible: the base URL")


def _path(text: str) -> Path:
    from pathlib import Path  # imported by the command that takes a path, not by every start

    return Path(text)


WORKSPACE_HELP = (
    "workspace folder (default: the VS Code workspace folder holding the current directory in "
    "VS Code's terminal, else the current directory)"
)


def build_parser(version: str) -> argparse.ArgumentParser:
    width = _Width()
    common = _Parser(add_help=False, width=width)
    common.add_argument("--workspace", metavar="PATH", default=None, help=WORKSPACE_HELP)
    common.add_argument(
        "--store",
        metavar="DIR",
        default=None,
        help="store directory (default: $RETRACE_STORE, else per-workspace user data)",
    )
    as_json = _Parser(add_help=False, width=width)
    as_json.add_argument("--json", action="store_true", help="print JSON (camelCase engine models)")

    parser = _Parser(
        width=width,
        prog="retrace",
        description="Checkpoints after every agent tool call: list, diff and restore them headless.",
    )
    parser.add_argument("--version", action="version", version=f"retrace {version}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)

    def add(name: str, help_text: str, *parents: _Parser) -> _Parser:
        return sub.add_parser(name, help=help_text, description=help_text, parents=list(parents), width=width)

    _add_engine_commands(add, common, as_json)
    _add_hook(add)
    _add_agent_commands(add, common)
    _add_remote(add, common, as_json)
    _add_handoff(add, common, as_json)
    _add_metrics(add, common, as_json)
    _add_integrate(add, as_json)
    return parser


def _add_hook(add: Callable[..., _Parser]) -> None:
    p = add("hook", "record one hook event of another agent (JSON on stdin); always exits 0, prints nothing")
    p.add_argument("agent", metavar="AGENT", help="claude-code or gemini-cli")
    p.add_argument(
        "--workspace", metavar="PATH", default=None, help="workspace folder (default: the agent's project)"
    )
    p.add_argument("--store", metavar="DIR", default=None, help="store directory (default: the workspace's)")
    p.set_defaults(handler=Handler("retrace.cli.hook", "cmd_hook"))


def _add_engine_commands(add: Callable[..., _Parser], common: _Parser, as_json: _Parser) -> None:
    p = add("init", "create the store and record the workspace baseline", common, as_json)
    p.set_defaults(handler=_commands("cmd_init"))

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
    p.set_defaults(handler=Handler("retrace.cli.checkpoint", "cmd_checkpoint"))

    p = add("log", "list checkpoints, oldest first; * marks the head", common, as_json)
    p.add_argument("--session", metavar="ID", default=None, help="only this session's checkpoints")
    p.add_argument(
        "--path",
        metavar="FILE",
        default=None,
        help="only the checkpoints that changed FILE (workspace-relative), newest first",
    )
    p.add_argument(
        "--bookmarks",
        action="store_true",
        help="only bookmarks (named checkpoints), with their names",
    )
    p.set_defaults(handler=_commands("cmd_log"))

    p = add("show", "show a checkpoint and the files it changed", common, as_json)
    p.add_argument("id", help="checkpoint id, unique prefix, or head")
    p.set_defaults(handler=_commands("cmd_show"))

    p = add("diff", "changes from checkpoint A to B (default B: the workspace now)", common, as_json)
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B", nargs="?", default=None)
    p.add_argument("--stat", action="store_true", help="per-file +/- counts instead of the patch")
    p.set_defaults(handler=_commands("cmd_diff"))

    _add_restore(
        add("restore", "restore the workspace (and/or conversation) to a checkpoint", common, as_json)
    )

    p = add("gc", "apply retention and delete unreferenced blobs", common, as_json)
    p.set_defaults(handler=_commands("cmd_gc"))

    p = add("stats", "storage used, capture/restore latency, restore success rate", common, as_json)
    p.set_defaults(handler=_commands("cmd_stats"))

    _add_verify(
        add(
            "verify",
            "check every journal line, manifest and blob of the store; exit 0 clean, 4 damage found",
            common,
            as_json,
        )
    )


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
        "--while-agent-runs",
        choices=("proceed",),
        default=None,
        help="restore code even while another agent's turn (Claude Code, Gemini CLI) is running",
    )
    p.add_argument(
        "--git",
        dest="git_choice",
        choices=("files-only", "park-first"),
        default=None,
        help="when HEAD or the branch moved since the checkpoint: restore the files only, or first "
        "park the current state on a new branch retrace/parked-… (else the restore is refused)",
    )
    p.add_argument(
        "--reason",
        choices=RESTORE_REASONS,
        default=None,
        help="why you restore (optional; recorded with the restore, counted in retrace metrics)",
    )
    p.set_defaults(handler=_commands("cmd_restore"))


def _add_verify(p: _Parser) -> None:
    p.add_argument("--quick", action="store_true", help="journals and blob presence only (no blob is read)")
    p.add_argument(
        "--repair",
        action="store_true",
        help="move damaged pieces into the store's quarantine/ (never deletes) and rebuild indexes",
    )
    p.set_defaults(handler=_commands("cmd_verify"))


def _add_agent_commands(add: Callable[..., _Parser], common: _Parser) -> None:
    p = add("serve", "run the JSON-RPC server on stdio (what the VS Code extension starts)")
    p.set_defaults(handler=_commands("cmd_serve"))

    p = add("run", "run one agent task headless (prints events; exits when the turn ends)", common)
    p.add_argument("task", help="the prompt")
    p.add_argument("--permission", choices=("auto", "deny"), default="auto", help="writes and commands")
    p.add_argument("--session", metavar="ID", default=None, help="continue this session")
    p.add_argument(
        "--mcp",
        metavar="FILE",
        type=_path,
        default=None,
        help="MCP servers whose tools the agent may use: a JSON file with a `servers` map (.vscode/mcp.json)",
    )
    p.add_argument(
        "--mirror-git",
        action="store_true",
        help="commit the turn's end onto the git branch retrace/<session id> (never checked out)",
    )
    _model_options(p)
    p.set_defaults(handler=_commands("cmd_run"))

    p = add(
        "mcp",
        "serve the checkpoints over MCP on stdio (list, diff, checkpoint, restore: a dry run by default)",
        common,
    )
    p.set_defaults(handler=Handler("retrace.cli.mcp", "cmd_mcp"))

    p = add("fake-model", "serve the local fake Messages API (offline demo and tests)")
    p.add_argument("--scenario", metavar="FILE|NAME", default=None)
    p.add_argument("--port", metavar="N", type=int, default=None)
    p.set_defaults(handler=_commands("cmd_fake_model"))


def _add_remote(add: Callable[..., _Parser], common: _Parser, as_json: _Parser) -> None:
    p = add("remote", "sync the store with an S3-compatible bucket (push, open another machine's sessions)")
    sub = p.add_subparsers(dest="remote_command", metavar="ACTION", required=True, parser_class=type(p))

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        return sub.add_parser(
            name, help=help_text, description=help_text, parents=[common, as_json], width=p._width
        )

    def remote(name: str) -> Handler:
        return Handler("retrace.cli.remote", name)

    q = action("add", "configure a remote: NAME s3://bucket/prefix (the workspace name is appended)")
    q.add_argument("name")
    q.add_argument("url")
    q.add_argument("--endpoint", default=None, help="S3 endpoint URL (MinIO, R2, GCS interop, ...)")
    q.add_argument("--region", default=None)
    q.add_argument(
        "--workspace-name", default=None, help="key prefix of this workspace (default: folder name)"
    )
    q.add_argument(
        "--encrypt", action="store_true", help="client-side AES-256-GCM (key file or RETRACE_REMOTE_KEY)"
    )
    q.set_defaults(handler=remote("cmd_add"))

    q = action("remove", "forget a remote (the bucket is not touched)")
    q.add_argument("name")
    q.set_defaults(handler=remote("cmd_remove"))

    for name, text, handler in (
        ("push", "upload new blobs and journal segments", "cmd_push"),
        ("pull", "fetch what was pushed since into the sessions opened from the remote", "cmd_pull"),
        ("status", "last push, last error, what is pending (no network)", "cmd_status"),
        ("sessions", "sessions in the bucket for this workspace", "cmd_sessions"),
    ):
        q = action(name, text)
        q.add_argument("name", nargs="?", default=None, help="remote (default: the only one)")
        q.set_defaults(handler=remote(handler))

    q = action("open", "make a remote session available here (timeline now, files fetched when needed)")
    q.add_argument("session")
    q.add_argument("--store-id", default=None, help="the machine's store (default: the newest)")
    q.add_argument("--remote", default=None, help="remote name (default: the only one)")
    q.set_defaults(handler=remote("cmd_open"))

    q = action("verify", "check every segment and pack index in the bucket as an open would")
    q.add_argument("name", nargs="?", default=None, help="remote (default: the only one)")
    q.add_argument("--packs", action="store_true", help="also download every pack and check its hash")
    q.set_defaults(handler=remote("cmd_verify"))

    q = action("gc", "delete what no session within retention references (safe with concurrent writers)")
    q.add_argument("name", nargs="?", default=None)
    q.add_argument("--dry-run", action="store_true")
    q.add_argument("--grace-hours", type=float, default=None)
    q.add_argument("--retention-days", type=float, default=None)
    q.add_argument("--local", action="store_true", help="only drop local copies the remote holds")
    q.set_defaults(handler=remote("cmd_gc"))


def _add_handoff(add: Callable[..., _Parser], common: _Parser, as_json: _Parser) -> None:
    p = add(
        "export",
        "export a checkpoint to a new git branch, or a range A..B as a patch series",
        common,
        as_json,
    )
    p.add_argument(
        "id", metavar="ID|A..B", help="checkpoint (unique prefix, head), or a range A..B with --patch"
    )
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--branch", metavar="NAME", help="create this branch (refused if it exists)")
    target.add_argument("--patch", metavar="DIR", help="write one patch per agent turn of A..B into DIR")
    p.add_argument(
        "--message", metavar="TEXT", default=None, help="commit message (default: the turns' prompts)"
    )
    p.add_argument("--author", metavar="NAME <EMAIL>", default=None, help="commit author")
    p.add_argument("--base", metavar="REV", default=None, help="parent commit (default: HEAD)")
    p.set_defaults(handler=Handler("retrace.cli.handoff", "cmd_export"))

    p = add(
        "attribution", "which lines each file's authors wrote (agent or others) over a range", common, as_json
    )
    p.add_argument(
        "--from", dest="a", metavar="A", default=None, help="start checkpoint (default: the first)"
    )
    p.add_argument("--to", dest="b", metavar="B", default="head", help="end checkpoint (default: head)")
    p.set_defaults(handler=Handler("retrace.cli.handoff", "cmd_attribution"))


def _add_metrics(add: Callable[..., _Parser], common: _Parser, as_json: _Parser) -> None:
    p = add(
        "metrics",
        "checkpoint, restore and storage metrics in the Prometheus text format (--json: structured)",
        common,
        as_json,
    )
    p.add_argument(
        "--budget-bytes",
        type=_positive_bytes,
        default=DEFAULT_BUDGET_BYTES,
        metavar="N",
        help="the storage budget alerts are measured against (retention maxBytes; default %(default)s)",
    )
    p.set_defaults(handler=Handler("retrace.cli.metrics", "cmd_metrics"))


def _add_integrate(add: Callable[..., _Parser], as_json: _Parser) -> None:
    p = add(
        "integrate",
        "checkpoint another agent's tool calls: write Retrace's hooks into its project settings",
        as_json,
    )
    p.add_argument(
        "agent",
        choices=INTEGRATED_AGENTS,
        help="claude-code: .claude/settings.local.json; gemini-cli: .gemini/settings.json",
    )
    p.add_argument("--workspace", metavar="PATH", default=None, help=WORKSPACE_HELP)
    p.add_argument("--remove", action="store_true", help="take Retrace's hooks out (nothing else is touched)")
    p.set_defaults(handler=Handler("retrace.cli.integrate", "cmd_integrate"))
