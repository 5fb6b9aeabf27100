"""One function per ``retrace`` subcommand: open the engine, call it, print the result.

Kept thin on purpose: every decision about checkpoints and restores is the engine's; this module
only chooses how to open the store (read-only commands never take the writer lock, and only
``init`` may create a store) and how to print. Each ``cmd_*`` returns the process exit code.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrace.camel import dump
from retrace.cli import format as fmt
from retrace.cli.errors import CliError, explain
from retrace.cli.forward import CLI_SESSION
from retrace.engine.config import EngineConfig
from retrace.engine.engine import Engine
from retrace.engine.errors import RetraceError, StoreLocked, StoreNotInitialised
from retrace.engine.models import RestoreFailed
from retrace.engine.store.layout import StoreLayout, default_store_dir
from retrace.relay import holder

if TYPE_CHECKING:
    from retrace.agent.model.settings import ModelSettings
    from retrace.app.restore_sequence import RestoreDone
    from retrace.engine.store.blobs import BlobSource
    from retrace.protocol.file_history import FileVersion
    from retrace.protocol.git_restore import GitChoice

# The checkpoint commands (init, checkpoint, log, show, stats, diff) import the engine and
# nothing else: the application services, the protocol models, the sync code, the agent and the
# server are imported inside the commands that need them (tests/cli/test_import_hygiene.py).

__all__ = ["CliError", "explain"]


VERIFY_DAMAGE_EXIT = 4
"""Exit code of ``retrace verify`` when the store is damaged."""


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _workspace(args: argparse.Namespace) -> Path:
    path = Path(args.workspace).expanduser()
    if not path.exists():
        raise CliError(f"workspace does not exist: {path}")
    if not path.is_dir():
        raise CliError(f"workspace is not a directory: {path}")
    return path.resolve()


def _store(args: argparse.Namespace) -> Path | None:
    return Path(args.store).expanduser().absolute() if args.store else None


def _open(
    args: argparse.Namespace,
    *,
    readonly: bool,
    catch_up: bool = True,
    watcher: bool = True,
    release_holder: bool = True,
) -> Engine:
    """``watcher=False``: a one-shot writer that captures once and exits gains nothing from a
    file-system watcher (its first capture is a stat walk either way) and would pay for setting
    one up on every directory and tearing it down. A writer finding the store held by a headless
    holder asks it to let go first (``release_holder``; ``retrace checkpoint`` forwards to it
    instead, :mod:`retrace.cli.forward`); an editor's server is never asked."""
    session = None if readonly else CLI_SESSION
    workspace = _workspace(args)
    store = _store(args) or default_store_dir(workspace)
    source = blob_source(store, workspace)

    def open_store() -> Engine:
        return Engine.open(
            workspace,
            store,
            session_id=session,
            config=None if watcher else EngineConfig(watcher=False),
            readonly=readonly,
            create=False,
            catch_up=catch_up,
            blob_source=source,
        )

    if readonly or not release_holder:
        return open_store()
    return holder.open_releasing(open_store, store, StoreLocked)


def blob_source(store: Path, workspace: Path) -> BlobSource | None:
    """Sessions opened from a remote read their blobs from it when needed (no network otherwise).
    Without a remote configuration there is none, and the sync code is not even imported."""
    if not os.path.lexists(StoreLayout(store).remote_config):
        return None
    from retrace.sync.service import RemoteService

    return RemoteService(store, workspace).blob_source()


def open_readonly(args: argparse.Namespace) -> Engine:
    """The store opened read-only (no writer lock) for a command that only reads it."""
    return _open(args, readonly=True)


def resolve(engine: Engine, ref: str) -> str:
    """A checkpoint id from an id, a unique prefix, or ``head``."""
    return _resolve(engine, ref)


def _resolve(engine: Engine, ref: str) -> str:
    """A checkpoint id from an id, a unique prefix, or ``head``."""
    return engine.head.id if ref.lower() == "head" else engine.get(ref).id


