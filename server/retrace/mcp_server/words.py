"""What ``retrace mcp`` says: each tool's description (what the calling model reads to choose
it) and the short text of each answer (the structured content carries the same facts)."""

from __future__ import annotations

from retrace.mcp_server.models import CheckpointRow, CreateResult, ListResult, RestoreResult, ShowResult
from retrace.text import quote_name, terminal_text

LIST = (
    "List Retrace checkpoints of this workspace, newest first. Retrace records a checkpoint after "
    "every tool call of the coding agents it watches (Claude Code, Gemini CLI, its own), changes "
    "made by others in between, and named checkpoints. Filter by session, kind, tool, path, agent "
    "or text; page with limit (default 50, at most 500) and before (the previous answer's "
    "nextBefore). Each entry: id, session, kind, tool, label, time, files changed, agent."
)
SHOW = (
    "Show one checkpoint: what it changed as a unified diff against its parent (or against "
    'another checkpoint, or "workspace" for the files as they are now), optionally one file only. '
    "Long patches are cut at maxBytes with a note; binary files are named, not shown."
)
CREATE = (
    "Record a named checkpoint of the workspace now (every change since the last checkpoint), "
    "to come back to later with restore_checkpoint. Appears in the Retrace timeline."
)
RESTORE = (
    "Restore the workspace's files to a checkpoint. A DRY RUN unless confirm is true: it answers the "
    "plan (files to create, overwrite, delete) and the conflicts (files someone else changed since). "
    "With confirm: true the files change, all or nothing; a conflict refuses the whole restore unless "
    "resolutions decides that file (overwrite, skip or merge). A restore is itself a checkpoint: "
    "undo it by restoring the checkpoint named in its answer."
)


def _row(cp: CheckpointRow) -> str:
    who = f" [{cp.agent}]" if cp.agent else ""
    tool = f" {cp.tool}" if cp.tool else ""
    label = f" — {_one_line(cp.label)}" if cp.label else ""
    label += f" [bookmark: {_one_line(cp.bookmark)}]" if cp.bookmark else ""
    files = f"{cp.files_changed} file{'' if cp.files_changed == 1 else 's'}"
    when = cp.time.isoformat(timespec="seconds")
    return f"{cp.id}  {when}  {cp.kind}{tool}{who}{label} ({files}; session {cp.session})"


def _one_line(text: str) -> str:
    """A label on one line of the answer, control characters escaped (the structured content
    keeps it as recorded)."""
    return terminal_text(" ".join(text.split()))


def listing(result: ListResult) -> str:
    if not result.checkpoints:
        return "no checkpoint matches"
    lines = [_row(cp) for cp in result.checkpoints]
    if result.next_before is not None:
        lines.append(f"(older checkpoints match: pass before={result.next_before})")
    return "\n".join(lines)


def shown(result: ShowResult) -> str:
    head = _row(result.checkpoint)
    if result.against is None:
        count = len(result.files) + result.files_omitted
        names = ", ".join(quote_name(f.path) for f in result.files[:50])
        more = f" and {count - 50} more" if count > 50 else ""
        return f"{head}\nFirst checkpoint (no parent): {count} files recorded: {names}{more}"
    if result.against == "workspace":
        intro = f"Changes from {result.checkpoint.id} to the workspace now:"
    else:
        intro = f"Changes from {result.against} to {result.checkpoint.id}:"
    lines = [head, intro]
    if not result.files:
        lines.append("(no changes)")
    if result.files_omitted:
        lines.append(f"({result.files_omitted} more changed files not listed)")
    if result.binary_files:
        lines.append("Binary files (not shown): " + ", ".join(map(quote_name, result.binary_files)))
    lines.append(result.patch.rstrip("\n"))
    if result.truncated:
        lines.append("[patch truncated at maxBytes: ask for one path, or a larger maxBytes]")
    return "\n".join(line for line in lines if line)


def created(result: CreateResult) -> str:
    return f"Checkpoint {result.checkpoint.id} recorded: {_row(result.checkpoint)}"


def _plan(result: RestoreResult) -> list[str]:
    lines = []
    for f in result.files:
        what = f.action or "?"
        src = f" (from {quote_name(f.from_path)})" if f.from_path else ""
        note = f" — CONFLICT: {terminal_text(f.conflict)}" if f.conflict else ""
        done = f" [{f.status}]" if f.status else ""
        lines.append(f"  {what} {quote_name(f.path)}{src}{note}{done}")
    return lines


def restored(result: RestoreResult, *, resolutions: bool) -> str:
    lines: list[str]
    target = result.target
    if result.outcome == "applied":
        lines = [f"Restored the files to checkpoint {target} (restore checkpoint {result.checkpoint})."]
        if result.skipped:
            lines.append("Left as they were (skip): " + ", ".join(map(quote_name, result.skipped)))
        if result.undo:
            lines.append(f"To undo, restore checkpoint {result.undo} with confirm: true.")
    elif result.outcome == "nothingToRestore":
        lines = [f"Nothing to restore: the files already match checkpoint {target}. {result.message}".strip()]
    elif result.outcome == "failed":
        back = "every file is as it was" if result.rolled_back else "SOME FILES MAY HAVE CHANGED"
        lines = [f"The restore to {target} failed ({back}): {terminal_text(result.message)}"]
    elif result.outcome == "conflict":
        lines = [
            f"{'Dry run: the' if result.dry_run else 'Refused, nothing changed: the'} restore to {target} "
            f"conflicts with changes someone else made to {', '.join(map(quote_name, result.conflicts))}. "
            "Give resolutions "
            '(path → "overwrite", "skip" or "merge") to decide each one.'
        ]
    else:
        count = len(result.files)
        lines = [f"Dry run: restoring checkpoint {target} would change {count} file(s). Nothing changed."]
        lines.append(
            "To apply it, call again with confirm: true"
            + (" and the same resolutions." if resolutions else ".")
        )
    return "\n".join(lines + _plan(result))
