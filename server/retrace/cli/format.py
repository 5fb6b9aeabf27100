"""Text rendering of engine models for the ``retrace`` command line.

Pure functions: engine model in, text out (no I/O), so every command formats the same concept the
same way. JSON output does not go through here: it is :func:`retrace.camel.dump` of the models.

Every file name is written through :func:`quote_name` and every other text from stored or received
data (labels, reasons, details, errors) through :func:`terminal_text` (both ``retrace.text``: git's
``core.quotePath`` rule, printable UTF-8 kept readable); :func:`say` is how a command prints for
people, and it escapes whatever control character is left, so nothing a file name or a journal
holds can move the cursor, erase a line or forge one.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, assert_never

from retrace.camel import dump
from retrace.engine.models import (
    Checkpoint,
    FileChange,
    FileOutcome,
    FileStatus,
    GcReport,
    LatencySummary,
    NothingToRestore,
    PlanCounts,
    PlannedFile,
    RestoreApplied,
    RestoreConflict,
    RestoreFailed,
    RestoreOutcome,
    RestorePlan,
    RestorePreview,
    StoreStats,
    VerifyReport,
)
from retrace.text import quote_name, shell_word, terminal_text

if TYPE_CHECKING:
    from retrace.protocol.file_history import FileVersion

__all__ = ["quote_name", "say", "shell_word", "terminal_text"]

_STATUS_LETTER: dict[FileStatus, str] = {"added": "A", "modified": "M", "deleted": "D", "renamed": "R"}


def say(text: str = "", *, err: bool = False) -> None:
    """Print one piece of human-readable output (stdout, or stderr with ``err``): its own line
    breaks are kept, every other unsafe character is escaped (:func:`terminal_text`)."""
    print(terminal_text(text, keep_newlines=True), file=sys.stderr if err else sys.stdout)


def human_bytes(n: int) -> str:
    """``1536`` → ``"1.5 KiB"`` (binary units, one decimal above bytes)."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def local_time(ts: datetime) -> str:
    return ts.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def change_summary(files: Sequence[FileChange]) -> str:
    """``"3 files +12 -4"`` (binary files count as files but have no line counts)."""
    if not all(f.counted for f in files):
        return f"{plural(len(files), 'file')} (lines not counted yet)"
    adds = sum(f.additions for f in files)
    dels = sum(f.deletions for f in files)
    approx = "~" if any(f.approximate for f in files) else ""
    return f"{plural(len(files), 'file')} {approx}+{adds} -{dels}"


def change_counts(change: FileChange) -> str:
    """``+12 -4``; ``~+12 -4`` when the counts are an estimate (their time budget ran out)."""
    if change.binary:
        return "binary"
    if not change.counted:
        return "lines not counted yet"
    return f"{'~' if change.approximate else ''}+{change.additions} -{change.deletions}"


def recoverability_note(cp: Checkpoint) -> str:
    """Empty for ``full``; otherwise the label with each file that cannot be restored and why
    (or, for a checkpoint the store's damage made unrecoverable, that reason)."""
    if cp.damage is not None:
        return f"damaged, cannot be restored: {terminal_text(cp.damage)}"
    match cp.recoverability:
        case "full":
            return ""
        case "partial" | "none":
            what = "; ".join(f"{quote_name(u.path)}: {terminal_text(u.reason)}" for u in cp.unrecoverable)
            return f"{cp.recoverability}: {what}" if what else cp.recoverability
        case other:
            assert_never(other)


def checkpoint_title(cp: Checkpoint, width: int = 72) -> str:
    """The label (else tool, else what was restored) on one line, at most ``width`` characters."""
    title = cp.label or cp.tool or (f"restore of {cp.restored_from}" if cp.restored_from else "-")
    title = terminal_text(" ".join(title.split()))
    return title if len(title) <= width else title[: width - 1] + "…"


