"""The child's isolated workspace: the parent checkpoint it starts from, written out.

The copy is made from the store (the exact bytes the parent checkpoint recorded), not from the
parent's folder, so that the child's starting point and the merge base are the same state even
if the user keeps editing meanwhile. Plain copies, never hard links: a command writing a file in
place would otherwise change the user's file through the link. What the parent's checkpoint
does not track (ignored paths such as ``node_modules``, build output) is not copied; a file
whose content was not stored (over the size cap) is missing in the copy and listed.

Runs on the engine's thread (through the parent's gate): it reads the parent's engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from retrace.engine.engine import Engine
from retrace.engine.workspace import normalize_rel


@dataclass
class CopyReport:
    files: int = 0
    bytes: int = 0
    missing: list[str] = field(default_factory=list)
    """Tracked paths whose content the store does not hold (not copied)."""


def materialise(engine: Engine, checkpoint_id: str, work: Path) -> CopyReport:
    """Write checkpoint ``checkpoint_id`` of ``engine`` into the empty folder ``work``."""
    report = CopyReport()
    work.mkdir(parents=True, exist_ok=False)
    for rel, entry in sorted(engine.manifest(checkpoint_id).items()):
        target = work / normalize_rel(rel)
        if entry.kind == "symlink":
            if entry.target is None:
                report.missing.append(rel)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(entry.target)
            report.files += 1
            continue
        data = engine.content(entry)
        if data is None:
            report.missing.append(rel)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("xb") as f:
            f.write(data)
        if entry.executable:
            target.chmod(0o755)
        report.files += 1
        report.bytes += len(data)
    return report
