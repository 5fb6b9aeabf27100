"""Who wrote which lines: the line attribution of every file at checkpoint B over a range A..B,
as an Agent Trace record (:mod:`retrace.protocol.handoff`).

Walk B's ancestry from A (default: its root) to B. The range is A..B as git reads it (A
excluded): every line present at A predates the range and is attributed to A as ``unknown``.
At each later checkpoint the paths it changed are diffed with the engine's bounded line diff
(:func:`retrace.engine.line_stats.line_opcodes`): unchanged lines keep their owner, inserted or
replaced lines belong to that checkpoint. The contributor type follows the checkpoint's kind:
an agent ``tool`` call is ``ai``; ``external``, ``safety`` and ``manual`` checkpoints are
``human`` (someone else's edits); a ``baseline``, ``background`` command, ``restore`` or
``summary`` is ``unknown`` (a background command's changes may hold the user's edits made
meanwhile; a restore brings back lines whose author it does not know).

Bounded: one time budget (:data:`ATTRIBUTION_BUDGET_S`) for all line diffs; past it a changed
file's new lines are attributed wholesale to the checkpoint that changed it and the file is
listed as ``approximate``. Files that are not text (binary, symlinks) get no line ranges (their
owner is in ``fileOwners``).
"""

from __future__ import annotations

import itertools
import time
import uuid
from datetime import UTC, datetime

from retrace import __version__
from retrace.engine import Engine
from retrace.engine.errors import RetraceError
from retrace.engine.line_stats import line_opcodes
from retrace.engine.models import Checkpoint, CheckpointKind
from retrace.engine.store.events import TurnEvent
from retrace.protocol.handoff import (
    ContributorType,
    RetraceCheckpointInfo,
    RetraceTraceMeta,
    TraceContributor,
    TraceConversation,
    TraceFile,
    TraceRange,
    TraceRecord,
    TraceRelated,
    TraceTool,
)
from retrace.text import decode_text

ATTRIBUTION_BUDGET_S = 10.0
"""Time all line diffs of one attribution may take together."""

CONTRIBUTOR: dict[CheckpointKind, ContributorType] = {
    "tool": "ai",
    "external": "human",
    "safety": "human",
    "manual": "human",
    "baseline": "unknown",
    "background": "unknown",
    "restore": "unknown",
    "summary": "unknown",
}
META_KEY = "dev.retrace"

_Lines = tuple[list[str], list[str]]  # (lines, owner checkpoint id per line)


def _chain(engine: Engine, a: str | None, b: str) -> list[Checkpoint]:
    """A (or B's root) then every checkpoint after it up to B, oldest first."""
    chain: list[Checkpoint] = []
    cur: Checkpoint | None = engine.get(b)
    while cur is not None:
        chain.append(cur)
        if cur.id == a:
            break
        cur = engine.get(cur.parent) if cur.parent else None
    if a is not None and chain[-1].id != a:
        raise RetraceError(f"checkpoint {a} is not an ancestor of {b}")
    chain.reverse()
    return chain


def _text_lines(engine: Engine, cp_id: str, path: str) -> list[str] | None:
    entry = engine.entries_at(cp_id, [path])[path]
    if entry is None or entry.kind != "file":
        return None
    data = engine.content(entry)
    text = decode_text(data) if data is not None else None
    return text.splitlines(keepends=True) if text is not None else None