def checkpoint_line(cp: Checkpoint, *, is_head: bool, bookmark: str | None = None) -> str:
    """One timeline line: head marker, id, time, kind, title, change counts, recoverability, and
    its bookmark name when it has one."""
    marker = "*" if is_head else " "
    note = recoverability_note(cp)
    tail = f"  [{note}]" if note else ""
    head = "  (head)" if is_head else ""
    named = f"  bookmark: {terminal_text(bookmark)}" if bookmark else ""
    return (
        f"{marker} {cp.id}  {local_time(cp.created_at)}  {cp.kind:<8}  {checkpoint_title(cp)}"
        f"  {change_summary(cp.files)}{tail}{head}{named}"
    )


def file_version_line(version: FileVersion) -> str:
    """One line of ``retrace log --path``: id, time, kind, what happened to the file, title."""
    return (
        f"  {version.checkpoint_id}  {local_time(version.created_at)}  {version.kind:<8}  "
        f"{terminal_text(version.summary or version.change):<24}  {terminal_text(version.title)}"
    )


def file_change_line(change: FileChange) -> str:
    letter = _STATUS_LETTER[change.status]
    path = _names(change.path, change.old_path)
    counts = change_counts(change)
    return f"{letter} {path}  {counts}"


def _names(path: str, old_path: str | None) -> str:
    """``path``, or ``old -> new`` for a rename; each name quoted when unusual."""
    return f"{quote_name(old_path)} -> {quote_name(path)}" if old_path else quote_name(path)


def checkpoint_details(cp: Checkpoint, *, is_head: bool) -> str:
    """``retrace show``: every field a person needs, then the changed files."""
    rows: list[tuple[str, str]] = [
        ("kind", cp.kind + (f" ({cp.tool})" if cp.tool else "")),
        ("label", cp.label or "-"),
        ("created", local_time(cp.created_at)),
        ("session", cp.session_id),
        ("parent", cp.parent or "-"),
    ]
    if cp.turn_id:
        rows.append(("turn", cp.turn_id))
    if cp.restored_from:
        rows.append(("restored from", cp.restored_from))
    if cp.conversation:
        rows.append(("conversation", cp.conversation))
    rows.append(("recoverability", recoverability_note(cp) or "full"))
    rows.append(("capture", f"{cp.capture_ms:.1f} ms"))
    width = max(len(k) for k, _ in rows) + 1
    lines = [f"checkpoint {cp.id}" + ("  (head)" if is_head else "")]
    lines += [f"  {k + ':':<{width}} {terminal_text(v)}" for k, v in rows]
    lines.append(f"  files: {change_summary(cp.files)}")
    lines += [f"    {file_change_line(f)}" for f in cp.files]
    return "\n".join(lines)


def diff_stat(changes: Sequence[FileChange]) -> str:
    """``git diff --stat``-like: one line per file, then the totals."""
    if not changes:
        return "no changes"
    lines = [f"  {file_change_line(c)}" for c in changes]
    lines.append(change_summary(changes))
    return "\n".join(lines)


def checkpoint_json(cp: Checkpoint, *, is_head: bool, bookmark: str | None = None) -> dict[str, Any]:
    """The checkpoint's camelCase JSON plus ``head``: whether the workspace currently matches it,
    and ``bookmark``: its name, when it is one."""
    out = {**dump(cp), "head": is_head}
    if bookmark:
        out["bookmark"] = bookmark
    return out


# --------------------------------------------------------------------------- restore


def counts_summary(counts: PlanCounts) -> str:
    parts = [
        f"{value} {name}"
        for name, value in (
            ("create", counts.create),
            ("overwrite", counts.overwrite),
            ("delete", counts.delete),
            ("rename", counts.rename),
            ("chmod", counts.chmod),
            ("conflict", counts.conflict),
        )
        if value
    ]
    return ", ".join(parts) or "no file changes"


def outcome_counts(files: Sequence[FileOutcome]) -> str:
    """``"2 restored, 1 merged"``: what happened to the files, in a fixed order."""
    order = ("restored", "merged", "skipped", "unchanged", "conflict", "failed")
    counts = {status: sum(1 for f in files if f.status == status) for status in order}
    return ", ".join(f"{n} {status}" for status, n in counts.items() if n) or "no file changes"


