"""What every benchmark report shares: percentiles, formatting, machine facts, disk latency.

``summary`` gives nearest-rank percentiles (every figure is a measured sample, never an
interpolation); ``fmt_ms`` / ``fmt_bytes`` / ``fmt_ratio`` format figures the same way in every
report; ``machine_info`` and ``fsync_probe`` describe the machine a run happened on;
``table`` renders a Markdown table; ``verdict_row`` renders one line of a targets table
(target, figure, ratio, verdict); ``preamble`` is the heading block every report starts with.
"""

from __future__ import annotations

import math
import os
import platform
import subprocess
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path


def ms_since(start_ns: int) -> float:
    """Milliseconds since ``start_ns`` (a ``time.perf_counter_ns()`` reading)."""
    return (time.perf_counter_ns() - start_ns) / 1e6


def summary(values: Sequence[float]) -> dict[str, float]:
    """Nearest-rank percentiles (no interpolation: every figure is a measured sample)."""
    if not values:
        return {"count": 0, "p50": math.nan, "p95": math.nan, "p99": math.nan, "max": math.nan}
    ordered = sorted(values)

    def pct(q: float) -> float:
        return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]

    return {"count": len(ordered), "p50": pct(50), "p95": pct(95), "p99": pct(99), "max": ordered[-1]}


def fmt_ms(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return f"{value:.2f} ms" if value < 10 else f"{value:.1f} ms" if value < 1000 else f"{value / 1000:.2f} s"


def fmt_bytes(n: float) -> str:
    if math.isnan(n):
        return "n/a"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def fmt_ratio(a: float, b: float) -> str:
    if not b or math.isnan(a) or math.isnan(b):
        return "n/a"
    r = a / b
    return f"{r:.0f}×" if r >= 100 else f"{r:.1f}×" if r >= 10 else f"{r:.2f}×"


def ratio(a: float, b: float) -> float:
    """``a / b``, NaN when either is unknown or ``b`` is zero."""
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


def machine_info() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    git = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3
    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "memory": f"{mem_gib:.1f} GiB",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "os": platform.platform(),
        "git": git,
    }


def fsync_probe(work: Path, rounds: int = 300) -> dict[str, float]:
    """Latency of one small append + ``fdatasync`` in the work directory: the disk's share of
    every crash-safe checkpoint (its tail bounds what any strategy's p95 can be)."""
    probe = work / "fsync-probe"
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    samples = []
    try:
        for _ in range(rounds):
            os.write(fd, b"x" * 200 + b"\n")
            t0 = time.perf_counter_ns()
            os.fdatasync(fd)
            samples.append(ms_since(t0))
    finally:
        os.close(fd)
        probe.unlink()
    return summary(samples)


def table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str = "") -> list[str]:
    """A Markdown table; ``align``: one of ``l``/``r`` per column (default: first left, rest right)."""
    marks = align or "l" + "r" * (len(header) - 1)
    out = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if a == "l" else "---:" for a in marks) + "|",
    ]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def verdict(met: bool | None) -> str:
    return "n/a" if met is None else "met" if met else "**not met**"


def known(*values: float) -> bool:
    return all(not math.isnan(v) for v in values)


def percentile_row(label: str, s: dict[str, float]) -> list[str]:
    """``label, count, p50, p95, p99, max`` of a :func:`summary`."""
    return [
        label,
        str(int(s["count"])),
        fmt_ms(s["p50"]),
        fmt_ms(s["p95"]),
        fmt_ms(s["p99"]),
        fmt_ms(s["max"]),
    ]


PERCENTILE_HEADER = ("measure", "n", "p50", "p95", "p99", "max")


def preamble(
    title: str, command: str, started: datetime, load: str = "", fsync: dict[str, float] | None = None
) -> list[str]:
    """Heading, the command that reproduces the report, and the machine it ran on."""
    info = machine_info()
    out = [
        f"# {title}",
        "",
        f"Reproduce: `{command}` (from the repository root; {started:%Y-%m-%d %H:%M} UTC).",
        "",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in info.items()) + ".",
    ]
    if load:
        out.append(
            f"Load average (1 min) at start / end of the run: {load}: other work on the machine adds noise."
        )
    if fsync:
        out.append(
            f"Disk: a 200-byte append + fdatasync takes p50 {fmt_ms(fsync['p50'])}, "
            f"p95 {fmt_ms(fsync['p95'])}, p99 {fmt_ms(fsync['p99'])} here (every crash-safe "
            "checkpoint pays one)."
        )
    return [*out, ""]


def rss_now_kb() -> int:
    """Current resident set size of this process (``VmRSS``), 0 where unknown."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0