# --------------------------------------------------------------------------- engine commands


def cmd_init(args: argparse.Namespace) -> int:
    workspace = _workspace(args)
    store = _store(args)
    try:
        engine = holder.open_releasing(
            lambda: Engine.open(workspace, store, session_id=CLI_SESSION, create=False),
            store or default_store_dir(workspace),
            StoreLocked,
        )
        created = False
    except StoreNotInitialised:
        engine = Engine.open(workspace, store, session_id=CLI_SESSION, create=True)
        created = True
    with engine:
        head = engine.head
        if args.json:
            _print_json({"created": created, "store": str(engine.store_dir), "head": dump(head)})
        elif created:
            fmt.say(f"Initialised a Retrace store at {fmt.quote_name(str(engine.store_dir))}")
            recorded = head.meta.get("files", len(head.files))
            fmt.say(f"Starting point {head.id}: {fmt.plural(int(recorded), 'file')} recorded.")
        else:
            fmt.say(f"Already initialised: {fmt.quote_name(str(engine.store_dir))}")
            fmt.say(f"Head {head.id} ({head.kind}): {fmt.change_summary(head.files)}")
    return 0


def cmd_checkpoint(args: argparse.Namespace) -> int:
    """``retrace checkpoint`` on a store this process opens (``cli.forward.cmd_checkpoint`` runs
    first and hands the call to a server holding the store)."""
    # No catch-up: what changed since the last checkpoint is exactly what the caller is
    # checkpointing now (recording it as "external" would make its own restores conflict).
    with _open(
        args, readonly=False, catch_up=bool(args.paths), watcher=False, release_holder=False
    ) as engine:
        from retrace.engine.bookmarks import mark

        cp = mark(engine, args.label, paths=args.paths)
        if args.json:
            _print_json(dump(cp))
        else:
            fmt.say(cp.id)
    return 0


def cmd_log(args: argparse.Namespace) -> int:
    if args.path is not None:
        return _log_path(args)
    with _open(args, readonly=True) as engine:
        try:
            head_id: str | None = engine.head.id
        except RetraceError:  # only sessions opened from elsewhere: none of them is the head
            head_id = None
        from retrace.engine.bookmark_name import bookmarks

        timeline = engine.timeline(args.session)
        named = bookmarks(timeline, engine.history.names)
        if args.bookmarks:
            timeline = [cp for cp in timeline if cp.id in named]
        if args.json:
            _print_json(
                [
                    fmt.checkpoint_json(cp, is_head=cp.id == head_id, bookmark=named.get(cp.id))
                    for cp in timeline
                ]
            )
        elif not timeline:
            what = "bookmarks" if args.bookmarks else "checkpoints"
            fmt.say(f"no {what} in session {args.session}" if args.session else f"no {what}")
        else:
            for cp in timeline:
                fmt.say(fmt.checkpoint_line(cp, is_head=cp.id == head_id, bookmark=named.get(cp.id)))
    return 0