def _planned_line(p: PlannedFile) -> str:
    path = _names(p.path, p.from_path)
    if p.action == "conflict" and p.conflict is not None:
        merge = "; a clean 3-way merge is available" if p.conflict.merged_text is not None else ""
        intended = f" (would {p.intended})" if p.intended else ""
        detail = terminal_text(p.conflict.detail)
        return f"  conflict   {path}{intended}: {terminal_text(p.conflict.reason)}: {detail}{merge}"
    return f"  {p.action:<10} {path}"


def _outcome_line(f: FileOutcome) -> str:
    detail = f"  ({terminal_text(f.detail)})" if f.detail else ""
    return f"  {f.action:<10} {f.status:<9} {quote_name(f.path)}{detail}"


def _unrecoverable_lines(plan: RestorePlan | None) -> list[str]:
    if plan is None or not plan.unrecoverable:
        return []
    lines = ["Not restorable (content was never stored):"]
    lines += [f"  {quote_name(u.path)}: {terminal_text(u.reason)}" for u in plan.unrecoverable]
    return lines


def _kept_lines(plan: RestorePlan | None) -> list[str]:
    if plan is None or not plan.kept:
        return []
    return ["Left untouched on purpose:"] + [
        f"  {quote_name(k.path)}: {terminal_text(k.reason)}" for k in plan.kept
    ]


def conflict_way_out(plan: RestorePlan | None) -> str:
    """How to get past conflicts: per-file ``--resolve`` (merge first when clean) or ``--force``."""
    conflicts = [p for p in plan.files if p.action == "conflict"] if plan else []
    if not conflicts:
        return "Re-run with --force to overwrite, or --resolve PATH=overwrite|skip|merge per file."
    example = conflicts[0]
    choice = "merge" if example.conflict and example.conflict.merged_text is not None else "skip"
    return (
        f"Way out: decide per file with --resolve, e.g. --resolve {shell_word(f'{example.path}={choice}')} "
        "(overwrite | skip | merge), or --force to overwrite every conflicting file."
    )


def restore_report(outcome: RestoreOutcome) -> str:
    """A readable plan (dry run) or outcome with per-file actions, counts and the way forward."""
    target = f"{outcome.target_id} ({outcome.mode})"
    lines: list[str]
    match outcome:
        case RestorePreview():
            plan = outcome.plan
            counts = counts_summary(plan.counts) if plan else "no file changes"
            lines = [f"Dry run: restoring {target} would change: {counts}."]
            lines += [_planned_line(p) for p in (plan.files if plan else [])]
            lines.append("Nothing was changed.")
        case RestoreApplied():
            lines = [f"Restored {target}: {outcome_counts(outcome.files)}."]
            lines += [_outcome_line(f) for f in outcome.files]
            if outcome.safety_checkpoint_id:
                safety = outcome.safety_checkpoint_id
                lines.append(f"Unrecorded changes were saved first in checkpoint {safety}.")
            if outcome.checkpoint is not None:
                lines.append(f"New checkpoint: {outcome.checkpoint.id}.")
                if outcome.checkpoint.parent:
                    lines.append(f"Undo with: retrace restore {outcome.checkpoint.parent}")
        case RestoreConflict():
            plan = outcome.plan
            conflicts = [p for p in plan.files if p.action == "conflict"] if plan else []
            prefix = "Dry run: " if outcome.dry_run else ""
            lines = [
                f"{prefix}Restoring {target} would overwrite work that is not the agent's "
                f"({plural(len(conflicts), 'conflicting file')}); nothing was changed."
            ]
            lines += [_planned_line(p) for p in (plan.files if plan else [])]
            lines.append(conflict_way_out(plan))
        case NothingToRestore():
            reason = f" ({terminal_text(outcome.reason)})" if outcome.reason else ""
            lines = [f"Nothing to restore: the workspace already matches {target} in scope{reason}."]
        case RestoreFailed():
            state = "rolled back" if outcome.rolled_back else "NOT rolled back"
            error = terminal_text(outcome.error)
            lines = [f"Restore of {target} failed: {error} (the workspace was {state})."]
            lines += [_outcome_line(f) for f in outcome.files]
        case other:
            assert_never(other)
    lines += _unrecoverable_lines(outcome.plan) + _kept_lines(outcome.plan)
    return "\n".join(lines)


