"""``retrace integrate claude-code|gemini-cli [--workspace DIR] [--remove] [--json]``: write (or
take out) Retrace's hooks in the agent's project settings, so each of its tool calls becomes a
checkpoint. The work is :func:`retrace.app.hooks.settings_file.integrate` (shared with the
server's ``retrace/agents/integrate``); this module only prints what changed."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from retrace.app.hooks.settings_file import integrate
from retrace.camel import dump
from retrace.cli.format import say
from retrace.protocol.agents import AgentIntegrateResult

_SAID = {
    "added": "added Retrace's hooks to",
    "updated": "updated Retrace's hooks in",
    "removed": "removed Retrace's hooks from",
    "unchanged": "nothing to change in",
}


def describe(result: AgentIntegrateResult, *, removing: bool = False) -> list[str]:
    """The human-readable lines of a result."""
    lines = [f"{result.title}: {_SAID[result.action]} {result.file}"]
    if result.action in ("added", "updated"):
        lines.append(f"  hook events: {', '.join(result.events)}")
        lines.append(f"  command: {result.command}")
        lines.append(f"  {result.title} sessions started from now on use them (restart running ones)")
    elif result.action == "unchanged":
        lines.append("  Retrace's hooks are not there" if removing else "  Retrace's hooks are up to date")
    lines += [f"  note: {note}" for note in result.notes]
    return lines


def cmd_integrate(args: argparse.Namespace) -> int:
    result = integrate(Path(args.workspace), args.agent, remove_=args.remove)
    if args.json:
        print(json.dumps(dump(result), indent=2, ensure_ascii=False))
        return 0
    for line in describe(result, removing=args.remove):
        say(line)
    return 0
