"""``write_file``: create or overwrite a file with the given text (atomically)."""

from __future__ import annotations

import asyncio

from retrace.agent.tools.base import ToolContext, ToolInput, ToolResult, ToolSpec
from retrace.agent.tools.paths import atomic_write, resolve_target


class WriteFileInput(ToolInput):
    path: str
    """File path, relative to the workspace root. Missing folders are created."""
    content: str
    """The complete new content of the file."""


async def run(args: WriteFileInput, ctx: ToolContext) -> ToolResult:
    target = resolve_target(ctx, args.path, write=True)
    existed = target.real.exists()
    data = args.content.encode("utf-8")
    await asyncio.to_thread(atomic_write, target.real, data)
    verb = "Overwrote" if existed else "Created"
    return ToolResult(
        f"{verb} {target.shown} ({len(data)} bytes).",
        changed_paths=target.changed(),
        folder_paths=target.result_paths(),
    )


SPEC = ToolSpec(
    name="write_file",
    description="Create a file, or overwrite it completely, with the given content.",
    category="write",
    input_model=WriteFileInput,
    run=run,
)
