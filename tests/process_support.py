"""Process helpers shared by tests that check no process of a command's group is left."""

from __future__ import annotations

from pathlib import Path


def live_group_members(pgid: int) -> list[int]:
    """Processes of group ``pgid`` that are not zombies (a zombie's reaping is its parent's job),
    from ``/proc`` (Linux)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members
