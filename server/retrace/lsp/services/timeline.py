"""Read-side queries: sessions, the timeline (a tree of stories), one checkpoint, file contents, diffs, stats.

Every engine call goes through ``Services.run`` (the engine gate shared with the agent).
Nothing here writes.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar
from weakref import WeakKeyDictionary

from retrace.agent.notifications import ConversationChanged, TurnStarted
from retrace.app.metrics.status_figures import status_figures
from retrace.app.timeline import StoryPages, TimelineCache, ToolFact, ToolLookup, UnknownCursorError, select
from retrace.app.timeline.pages import session_list
from retrace.app.timeline.persist import FILE_NAME
from retrace.bootstrap import Services
from retrace.engine import Engine
from retrace.engine.bookmark_name import bookmark_of, bookmarks
from retrace.engine.bookmarks import bookmarks_first, engine_bookmarks
from retrace.engine.capture.fs import read_regular
from retrace.engine.errors import PathOutsideWorkspace, RetraceError
from retrace.engine.models import Checkpoint
from retrace.engine.store.layout import StoreLayout
from retrace.protocol.bookmarks import Bookmark
from retrace.protocol.models import (
    CheckpointDetail,
    DiffParams,
    DiffResult,
    FileContentParams,
    FileContentResult,
    SessionInfo,
    StatsResult,
    TimelineDidChange,
    TimelineGetResult,
)
from retrace.protocol.tasks import TaskRef
from retrace.protocol.timeline import SessionStory, TimelineTreeParams, TimelineTreeResult
from retrace.text import ENCODING, decode_text, truncate_utf8_lines

T = TypeVar("T")
CURRENT = "current"
"""Pseudo checkpoint id: the workspace on disk now."""


log = logging.getLogger(__name__)

_CACHES: WeakKeyDictionary[Engine, TimelineCache] = WeakKeyDictionary()
SAVE_EVERY = 10.0
"""Seconds between two writes of the persisted timeline cache (a write follows a build that
folded a journal; one made sooner waits for the next request)."""
_SAVING = threading.Lock()


def cache_of(engine: Engine) -> TimelineCache:
    """The engine's built timeline (one per engine; used from the engine gate only), persisted
    in the store's cache folder unless the engine is read-only."""
    cache = _CACHES.get(engine)
    if cache is None:
        persisted = None if engine.readonly else StoreLayout(engine.store_dir).cache / FILE_NAME
        cache = _CACHES[engine] = TimelineCache(persisted, save_every=SAVE_EVERY)
    return cache


def _save(job: Callable[[], bool]) -> None:
    with _SAVING:
        try:
            job()
        except Exception:  # only a cache: the next start folds the journals
            log.exception("writing the timeline cache failed")


def built(services: Services, engine: Engine) -> dict[str, StoryPages]:
    """The engine's stories now; when a build folded journals, the persisted cache is written
    on a thread of its own (never on the engine gate). Run it in the engine gate."""
    cache = cache_of(engine)
    pages = cache.stories(engine, _tool_of(services))
    job = cache.snapshot()
    if job is not None:
        # Not a daemon: an exit waits for a write begun (a few tens of ms), so it is not lost.
        threading.Thread(target=_save, args=(job,), name="retrace-timeline-cache").start()
    return pages


def journal_changed(services: Services, event: TurnStarted | ConversationChanged) -> None:
    """Journal events no checkpoint shows: a turn began (its story gets it as the newest turn),
    a conversation moved (its story is rebuilt on the next request). Run it in the engine gate."""
    cache = cache_of(services.engine)
    if isinstance(event, TurnStarted) and event.turn_id is not None:
        cache.note_turn(event.session_id, event.turn_id, event.text, datetime.now(UTC))
    else:
        cache.invalidate(event.session_id)


def change_of(services: Services, engine: Engine, checkpoint: Checkpoint) -> TimelineDidChange | None:
    """The ``timeline/didChange`` for a committed checkpoint from the cached stories (``None``
    when the timeline was not built yet). Run it in the engine gate."""
    change = cache_of(engine).change(engine, checkpoint, _tool_of(services))
    if change is None or change.row is None:
        return change
    name = bookmark_of(checkpoint, engine.history.names)
    return change.model_copy(update={"row": change.row.model_copy(update={"bookmark": name})})


def _tool_of(services: Services) -> ToolLookup:
    def lookup(session_id: str, call_id: str) -> ToolFact | None:
        calls = services.agent.search_tool_calls(session_id=session_id)
        view = next((c for c in reversed(calls) if c.id == call_id), None)
        return ToolFact(view.id, view.tool, view.input, view.status) if view is not None else None

    return lookup


async def on_engine(services: Services, task: TaskRef | None, query: Callable[[Engine], T]) -> T:
    """``query(engine)`` on the workspace's engine (through the gate), or on a subagent's own
    store when ``task`` names one."""
    if task is None:
        return await services.run(query)
    return await services.agent.tasks.read(task.session_id, task.task_id, query)


def _stories(services: Services, engine: Engine, params: TimelineTreeParams) -> list[SessionStory]:
    """The stories a request asks for, paged from the engine's cached build."""
    pages = built(services, engine)
    running = services.agent.running_sessions()
    try:
        return select(list(pages.values()), params, running, named=engine_bookmarks(engine))
    except UnknownCursorError:
        raise RetraceError(f"unknown timeline cursor {str(params.before)[:100]!r}") from None


async def sessions(services: Services) -> list[SessionInfo]:
    """Every story's session (agent sessions plus one workspace story), oldest first."""

    def query(engine: Engine) -> list[SessionInfo]:
        running = services.agent.running_sessions()
        return session_list(list(built(services, engine).values()), running, datetime.now(UTC))

    return await services.run(query)