def _log_path(args: argparse.Namespace) -> int:
    """``retrace log --path FILE``: the file's history, newest first (every page)."""
    from retrace.app.file_history import file_history
    from retrace.protocol.file_history import FileHistoryParams

    with _open(args, readonly=True) as engine:
        versions: list[FileVersion] = []
        cursor: str | None = None
        while True:
            params = FileHistoryParams(path=args.path, session_id=args.session, cursor=cursor, limit=1000)
            page = file_history(engine, params)
            versions.extend(page.versions)
            cursor = page.next_cursor
            if cursor is None:
                break
        if args.json:
            _print_json([dump(v) for v in versions])
        elif not versions:
            fmt.say(f"no checkpoint changed {fmt.quote_name(page.path)}")
        else:
            for v in versions:
                fmt.say(fmt.file_version_line(v))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    with _open(args, readonly=True) as engine:
        cp = engine.get(_resolve(engine, args.id))
        is_head = cp.id == engine.head.id
        if args.json:
            _print_json(fmt.checkpoint_json(cp, is_head=is_head))
        else:
            fmt.say(fmt.checkpoint_details(cp, is_head=is_head))
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    with _open(args, readonly=True) as engine:
        a = _resolve(engine, args.a)
        b = _resolve(engine, args.b) if args.b is not None else None
        if args.json or args.stat:
            changes = engine.diff(a, b)
            if args.json:
                _print_json([dump(c) for c in changes])
            else:
                fmt.say(fmt.diff_stat(changes))
        else:
            patch = engine.unified_diff(a, b)
            sys.stdout.write(patch if not patch or patch.endswith("\n") else patch + "\n")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    """``retrace restore``: the one restore sequence (``app/restore_sequence.py``) with the disk
    applier and a headless agent service (no model is called by a restore); printing is ours."""
    import asyncio
    import io

    from retrace.agent.headless import PrintingHost
    from retrace.agent.session import AgentService
    from retrace.app.restore import RestoreRequest
    from retrace.app.restore_sequence import DiskApplier, SequenceRequest, ToCheckpoint, run_restore

    with _open(args, readonly=False) as engine:
        request = SequenceRequest(
            RestoreRequest(
                checkpoint=_resolve(engine, args.id),
                mode=args.mode,
                dry_run=args.dry_run,
                force=args.force,
                resolutions=dict(args.resolutions),
                paths=args.paths,
            ),
            while_agent_runs=args.while_agent_runs,
            git_choice=_GIT_CHOICES.get(args.git_choice or ""),
            reason=getattr(args, "reason", None),
        )
        agent = AgentService(engine, PrintingHost(io.StringIO(), "deny"))
        strategy = ToCheckpoint(needs_messages=True)
        done = asyncio.run(run_restore(agent, DiskApplier(agent.gate), request, strategy))
        _print_restore(args, done)
    return fmt.restore_exit_code(done.outcome)


_GIT_CHOICES: dict[str, GitChoice] = {"files-only": "filesOnly", "park-first": "parkFirst"}
"""``--git files-only|park-first`` (``app/restore_git.py``: refused without it when git moved)."""


def _print_restore(args: argparse.Namespace, done: RestoreDone) -> None:
    outcome, git, agents = done.outcome, done.git, done.agent_turns
    conversation = _conversation_report(done)
    reason = (
        {"checkpointId": done.reason.checkpoint_id, "reason": done.reason.reason} if done.reason else None
    )
    if args.json:
        payload = dump(outcome)
        if conversation is not None:
            payload["conversation"] = conversation
        if reason is not None:
            payload["restoreReason"] = reason
        payload["agentTurns"] = [dump(t) for t in agents]
        if git is not None:
            payload["git"] = dump(git)
        _print_json(payload)
        return
    if conversation is not None and args.mode == "conversation" and outcome.kind == "nothingToRestore":
        # The engine's "nothing to restore" only says the files were not the point.
        fmt.say(f"{fmt.terminal_text(conversation['message'])} Files were left as they are.")
    else:
        fmt.say(fmt.restore_report(outcome))
        if conversation is not None:
            fmt.say(fmt.terminal_text(conversation["message"]))
    if reason is not None:
        fmt.say(f"Reason recorded: {reason['reason']}.")
    if git is not None and git.parked_branch:
        fmt.say(f"Parked the state before the restore on branch {fmt.terminal_text(git.parked_branch)}.")
    if agents:
        from retrace.app.restore import agents_named

        fmt.say(fmt.terminal_text(f"Note: another agent is running a turn: {agents_named(agents)}."))
    if isinstance(outcome, RestoreFailed):
        fmt.say(f"retrace: error: restore failed: {fmt.terminal_text(outcome.error)}", err=True)