class _Walk:
    def __init__(self, engine: Engine, start: Checkpoint) -> None:
        self.engine = engine
        self.deadline = time.perf_counter() + ATTRIBUTION_BUDGET_S
        self.owner: dict[str, str] = dict.fromkeys(engine.manifest(start.id), start.id)
        self.lines: dict[str, _Lines] = {}  # files changed in the range (others: whole-file owner)
        self.approximate: set[str] = set()
        self.start = start.id

    def step(self, prev: str, cp: Checkpoint) -> None:
        changed = self.engine.changed_between(prev, cp.id)
        for path in sorted(changed):
            new = _text_lines(self.engine, cp.id, path)
            entry = self.engine.entries_at(cp.id, [path])[path]
            if entry is None:
                self.owner.pop(path, None)
                self.lines.pop(path, None)
                continue
            self.owner[path] = cp.id
            if new is None:
                self.lines.pop(path, None)
                continue
            old = self.lines.get(path)
            if old is None:
                old_lines = _text_lines(self.engine, prev, path) or []
                old = (old_lines, [self.start] * len(old_lines))
            self.lines[path] = self._carry(path, old, new, cp.id)

    def _carry(self, path: str, old: _Lines, new: list[str], cp_id: str) -> _Lines:
        ops, approximate = line_opcodes(old[0], new, deadline=self.deadline)
        if approximate:
            self.approximate.add(path)
        owners: list[str] = []
        for tag, i1, i2, j1, j2 in ops:
            owners.extend(old[1][i1:i2] if tag == "equal" else [cp_id] * (j2 - j1))
        return new, owners


def _ranges(owners: list[str]) -> list[tuple[str, int, int]]:
    out: list[tuple[str, int, int]] = []
    for i, o in enumerate(owners, start=1):
        if out and out[-1][0] == o and out[-1][2] == i - 1:
            out[-1] = (o, out[-1][1], i)
        else:
            out.append((o, i, i))
    return out


def attribution(engine: Engine, a: str | None, b: str) -> TraceRecord:
    chain = _chain(engine, a, b)
    walk = _Walk(engine, chain[0])
    for prev, cp in itertools.pairwise(chain):
        walk.step(prev.id, cp)
    files: list[TraceFile] = []
    binary: list[str] = []
    used: set[str] = set(walk.owner.values())
    for path in sorted(walk.owner):
        got = walk.lines.get(path)
        if got is None:
            lines = _text_lines(engine, b, path)
            if lines is None:
                binary.append(path)
                continue
            got = (lines, [walk.owner[path]] * len(lines))
        by_cp: dict[str, list[TraceRange]] = {}
        for owner, start, end in _ranges(got[1]):
            by_cp.setdefault(owner, []).append(TraceRange(start_line=start, end_line=end))
            used.add(owner)
        convs = [_conversation(engine.get(c), r, before_range=c == walk.start) for c, r in by_cp.items()]
        files.append(TraceFile(path=path, conversations=convs))
    return TraceRecord(
        id=str(uuid.uuid4()),
        timestamp=datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        tool=TraceTool(name="retrace", version=__version__),
        files=files,
        metadata={
            META_KEY: RetraceTraceMeta(
                from_checkpoint=a,
                to_checkpoint=chain[-1].id,
                checkpoints=_infos(engine, sorted(used)),
                approximate=sorted(walk.approximate),
                binary=binary,
                file_owners=dict(sorted(walk.owner.items())),
            )
        },
    )


def _conversation(cp: Checkpoint, ranges: list[TraceRange], *, before_range: bool) -> TraceConversation:
    """Lines already present at the range's start predate the range: their author is ``unknown``."""
    who: ContributorType = "unknown" if before_range else CONTRIBUTOR.get(cp.kind, "unknown")
    return TraceConversation(
        contributor=TraceContributor(type=who),
        ranges=ranges,
        related=[TraceRelated(type="checkpoint", url=f"retrace:checkpoint/{cp.id}")],
    )


def _infos(engine: Engine, ids: list[str]) -> dict[str, RetraceCheckpointInfo]:
    prompts: dict[str, dict[str, str]] = {}
    out: dict[str, RetraceCheckpointInfo] = {}
    for cid in ids:
        cp = engine.get(cid)
        if cp.session_id not in prompts:
            prompts[cp.session_id] = {
                e.turn_id: e.text
                for e in engine.events(cp.session_id, only=(TurnEvent,))
                if isinstance(e, TurnEvent)
            }
        out[cid] = RetraceCheckpointInfo(
            kind=cp.kind,
            tool=cp.tool,
            session_id=cp.session_id,
            turn_id=cp.turn_id,
            prompt=prompts[cp.session_id].get(cp.turn_id or ""),
            created_at=cp.created_at.isoformat(),
        )
    return out
