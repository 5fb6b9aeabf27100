"""The real-code replay's Markdown section (see :mod:`bench.replay`).

``render(results, large, command, started, load, fsync)``: per project, the targets table
(checkpoint p95 ≤ 1.5× the floor per variant; on the ``large`` project ≥ 10× faster than shadow
git at p50 and ≥ 5× at p95; restores ≤ ``git reset --hard`` + ``git clean``; store ≤ shadow
git), then checkpoint p50/p95/p99 per strategy and variant, restores, store sizes, memory.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from bench.report import (
    fmt_bytes,
    fmt_ms,
    fmt_ratio,
    known,
    preamble,
    ratio,
    summary,
    table,
    verdict,
)

Result = dict[str, Any]


def _find(results: list[Result], project: str, name: str, variant: str = "shell") -> Result | None:
    for r in results:
        if (r["project"], r["strategy"], r["variant"]) == (project, name, variant) and "crashed" not in r:
            return r
    return None


def _restore_ms(r: Result | None, label: str) -> float:
    return float(r["restores"][label]["ms"]) if r else math.nan


def _targets(results: list[Result], project: str, large: bool) -> list[str]:
    git = _find(results, project, "shadow-git")
    rows: list[list[str]] = []
    for variant in ("shell", "edit"):
        rt, floor = _find(results, project, "retrace", variant), _find(results, project, "floor", variant)
        if rt is None:
            rows.append([f"retrace ({variant})", "did not complete", "", verdict(False)])
            continue
        mine, f = rt["checkpoint"]["p95"], floor["checkpoint"]["p95"] if floor else math.nan
        rows.append(
            [
                f"checkpoint p95 ≤ 1.5× floor ({variant})",
                f"{fmt_ms(mine)} vs {fmt_ms(f)}",
                "Retrace / floor " + fmt_ratio(mine, f),
                verdict(mine <= 1.5 * f if known(f) else None),
            ]
        )
        if large:
            for q, need in (("p50", 10), ("p95", 5)):
                a, g = rt["checkpoint"][q], git["checkpoint"][q] if git else math.nan
                rows.append(
                    [
                        f"checkpoint ≥ {need}× faster than shadow git at {q} ({variant})",
                        f"{fmt_ms(a)} vs {fmt_ms(g)}",
                        "git / Retrace " + fmt_ratio(g, a),
                        verdict(ratio(g, a) >= need if known(g) else None),
                    ]
                )
    rt = _find(results, project, "retrace")
    if rt is not None:
        for label in ("first", "middle"):
            a, g = _restore_ms(rt, label), _restore_ms(git, label)
            rows.append(
                [
                    f"restore to the {label} version ≤ git reset --hard + clean",
                    f"{fmt_ms(a)} vs {fmt_ms(g)}",
                    "git / Retrace " + fmt_ratio(g, a),
                    verdict(a <= g if known(a, g) else None),
                ]
            )
        a, g = float(rt["store_bytes"]), float(git["store_bytes"]) if git else math.nan
        rows.append(
            [
                "store ≤ shadow git",
                f"{fmt_bytes(a)} vs {fmt_bytes(g)}",
                "Retrace / git " + fmt_ratio(a, g),
                verdict(a <= g if known(g) else None),
            ]
        )
        exact = all(r["exact"] for r in results if r["project"] == project and "crashed" not in r)
        rows.append(
            ["every restore byte-exact (every strategy)", "yes" if exact else "NO", "", verdict(exact)]
        )
    return table(("target", "figure", "ratio", "verdict"), rows, "lrrl")


def _project(results: list[Result], project: str, large: bool) -> list[str]:
    mine = [r for r in results if r["project"] == project]
    ok = [r for r in mine if "crashed" not in r]
    out = [f"## Replay: {project}", ""]
    if ok:
        first, last, n = ok[0]["versions"]
        changes = summary([float(c) for c in ok[0]["changed"]])
        out += [
            f"{n} releases, {first} → {last}: {n - 1} tool calls; {ok[0]['files']:,} files at the end; "
            f"files changed per call p50 {changes['p50']:.0f}, p95 {changes['p95']:.0f}, "
            f"max {changes['max']:.0f}.",
            "",
        ]
    out += [*_targets(results, project, large), ""]
    rows = []
    for r in mine:
        who = f"{r['strategy']} ({r['variant']})"
        if "crashed" in r:
            rows.append([who, f"crashed (exit {r['crashed']})", "", "", "", "", "", "", ""])
            continue
        c = r["checkpoint"]
        rss = f"{r['maxrss_kb'] / 1024:.0f} MiB"
        if r["strategy"] == "shadow-git":
            rss += f" + git {r['children_maxrss_kb'] / 1024:.0f} MiB"
        rows.append(
            [
                who,
                fmt_ms(c["p50"]),
                fmt_ms(c["p95"]),
                fmt_ms(c["p99"]),
                fmt_ms(c["max"]),
                fmt_ms(r["cold_ms"]),
                f"{fmt_ms(_restore_ms(r, 'first'))} / {fmt_ms(_restore_ms(r, 'middle'))}",
                fmt_bytes(r["store_bytes"]),
                rss,
            ]
        )
    out += [*_ratios(results, project), ""]
    header = (
        "strategy (variant)",
        "checkpoint p50",
        "p95",
        "p99",
        "max",
        "cold baseline",
        "restore first / middle",
        "store",
        "peak RSS",
    )
    return [*out, *table(header, rows), ""]


def _ratios(results: list[Result], project: str) -> list[str]:
    git = _find(results, project, "shadow-git")
    rows = []
    for variant in ("shell", "edit"):
        rt, floor = _find(results, project, "retrace", variant), _find(results, project, "floor", variant)
        for q in ("p50", "p95", "p99"):
            a = rt["checkpoint"][q] if rt else math.nan
            f = floor["checkpoint"][q] if floor else math.nan
            g = git["checkpoint"][q] if git else math.nan
            rows.append([f"checkpoint {q} ({variant})", fmt_ratio(g, a), fmt_ratio(a, f)])
    rt, floor = _find(results, project, "retrace"), _find(results, project, "floor")
    for label in ("first", "middle"):
        a = _restore_ms(rt, label)
        rows.append(
            [
                f"restore to the {label} version",
                fmt_ratio(_restore_ms(git, label), a),
                fmt_ratio(a, _restore_ms(floor, label)),
            ]
        )
    return table(("measure", "shadow git / Retrace", "Retrace / floor"), rows)


def render(
    results: list[Result],
    large: str,
    command: str,
    started: datetime,
    load: str = "",
    fsync: dict[str, float] | None = None,
) -> str:
    out = preamble("Real-code replay", command, started, load, fsync)
    out += [
        "Successive final releases of real projects (PyPI sdists), each made to be the workspace "
        "(only changed files written, deleted files removed, under a constant folder name) as ONE tool "
        "call. *shell*: the call reports nothing (`changed_paths=None`); *edit*: it reports exactly the "
        "changed paths. Shadow git ignores what a call reports, so it runs once. Latencies around the "
        "strategy call only; restores from the last version, checked byte-exact, then back to the last.",
        "",
    ]
    for project in dict.fromkeys(r["project"] for r in results):
        out += _project(results, project, project == large)
    return "\n".join(out)
