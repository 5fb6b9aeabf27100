"""The long-session benchmark's Markdown section (see :mod:`bench.long_session`).

``render(results, knobs, command, started, load, fsync)``: the targets table (target, figure,
ratio, verdict), then per-interaction p50/p95/p99 tables per strategy, the ratios to shadow git
and to the floor, and sizes / memory. Every figure comes from ``results`` (one JSON-able dict
per strategy, as :func:`bench.long_session.measure` returns it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime
from typing import Any

from bench.report import (
    PERCENTILE_HEADER,
    fmt_bytes,
    fmt_ms,
    fmt_ratio,
    known,
    percentile_row,
    preamble,
    table,
    verdict,
)

Result = dict[str, Any]
MIB = 1024


def _ok(results: dict[str, Result], name: str) -> Result | None:
    r = results.get(name)
    return r if r is not None and "crashed" not in r else None


def _restore(r: Result | None, label: str, q: str = "p50") -> float:
    if r is None or label not in r["restores"]:
        return math.nan
    return float(r["restores"][label][q])


def _targets(rt: Result, git: Result | None, floor: Result | None) -> list[str]:
    rows: list[list[str]] = []

    def add(target: str, figure: str, rat: str, met: bool | None) -> None:
        rows.append([target, figure, rat, verdict(met)])

    agent95 = rt.get("agent", {}).get("p95", math.nan)
    add(
        "per edit tool call, tool result → checkpointCreated, p95 ≤ 10 ms",
        fmt_ms(agent95),
        "",
        agent95 <= 10 if known(agent95) else None,
    )
    edit95 = rt["edit"]["p95"]
    git_edit95 = git["edit"]["p95"] if git else math.nan
    add(
        "edit checkpoint p95 ≤ 5 ms",
        fmt_ms(edit95),
        f"git / Retrace {fmt_ratio(git_edit95, edit95)}",
        edit95 <= 5,
    )
    walk = floor["warm_open_ms"] if floor else math.nan
    add(
        "warm open at the end ≤ one stat walk (floor's warm open)",
        f"{fmt_ms(rt['warm_open_ms'])} vs {fmt_ms(walk)}",
        "Retrace / floor " + fmt_ratio(rt["warm_open_ms"], walk),
        rt["warm_open_ms"] <= walk if known(walk) else None,
    )
    for label in (*_labels(rt),):
        mine, g, f = _restore(rt, label, "p95"), _restore(git, label, "p95"), _restore(floor, label, "p95")
        add(
            f"restore {label} p95 ≤ git reset --hard + clean",
            f"{fmt_ms(mine)} vs {fmt_ms(g)}",
            "git / Retrace " + fmt_ratio(g, mine),
            mine <= g if known(g) else None,
        )
        add(
            f"restore {label} p95 ≤ floor × 1.5",
            f"{fmt_ms(mine)} vs {fmt_ms(f)}",
            "Retrace / floor " + fmt_ratio(mine, f),
            mine <= 1.5 * f if known(f) else None,
        )
    startup = rt.get("agent", {}).get("startup_ms", math.nan)
    add(
        f"AgentService.load + first timeline answer with {rt.get('old_sessions', 0)} older sessions ≤ 300 ms",
        fmt_ms(startup),
        "",
        startup <= 300 if known(startup) else None,
    )
    rss = rt["maxrss_kb"] / MIB
    add("server peak RSS ≤ 200 MiB (engine + agent in one process)", f"{rss:.0f} MiB", "", rss <= 200)
    gb = float(git["store_bytes"]) if git else math.nan
    note = f" (shadow git after only {git['calls']:,} calls)" if git and git["calls"] < rt["calls"] else ""
    add(
        "store size ≤ shadow git",
        f"{fmt_bytes(rt['store_bytes'])} vs {fmt_bytes(gb)}{note}",
        "Retrace / git " + fmt_ratio(rt["store_bytes"], gb),
        rt["store_bytes"] <= gb if known(gb) else None,
    )
    add(
        "no errors (restores byte-exact with --verify)",
        "; ".join(rt["errors"]) or "none",
        "",
        not rt["errors"],
    )
    return table(("target", "figure", "ratio", "verdict"), rows, "lrrl")


def _labels(r: Result) -> list[str]:
    return sorted(r["restores"], key=lambda s: (s == "back to tip", s))


def _interactions(name: str, r: Result) -> list[str]:
    rows = [percentile_row(f"{k} checkpoint", r[k]) for k in ("edit", "shell", "fork")]
    rows += [percentile_row(f"restore {label}", r["restores"][label]) for label in _labels(r)]
    if "agent" in r:
        rows.append(percentile_row("agent edit call: tool result → checkpointCreated", r["agent"]))
    rows.append(["warm open at the end", "1", fmt_ms(r["warm_open_ms"]), "", "", ""])
    rss = f"{r['maxrss_kb'] / MIB:.0f} MiB peak (harness at start {r['rss_start_kb'] / MIB:.0f} MiB)"
    if r["strategy"] == "shadow-git":
        rss += f" + git {r['children_maxrss_kb'] / MIB:.0f} MiB"
    extra = [
        f"**{name}**: {r['calls']:,} calls on {r['files']:,} files; store {fmt_bytes(r['store_bytes'])}; "
        f"RSS {rss}."
    ]
    if r.get("old_sessions"):
        extra.append(
            f"{r['old_sessions']} older sessions in the store "
            f"(made or copied in {fmt_ms(r['old_sessions_ms'])})."
        )
    if r.get("detect_modes"):
        extra.append(
            "Shell-call detection: "
            + ", ".join(f"{k}: {v}" for k, v in sorted(r["detect_modes"].items()))
            + "."
        )
    if "agent" in r:
        extra.append(
            f"Agent path: {r['agent']['count']} of {r['agent']['requested']} scripted edit calls timed, "
            f"{fmt_ms(r['agent']['wall_ms'])} wall for the whole run (fake model included)."
        )
    return [" ".join(extra), "", *table(PERCENTILE_HEADER, rows), ""]


def _ratios(rt: Result, git: Result | None, floor: Result | None) -> list[str]:
    getters: list[tuple[str, Callable[[Result], float]]] = [
        ("edit p50", lambda r: r["edit"]["p50"]),
        ("edit p95", lambda r: r["edit"]["p95"]),
        ("shell p50", lambda r: r["shell"]["p50"]),
        ("shell p95", lambda r: r["shell"]["p95"]),
        ("warm open", lambda r: r["warm_open_ms"]),
        *((f"restore {lb} p50", (lambda r, lb=lb: _restore(r, lb))) for lb in _labels(rt)),
    ]
    rows = [
        [
            label,
            fmt_ratio(get(git), get(rt)) if git else "n/a",
            fmt_ratio(get(rt), get(floor)) if floor else "n/a",
        ]
        for label, get in getters
    ]
    return table(("measure", "shadow git / Retrace", "Retrace / floor"), rows)


def render(
    results: dict[str, Result],
    knobs: dict[str, int],
    command: str,
    started: datetime,
    load: str = "",
    fsync: dict[str, float] | None = None,
) -> str:
    out = preamble("Long session", command, started, load, fsync)
    out += [
        f"One session of {knobs['calls']:,} tool calls on a {knobs['files']:,}-file workspace "
        f"(`bench.trace`: mostly single-file edits, 15 % shell calls), a restore cycle every "
        f"{knobs['restore_every']} calls (restore to 1 back / 50 back / the first checkpoint / a random "
        "older one in turn, one edit there (a fork), then restore to the main line's tip), "
        f"{knobs['old_sessions']} older sessions already in Retrace's store. Shadow git ran only the "
        f"first {knobs['git_calls']:,} calls (≈ 230 ms a call at 50k files). Each strategy in its own "
        "process; latencies around the strategy call only. The agent path ran "
        f"{knobs['agent_calls']} `edit_file` calls through `AgentService` with the offline fake model.",
        "",
    ]
    rt, git, floor = _ok(results, "retrace"), _ok(results, "shadow-git"), _ok(results, "floor")
    crashed = [f"{n} crashed (exit {r['crashed']})" for n, r in results.items() if "crashed" in r]
    if crashed:
        out += ["**" + "; ".join(crashed) + "**", ""]
    if rt is None:
        return "\n".join([*out, "Retrace did not complete: no target can be assessed.", ""])
    out += ["## Long session: targets", "", *_targets(rt, git, floor), ""]
    out += ["## Long session: per interaction", ""]
    for name, r in results.items():
        if "crashed" not in r:
            out += _interactions(name, r)
    out += ["## Long session: ratios", "", *_ratios(rt, git, floor), ""]
    if floor and "final_digest" in rt and "final_digest" in floor:
        same = rt["final_digest"] == floor["final_digest"]
        out += [
            "Retrace and the floor ended on identical trees."
            if same
            else "**Warning**: Retrace's and the floor's final trees differ.",
            "",
        ]
    return "\n".join(out)
