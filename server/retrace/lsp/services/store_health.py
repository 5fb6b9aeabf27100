"""Store health for the server: ``retrace/store/verify``, the quick check at start-up and
``retrace/store/gc`` (retention now, refused while a turn runs; the timeline is rebuilt after).

Verification reads the store's files on its own (no engine state, no lock), in a worker thread,
so it never holds up the agent. Damage found at start-up is logged and shown to the user as a
warning (``window/showMessage``; the client decides whether it pops up).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from retrace.app.task_stores import collect_all
from retrace.engine import Engine
from retrace.engine.errors import RetraceError
from retrace.engine.models import GcReport, VerifyReport
from retrace.engine.store.layout import StoreLayout
from retrace.engine.verify import verify_store
from retrace.lsp.services.restore_flight import in_flight
from retrace.protocol.models import TimelineDidChange

if TYPE_CHECKING:
    from retrace.bootstrap import Services
    from retrace.lsp.services.port import ServerPort

log = logging.getLogger(__name__)


async def verify(store_dir: Path, *, quick: bool) -> VerifyReport:
    return (await asyncio.to_thread(verify_store, StoreLayout(store_dir), quick=quick)).report


async def verify_in_background(store_dir: Path) -> VerifyReport:
    """The quick verification on a daemon thread of its own: an exit does not wait for it (the
    default executor's threads are joined when the server's loop closes, and this check of a
    large store can take seconds; it only reads, so leaving it unfinished loses nothing)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[VerifyReport] = loop.create_future()

    def settle(result: VerifyReport | None, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)  # type: ignore[arg-type]

    def work() -> None:
        try:
            report, error = verify_store(StoreLayout(store_dir), quick=True).report, None
        except BaseException as exc:  # handed to the awaiting task
            report, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: the server has exited
            loop.call_soon_threadsafe(settle, report, error)

    threading.Thread(target=work, name="retrace-store-check", daemon=True).start()
    return await done


def damage_summary(report: VerifyReport) -> str:
    """One line for a warning: how much damage and how many checkpoints it affects."""
    first = report.damage[0] if report.damage else None
    what = f"{len(report.damage)} damaged piece(s)" + (f" (e.g. {first.kind} {first.where})" if first else "")
    return (
        f"the checkpoint store is damaged: {what}; {len(report.affected)} checkpoint(s) cannot be "
        "fully restored. Run “Retrace: Verify Store” for the report, or `retrace verify --repair` "
        "with VS Code closed."
    )


async def background_check(server: ServerPort, store_dir: Path) -> VerifyReport | None:
    """The cheap start-up verification; warns the user when it finds damage. Never raises."""
    try:
        report = await verify_in_background(store_dir)
    except Exception as exc:  # a failed check must not take the server down
        log.warning("store verification at start-up failed: %s", exc)
        return None
    if not report.ok:
        message = damage_summary(report)
        log.warning("%s", message)
        server.protocol.notify(
            lsp.WINDOW_SHOW_MESSAGE, lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=message)
        )
    return report


_running: set[asyncio.Task[VerifyReport | None]] = set()
"""Start-up checks in flight (a reference keeps each task alive until it ends)."""


def start_background_check(server: ServerPort, store_dir: Path) -> None:
    task = asyncio.get_running_loop().create_task(background_check(server, store_dir))
    _running.add(task)
    task.add_done_callback(_running.discard)


async def collect_garbage(server: ServerPort, services: Services) -> GcReport:
    """Apply retention and delete unreferenced blobs through the gate; the timeline rebuilds."""
    from retrace.lsp.services import timeline  # it imports the agent: loaded on use

    for session_id in await services.run(lambda e: e.sessions()):
        if services.agent.running(session_id):
            raise RetraceError(f"the agent is running in session {session_id}; cancel it before collecting")

    def gc(engine: Engine) -> tuple[GcReport, str]:
        # Checked inside the gate: no restore step can run between this check and the collection.
        if in_flight(services):
            raise RetraceError("a restore is in progress; collect garbage after it")
        report = collect_all(engine)  # the main store, then its subagent stores
        timeline.cache_of(engine).invalidate()
        return report, engine.head.id

    report, head = await services.run(gc)
    server.send_notification("retrace/timeline/didChange", TimelineDidChange(head=head))
    return report