def _conversation_report(done: RestoreDone) -> dict[str, Any] | None:
    """The conversation half in words (``--mode conversation|both``), never pretended."""
    part, cp = done.conversation, done.target
    if part is None:
        return None
    restored = part.restored
    if restored is not None:
        notes = "".join(f" Terminal: {note}." for note in restored.terminal_notes)
        return {
            "restored": True,
            "sessionId": part.session_id,
            "head": restored.view.head,
            "terminalNotes": restored.terminal_notes,
            "message": f"Conversation of session {part.session_id} moved to checkpoint {cp.id}.{notes}",
        }
    sid = part.session_id
    messages = {
        "dryRun": f"Dry run: the conversation of session {sid} would move too.",
        "codeNotApplied": "The conversation was left as it was (the code restore did not apply).",
        "noConversation": f"Checkpoint {cp.id} has no conversation (session {sid} has no messages).",
    }
    return {"restored": False, "message": messages[part.skipped or "codeNotApplied"]}


def cmd_gc(args: argparse.Namespace) -> int:
    from retrace.app.task_stores import collect_all

    with _open(args, readonly=False) as engine:
        report = collect_all(engine)
        if args.json:
            _print_json(dump(report))
        else:
            fmt.say(fmt.gc_report(report))
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    """The store's figures: the status bar's pipeline (:mod:`retrace.engine.store_stats`), read
    from the files (no engine, no replay, no lock)."""
    from retrace.engine.store_stats.store_figures import read_store_stats_of

    workspace = _workspace(args)
    store = _store(args) or default_store_dir(workspace)
    stats = read_store_stats_of(workspace, store)
    if args.json:
        _print_json(dump(stats))
    else:
        fmt.say(fmt.stats_report(stats, store_dir=str(store)))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from retrace.engine.repair import repair_store
    from retrace.engine.verify import verify_store

    workspace = _workspace(args)
    layout = StoreLayout(_store(args) or default_store_dir(workspace))
    source = blob_source(layout.root, workspace)
    remote = source.ids() if source is not None else set()
    report = (
        repair_store(layout) if args.repair else verify_store(layout, quick=args.quick, remote=remote).report
    )
    if args.json:
        _print_json(dump(report))
    else:
        fmt.say(fmt.verify_report(report, store_dir=str(layout.root)))
    return 0 if report.ok else VERIFY_DAMAGE_EXIT


# --------------------------------------------------------------------------- other components
# Imported inside the commands that need them: the server and the agent pull in pygls and the
# model SDK, which the checkpoint commands never need (start-up stays fast).


def cmd_serve(args: argparse.Namespace) -> int:
    from retrace.lsp.main import main as serve

    return serve()


def cmd_run(args: argparse.Namespace) -> int:
    import asyncio

    from retrace import credentials
    from retrace.cli.run import run_task

    credentials.secure_process_start()  # the agent's commands must not read the model key
    workspace = _workspace(args)
    return asyncio.run(
        run_task(
            workspace,
            _store(args),
            args.task,
            session_id=args.session,
            permission=args.permission,
            out=sys.stdout,
            mcp=args.mcp,
            mirror_git=args.mirror_git,
            model=_model_settings(args),
        )
    )


def _model_settings(args: argparse.Namespace) -> ModelSettings:
    """``retrace run``'s model options as the ``retrace.model`` section."""
    from retrace.agent.model.settings import ModelSettings

    region = {"region": args.region} if args.region else {}
    return ModelSettings.model_validate(
        {
            "provider": args.provider,
            "id": args.model,
            "bedrock": {**region, "profile": args.profile},
            "vertex": {**region, "projectId": args.project},
            "openaiCompatible": {"baseUrl": args.endpoint},
        }
    )


def cmd_fake_model(args: argparse.Namespace) -> int:
    from retrace.offline.__main__ import main as serve_fake_model

    argv: list[str] = []
    if args.scenario is not None:
        argv += ["--scenario", args.scenario]
    if args.port is not None:
        argv += ["--port", str(args.port)]
    return serve_fake_model(argv)