async def tree(services: Services, params: TimelineTreeParams) -> TimelineTreeResult:
    """The timeline as the client renders it: every story's newest page, an outline plus one
    page, an older page of one story, or the rows matching a filter (see ``TimelineTreeParams``)."""
    if params.before is not None and params.session_id is None:
        raise RetraceError("a timeline cursor (before) needs the session id")

    def query(engine: Engine) -> TimelineTreeResult:
        stories = _stories(services, engine, params)
        if params.session_id is not None and not stories and params.filter is None:
            raise RetraceError(f"unknown session id {params.session_id[:100]!r}")
        head = engine.head.id
        holder = cache_of(engine).story_of(head)
        return TimelineTreeResult(sessions=stories, head=head, head_session_id=holder)

    return await on_engine(services, params.task, query)


async def timeline(services: Services, session_id: str | None) -> TimelineGetResult:
    infos = await sessions(services)

    def query(engine: Engine) -> TimelineGetResult:
        if session_id is not None and session_id not in engine.sessions():
            raise RetraceError(f"unknown session id {session_id!r}")
        checkpoints = engine.timeline(session_id)
        named = bookmarks(checkpoints, engine.history.names)
        order = bookmarks_first([c.id for c in reversed(checkpoints)], named)
        marks = [Bookmark(checkpoint_id=c, name=named[c]) for c in order if c in named]
        return TimelineGetResult(
            checkpoints=checkpoints, head=engine.head.id, sessions=infos, bookmarks=marks
        )

    return await services.run(query)


def _detail(engine: Engine, checkpoint: Checkpoint) -> CheckpointDetail:
    checkpoint = engine.count_lines(checkpoint.id)  # counts left out at commit time, bounded
    return CheckpointDetail(
        checkpoint=checkpoint,
        is_head=engine.head.id == checkpoint.id,
        files_changed=len(checkpoint.files),
        additions=sum(f.additions for f in checkpoint.files),
        deletions=sum(f.deletions for f in checkpoint.files),
    )


async def checkpoint_detail(services: Services, cp_id: str, task: TaskRef | None = None) -> CheckpointDetail:
    return await on_engine(services, task, lambda e: _detail(e, e.get(cp_id)))


def workspace_file(workspace: Path, rel: str) -> Path:
    """The absolute path of a workspace-relative path; refuses anything outside the workspace."""
    if not rel or "\x00" in rel or Path(rel).is_absolute():
        raise PathOutsideWorkspace(rel[:200])
    try:
        os.fsencode(rel)
    except UnicodeEncodeError:
        raise RetraceError(f"{rel[:200]!r} is not a valid file name") from None
    root = workspace.resolve()
    candidate = root / rel
    parent = candidate.parent.resolve()
    if parent != root and root not in parent.parents:
        raise PathOutsideWorkspace(rel)
    return parent / candidate.name


def _decode(data: bytes) -> FileContentResult:
    text = decode_text(data)
    binary = text is None
    return FileContentResult(
        exists=True,
        text=text,
        binary=binary,
        encoding=None if binary else ENCODING,
        size=len(data),
        unstored=None,
    )


_ABSENT = FileContentResult(exists=False, text=None, binary=False, encoding=None, size=0, unstored=None)


async def file_content(services: Services, params: FileContentParams) -> FileContentResult:
    if params.id == CURRENT:
        root = services.workspace
        if params.task is not None:
            root = await on_engine(services, params.task, lambda e: e.workspace)
        path = workspace_file(root, params.path)

        def read_now() -> bytes | None:
            try:
                if path.is_symlink():
                    return str(path.readlink()).encode()
                if path.exists() and not path.is_file():  # a FIFO would block, a device never end
                    raise RetraceError(f"{params.path} is not a regular file")
                return read_regular(str(path))  # never blocks: it may have become a FIFO
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                return None
            except OSError as exc:  # e.g. a name too long for the file system
                raise RetraceError(f"cannot read {params.path[:200]}: {exc.strerror}") from None

        data = await services.run(lambda _e: read_now())
        return _ABSENT if data is None else _decode(data)

    def read_at(engine: Engine) -> FileContentResult:
        checkpoint = engine.get(params.id)
        try:
            data = engine.file_content(checkpoint.id, params.path)
        except RetraceError as exc:
            return FileContentResult(
                exists=True, text=None, binary=False, encoding=None, size=0, unstored=str(exc)
            )
        return _ABSENT if data is None else _decode(data)

    return await on_engine(services, params.task, read_at)


async def diff(services: Services, params: DiffParams) -> DiffResult:
    def query(engine: Engine) -> DiffResult:
        old = engine.get(params.from_).id
        new = None if params.to in (None, CURRENT) else engine.get(params.to).id
        files = engine.diff(old, new)
        if params.paths is not None:
            wanted = set(params.paths)
            files = [f for f in files if f.path in wanted or f.old_path in wanted]
        patch = engine.unified_diff(old, new, params.paths)
        patch, truncated = truncate_utf8_lines(patch, params.max_patch_bytes)
        return DiffResult(files=files, patch=patch, truncated=truncated)

    return await on_engine(services, params.task, query)


async def stats(services: Services) -> StatsResult:
    """The status bar's figures: the metrics' incremental fold (``app/metrics/status_figures.py``;
    no journal read whole, no conversation folded), the blob count from the engine's blob store."""
    blob_usage = await services.run(lambda e: e.blobs.usage())
    layout = StoreLayout(services.engine.store_dir)
    return await asyncio.to_thread(status_figures, layout, blob_usage)