def restore_exit_code(outcome: RestoreOutcome) -> int:
    """0 applied / nothing to restore / any dry run, 3 conflict, 1 failed."""
    match outcome:
        case RestorePreview() | RestoreApplied() | NothingToRestore():
            return 0
        case RestoreConflict():
            return 0 if outcome.dry_run else 3
        case RestoreFailed():
            return 1
        case other:
            assert_never(other)


# --------------------------------------------------------------------------- housekeeping


def _latency(name: str, s: LatencySummary) -> str:
    if s.count == 0:
        return f"  {name}: no samples"
    return (
        f"  {name}: p50 {s.p50_ms:.1f} ms, p95 {s.p95_ms:.1f} ms, p99 {s.p99_ms:.1f} ms "
        f"({plural(s.count, 'sample')})"
    )


def stats_report(stats: StoreStats, *, store_dir: str) -> str:
    ok, total = stats.restores_succeeded, stats.restores
    rate = f"{ok}/{total} ({100.0 * ok / total:.0f} %)" if total else "no restores yet"
    lines = [
        f"store {quote_name(store_dir)}",
        f"  storage: {human_bytes(stats.total_bytes)} total "
        f"(blobs {human_bytes(stats.blob_bytes)} compressed from {human_bytes(stats.raw_bytes)}, "
        f"journals {human_bytes(stats.journal_bytes)})",
        f"  checkpoints: {stats.checkpoints} in {plural(stats.sessions, 'session')}, "
        f"{plural(stats.blobs, 'blob')}",
        _latency("capture latency", stats.capture),
        _latency("restore latency", stats.restore),
        f"  restore success: {rate}",
    ]
    sub = stats.subagents
    if sub.started:
        ends = ", ".join(f"{n} {status}" for status, n in sorted(sub.by_status.items()))
        lines.append(
            f"  subagents: {sub.started} ({ends}); {plural(sub.conflicts, 'merge conflict')}; "
            f"up to {sub.max_parallel} in parallel; server peak RSS {sub.peak_rss_mib:.0f} MiB; "
            f"{human_bytes(sub.bytes)} of their own stores and copies"
        )
    return "\n".join(lines)


def gc_report(report: GcReport) -> str:
    text = (
        f"Dropped {plural(report.checkpoints_dropped, 'checkpoint')}, "
        f"removed {plural(report.blobs_removed, 'blob')}, freed {human_bytes(report.bytes_freed)}."
    )
    if report.subagent_stores_dropped:
        text += f" Dropped {plural(report.subagent_stores_dropped, 'finished subagent store')}."
    return "\n".join([text, *(f"Skipped {terminal_text(note)}" for note in report.notes)])


def verify_report(report: VerifyReport, *, store_dir: str) -> str:
    """Human summary of ``retrace verify``: what was checked, the damage, who it affects."""
    what = "quick check (journals, blob presence)" if report.quick else "full check"
    lines = [
        f"Store {quote_name(store_dir)}: {what} of {plural(report.journal_lines, 'journal line')}, "
        f"{plural(report.checkpoints, 'checkpoint')}, {plural(report.blobs, 'blob')}."
    ]
    if report.remote_blobs:
        lines.append(f"  {plural(report.remote_blobs, 'blob')} only in the remote (fetched when needed).")
    for d in report.damage:
        owner = f" (checkpoint {d.checkpoint_id})" if d.checkpoint_id else ""
        lines.append(f"  damaged {d.kind} {quote_name(d.where)}{owner}: {terminal_text(d.reason)}")
    if report.affected:
        lines.append(f"{plural(len(report.affected), 'checkpoint')} cannot be fully restored:")
        lines += [f"  {a.id}: {terminal_text(a.reason)}" for a in report.affected]
    if report.repaired:
        lines.append(f"Repaired (damaged pieces kept in {quote_name(str(report.quarantine))}):")
        lines += [f"  {terminal_text(r)}" for r in report.repaired]
    if report.ok:
        lines.append("No damage found." if not report.repaired else "No damage remains.")
    elif not report.repaired:
        lines.append(
            "Damage found. 'retrace verify --repair' quarantines it (stop the editor's server first)."
        )
    return "\n".join(lines)
