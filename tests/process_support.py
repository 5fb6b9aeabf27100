"""Process helpers shared by tests that check no process of a command's group is left."""

from __future__ import annotations

import asyncio
import os
import time
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


def alive(pid: int) -> bool:
    """``pid`` exists and is not a zombie (a zombie still answers ``kill(pid, 0)``)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except OSError:
        return False


async def dies(pid: int, within: float = 5.0) -> bool:
    """Whether ``pid`` is gone within ``within`` seconds. A SIGKILLed process dies when it is next
    scheduled, which on a loaded machine can take longer than any one fixed pause: poll, bounded
    (a process that survives still fails the caller's assertion)."""
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True
