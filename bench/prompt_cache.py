"""Prompt caching: billed input tokens and input cost of a long agent session, with and without.

``python -m bench.prompt_cache [--calls 200] [--turn-calls 20] [--files 40] [--pace-s 10]
[--rewind-every 2] [--out FILE]``

Drives the real agent (:class:`retrace.agent.session.AgentService`, the real tools, the real
anthropic SDK over real HTTP + SSE) against the offline fake Messages API, whose prompt cache
accounts writes and reads the way the API documents them (:mod:`retrace.offline.prompt_cache`:
exact prefix tools → system → messages, breakpoints, 5-minute TTL refreshed on use, the 20-block
lookback, the 1,024-token minimum; tokens estimated as bytes / 4). The session: ``--calls`` tool
calls (``read_file`` and ``edit_file`` on a generated project, every fifth reply a batch of two),
``--turn-calls`` per user prompt. Three variants on fresh copies of the same workspace:

* ``no cache``: ``prompt_caching`` off (no breakpoint);
* ``cache``: breakpoints as the agent places them;
* ``cache + rewinds``: the same, and after every ``--rewind-every`` turns a conversation restore
  (1 call back, into the middle of a batch, 8 calls back, two turns back, in turn) before the
  next prompt.

Time is simulated: the fake's clock advances ``--pace-s`` per request (a model reply plus its tool
call), so entries expire as they would in a real session of that pace. Cost: input price
``$3 / MTok`` (the default model's class), cache writes 1.25×, cache reads 0.1×; output tokens are
the same in every variant and left out. For each rewind: how much of the first request after it
was read from the cache, against the longest prefix it shares with any earlier request (the most
any cache could have kept).
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.agent_path import AllowingHost, edit_calls
from bench.workspace import generate
from retrace.agent.model.pricing import CACHE_READ_FACTOR, CACHE_WRITE_FACTOR
from retrace.agent.permissions import PermissionSettings
from retrace.agent.session import AgentService
from retrace.agent.settings import AgentSettings
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.offline import FakeModel, Scenario
from retrace.offline.prompt_cache import prefix_blocks

INPUT_USD_PER_MTOK = 3.0
MODEL = "claude-sonnet-5-5"
WORK = Path(__file__).resolve().parent / ".work" / "prompt_cache"


def script(workspace: Path, calls: int, turn_calls: int) -> list[dict[str, Any]]:
    """The scripted replies: per turn ``turn_calls`` tool calls, then a closing text."""
    edits = edit_calls(workspace, calls, seed=7)
    replies: list[dict[str, Any]] = []
    made = 0
    reply = 0
    while made < calls:
        in_turn = 0
        while in_turn < turn_calls and made < calls:
            size = 2 if reply % 5 == 4 and in_turn + 2 <= turn_calls and made + 2 <= calls else 1
            uses: list[dict[str, Any]] = []
            for k in range(size):
                edit = edits[(made + k) % len(edits)]
                if (made + k) % 2 == 0:
                    uses.append({"name": "read_file", "input": {"path": edit["path"]}})
                else:
                    uses.append({"name": "edit_file", "input": edit})
            replies.append(
                {"text": f"Step {made + 1}: looking at {uses[0]['input']['path']}.", "toolCalls": uses}
            )
            made += size
            in_turn += size
            reply += 1
        replies.append({"text": f"Done with this part ({made} calls so far)."})
    return replies


@dataclass
class Rewind:
    back: str
    request: int
    """Index (in the fake's requests) of the first request after the rewind."""


async def drive(
    workspace: Path, store: Path, replies: list[dict[str, Any]], args: Any, caching: bool, rewinds: bool
) -> tuple[FakeModel, list[Rewind], list[str]]:
    holder: dict[str, FakeModel] = {}

    def clock() -> float:
        return float(args.pace_s) * len(holder["fake"].requests)

    fake = FakeModel(Scenario.model_validate({"responses": replies}), clock=clock)
    holder["fake"] = fake
    fake.start()
    engine = await asyncio.to_thread(Engine.open, workspace, store, config=EngineConfig(watcher=False))
    host = AllowingHost()
    settings = AgentSettings(
        model=MODEL,
        base_url=fake.base_url,
        permissions=PermissionSettings(write="auto", command="auto"),
        prompt_caching=caching,
        max_iterations=args.turn_calls + 5,
    )
    service = AgentService(engine, host, settings)
    await service.load()
    done: list[Rewind] = []
    turns = sum(1 for r in replies if not r.get("toolCalls"))
    sid: str | None = None
    kinds = ["1 back", "mid-batch", "8 back", "2 turns back"]
    try:
        for turn in range(turns):
            if rewinds and sid is not None and turn % args.rewind_every == 0:
                back = kinds[len(done) % len(kinds)]
                target = _rewind_target(engine, sid, back, args.turn_calls)
                if target is not None:
                    await service.restore_conversation(sid, target)
                    done.append(Rewind(back, len(fake.requests)))
            sid, _ = await service.prompt(f"Next part of the work ({turn + 1}/{turns}).", sid)
            await service.wait_idle(sid)
    finally:
        fake.stop()
        engine.close()
    return fake, done, host.errors


def _rewind_target(engine: Engine, sid: str, back: str, turn_calls: int) -> str | None:
    tools = [c for c in engine.timeline(sid) if c.kind == "tool"]
    if len(tools) < 3:
        return None
    if back == "mid-batch":
        # a call that is the first of a batch of two: its cursor's message has a second call
        cursors = [c.conversation or "" for c in tools]
        for i in range(len(tools) - 2, -1, -1):
            same = cursors[i].split("#")[0] == cursors[i + 1].split("#")[0]
            if same:
                return tools[i].id
        return tools[-3].id
    steps = {"1 back": 2, "8 back": 9, "2 turns back": 2 * turn_calls + 1}[back]
    return tools[max(0, len(tools) - steps)].id


def shared_prefix_tokens(body: dict[str, Any], earlier: list[dict[str, Any]]) -> int:
    """Tokens of the longest block prefix ``body`` shares with any earlier request (breakpoints
    are not part of a prefix key)."""
    blocks = prefix_blocks(body)
    keys = [b.key for b in blocks]
    tokens = [b.tokens for b in blocks]
    best = 0
    for other in earlier:
        theirs = {b.key for b in prefix_blocks(other)}
        common = 0
        while common < len(keys) and keys[common] in theirs:
            common += 1
        best = max(best, tokens[common - 1] if common else 0)
    return best


def totals(fake: FakeModel) -> dict[str, float]:
    usages = fake.usages
    plain = sum(u["input_tokens"] for u in usages)
    write = sum(u["cache_creation_input_tokens"] for u in usages)
    read = sum(u["cache_read_input_tokens"] for u in usages)
    billed = plain + CACHE_WRITE_FACTOR * write + CACHE_READ_FACTOR * read
    return {
        "requests": len(usages),
        "processed": plain + write + read,
        "plain": plain,
        "write": write,
        "read": read,
        "billed": billed,
        "cost": billed * INPUT_USD_PER_MTOK / 1e6,
    }


def rewind_rows(fake: FakeModel, rewinds: list[Rewind]) -> list[dict[str, Any]]:
    rows = []
    for r in rewinds:
        body, usage = fake.requests[r.request], fake.usages[r.request]
        first = prefix_blocks(body)
        stable = first[len(body.get("tools") or []) + len(body["system"]) - 1].tokens
        shared = shared_prefix_tokens(body, fake.requests[: r.request])
        read = usage["cache_read_input_tokens"]
        rows.append(
            {
                "back": r.back,
                "input": first[-1].tokens,
                "stable": stable,
                "shared": shared,
                "read": read,
                "kept": read > stable,
            }
        )
    return rows


def render(results: dict[str, dict[str, float]], rows: list[dict[str, Any]], args: Any, wall_s: float) -> str:
    base = results["no cache"]["cost"]
    lines = [
        f"## Prompt caching: a {args.calls}-tool-call session through the fake Messages API",
        "",
        f"`.venv/bin/python -m bench.prompt_cache --calls {args.calls} --turn-calls {args.turn_calls} "
        f"--files {args.files} --pace-s {args.pace_s:g} --rewind-every {args.rewind_every}` "
        f"({time.strftime('%Y-%m-%d', time.gmtime())}, {platform.machine()}, Python "
        f"{platform.python_version()}, {wall_s:.0f} s). Prices: input ${INPUT_USD_PER_MTOK:g}/MTok, cache "
        f"write {CACHE_WRITE_FACTOR:g}× (${INPUT_USD_PER_MTOK * CACHE_WRITE_FACTOR:g}), cache read "
        f"{CACHE_READ_FACTOR:g}× (${INPUT_USD_PER_MTOK * CACHE_READ_FACTOR:g}); output tokens are the same "
        "in every variant and left out. Tokens are the fake's estimate (bytes / 4); simulated time "
        f"{args.pace_s:g} s per request (entries expire after 5 min unused).",
        "",
        "| variant | requests | input tokens processed | uncached | cache writes | cache reads "
        "| billed (input-equivalent) | input cost | vs no cache |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, t in results.items():
        saving = "" if name == "no cache" else f"−{100 * (1 - t['cost'] / base):.1f} %"
        lines.append(
            f"| {name} | {t['requests']:.0f} | {t['processed']:,.0f} | {t['plain']:,.0f} | {t['write']:,.0f} "
            f"| {t['read']:,.0f} | {t['billed']:,.0f} | ${t['cost']:.2f} | {saving} |"
        )
    kept = sum(1 for r in rows if r["kept"])
    lines += [
        "",
        f"Rewinds (conversation restores, then a new prompt): the first request after the rewind read "
        f"the cached conversation prefix in {kept} of {len(rows)}.",
        "",
        "| rewind | request input | tools + system | shared with an earlier request | read from cache |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        share = f" ({100 * r['read'] / r['shared']:.0f} % of shared)" if r["shared"] else ""
        lines.append(
            f"| {r['back']} | {r['input']:,} | {r['stable']:,} | {r['shared']:,} | {r['read']:,}{share} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.prompt_cache", description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--turn-calls", type=int, default=20)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--pace-s", type=float, default=10.0)
    parser.add_argument("--rewind-every", type=int, default=2)
    parser.add_argument("--work", type=Path, default=WORK)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    work: Path = args.work
    shutil.rmtree(work, ignore_errors=True)
    template = generate(work / "template", args.files, seed=5).root
    replies = script(template, args.calls, args.turn_calls)
    results: dict[str, dict[str, float]] = {}
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    t0 = time.perf_counter()
    variants = [("no cache", False, False), ("cache", True, False), ("cache + rewinds", True, True)]
    for name, caching, rewinds in variants:
        slug = name.replace(" ", "").replace("+", "-")
        workspace = work / slug / "ws"
        shutil.copytree(template, workspace)
        fake, done, errs = asyncio.run(
            drive(workspace, work / slug / "store", replies, args, caching, rewinds)
        )
        errors.extend(f"{name}: {e}" for e in errs)
        results[name] = totals(fake)
        if rewinds:
            rows = rewind_rows(fake, done)
    report = render(results, rows, args, time.perf_counter() - t0)
    print(report)
    out = args.out or work.parent / "PROMPT_CACHE.md"
    out.write_text(report, encoding="utf-8")
    if errors:
        print("errors:\n" + "\n".join(errors[:10]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
