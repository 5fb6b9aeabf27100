"""Replay every session journal into a :class:`History`, keeping damage local.

A bad line (garbage, truncated JSON, wrong schema, NUL bytes) loses only what it held: other
lines still load. A checkpoint whose manifest can no longer be rebuilt — its own entry or an
ancestor's (up to the nearest snapshot) is unreadable, or its snapshot blob is missing — stays
in the timeline marked damaged with the reason; checkpoints after a later snapshot are intact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrace.engine.history.graph import History
from retrace.engine.manifest import Delta, delta_from_json
from retrace.engine.models import Checkpoint
from retrace.engine.store.journal import journal_lines
from retrace.engine.store.layout import StoreLayout

_ID_IN_LINE = re.compile(rb'"checkpoint"\s*:\s*\{[^{}]*?"id"\s*:\s*"([0-9a-z]{4,40})"')


@dataclass
class _Parsed:
    cp: Checkpoint
    delta: Delta | None
    snapshot: str | None


@dataclass
class ReplayReport:
    problems: list[str] = field(default_factory=list)
    """One line per piece of damage found (``path:line: reason`` or ``checkpoint …: reason``)."""
    lost: dict[str, str] = field(default_factory=dict)
    """Checkpoint ids whose own journal entry is unreadable → where and why."""
    bad_lines: list[BadLine] = field(default_factory=list)
    lines: int = 0
    """Journal lines read (blank ones and torn tails excluded)."""


@dataclass(frozen=True)
class BadLine:
    """A damaged journal line: where, why, and whose checkpoint it held (when known)."""

    path: Path
    number: int
    reason: str
    checkpoint_id: str | None
    malformed_checkpoint: bool


def _parse_checkpoint(ev: dict[str, Any]) -> _Parsed:
    """A checkpoint event's content; ``ValueError`` (or ``KeyError``/``TypeError``) if malformed."""
    cp = Checkpoint.model_validate(ev["checkpoint"])
    if cp.damage is not None:
        cp = cp.model_copy(update={"damage": None})
    raw_delta = ev.get("delta")
    if raw_delta is not None and not isinstance(raw_delta, dict):
        raise ValueError("delta is not an object")
    delta = delta_from_json(raw_delta) if isinstance(raw_delta, dict) else None
    snap = ev.get("snapshot")
    if snap is not None and not (isinstance(snap, str) and re.fullmatch(r"[0-9a-f]{64}", snap)):
        raise ValueError("snapshot is not a blob id")
    if delta is None and snap is None:
        raise ValueError("neither delta nor snapshot")
    return _Parsed(cp, delta, snap)


def _salvage_id(raw: bytes, ev: dict[str, Any] | None) -> str | None:
    if ev is not None:
        cp = ev.get("checkpoint")
        if isinstance(cp, dict) and isinstance(cp.get("id"), str):
            return str(cp["id"])
    m = _ID_IN_LINE.search(raw)
    return m.group(1).decode() if m else None


def _read_all(layout: StoreLayout, report: ReplayReport) -> dict[str, _Parsed]:
    parsed: dict[str, _Parsed] = {}
    for sid in layout.session_ids():
        path = layout.journal(sid)
        for line in journal_lines(path):
            if line.torn_tail:
                continue
            report.lines += 1
            ev = line.event
            is_cp = ev is not None and ev.get("type") == "checkpoint"
            if ev is not None and not is_cp:
                continue
            where = f"{path}:{line.number}"
            if ev is None:
                reason = f"unreadable journal line ({line.error})"
            else:
                try:
                    p = _parse_checkpoint(ev)
                except (ValueError, KeyError, TypeError) as exc:
                    reason = f"malformed checkpoint entry ({str(exc).splitlines()[0]})"
                else:
                    parsed[p.cp.id] = p
                    continue
            report.problems.append(f"{where}: {reason}")
            cid = _salvage_id(line.raw, ev)
            report.bad_lines.append(BadLine(path, line.number, reason, cid, ev is not None))
            if cid is not None:
                report.lost[cid] = f"its journal entry is damaged ({where})"
    return parsed


def replay(layout: StoreLayout, history: History, present: set[str]) -> ReplayReport:
    """Load every journal under ``layout`` into ``history`` (which must be empty).
    ``present``: ids of the stored blobs (a snapshot not among them is damage)."""
    report = ReplayReport()
    parsed = _read_all(layout, report)
    for cid in sorted(parsed):
        p = parsed[cid]
        cp = p.cp
        parent_depth = history.snap_depth.get(cp.parent or "", 0)
        history.add(cp, p.delta, p.snapshot, parent_depth + 1 + len(p.delta or ()))
        reason = _damage(history, cp, p, report, present)
        if reason is not None:
            history.mark_damaged(cid, reason)
    if history.damage:
        report.problems.append(
            f"{len(history.damage)} checkpoint(s) cannot be restored because the store is damaged: "
            + _shown(sorted(history.damage))
        )
    return report


def _damage(
    history: History, cp: Checkpoint, p: _Parsed, report: ReplayReport, present: set[str]
) -> str | None:
    """Why ``cp``'s manifest cannot be rebuilt, or ``None`` (its ancestors are already replayed)."""
    if p.snapshot is not None:
        return None if p.snapshot in present else f"its manifest snapshot {p.snapshot} is missing"
    parent = cp.parent
    if parent is None:
        return "it has no parent and no manifest snapshot"
    if parent in history.damage:
        return f"it depends on damaged checkpoint {parent}"
    if parent not in history.cps:
        lost = report.lost.get(parent)
        return f"its parent checkpoint {parent} is lost: " + (lost or "no readable journal entry")
    return None


def _shown(ids: list[str]) -> str:
    return ", ".join(ids[:5]) + (" …" if len(ids) > 5 else "")
