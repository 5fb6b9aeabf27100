"""The child's isolated workspace: the parent checkpoint it starts from, written out.

The copy is made from the store (the exact bytes the parent checkpoint recorded), not from the
parent's folder, so that the child's starting point and the merge base are the same state even
if the user keeps editing meanwhile. Plain copies, never hard links: a command writing a file in
place would otherwise change the user's file through the link. What the parent's checkpoint
does not track (ignored paths such as ``node_modules``, build output) is not copied; a file
whose content was not stored (over the size cap) is missing in the copy and listed.

"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from retrace.engine.errors import StoreCorrupt
from retrace.engine.models import FileEntry
from retrace.engine.store.blobs import BlobStore
from retrace.engine.workspace import normalize_rel


@dataclass
class CopyReport:
    files: int = 0
    bytes: int = 0
    missing: list[str] = field(default_factory=list)
    """Tracked paths whose content the store does not hold intact (not copied)."""


def materialise(blobs: BlobStore, manifest: Mapping[str, FileEntry], work: Path) -> CopyReport:
    """Write the checkpoint whose manifest is ``manifest`` into the new folder ``work``.

    Reads only blobs (never the engine's in-memory state), so it runs on a thread of its own
    while the parent's engine serves others; each file is streamed from its blob and checked
    against its hash, a damaged one is left out and listed."""
    report = CopyReport()
    work.mkdir(parents=True, exist_ok=False)
    for rel, entry in sorted(manifest.items()):
        target = work / normalize_rel(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        if entry.kind == "symlink":
            if entry.target is None:
                report.missing.append(rel)
                continue
            target.symlink_to(entry.target)
            report.files += 1
            continue
        if entry.hash is None:
            report.missing.append(rel)
            continue
        try:
            with target.open("xb") as f:
                report.bytes += blobs.write_to(entry.hash, f)
        except StoreCorrupt:
            target.unlink()
            report.missing.append(rel)
            continue
        if entry.executable:
            target.chmod(0o755)
        report.files += 1
    return report
