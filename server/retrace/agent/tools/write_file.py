"""``write_file``: create or overwrite a file with the given text (atomically)."""

from __future__ import annotations

import asyncio

from retrace.agent.tools.base import ToolContext, ToolInput, ToolResult, ToolSpec
from retrace.agent.tools.paths import atomic_write, resolve_for_write


class WriteFileInput(ToolInput):
    path: str
    """File path, relative to the workspace root. Missing folders are created."""
    content: str
    """The complete new content of the file."""


async def run(args: WriteFileInput, ctx: ToolContext) -> ToolResult:
    real, rel = resolve_for_write(ctx, args.path)
    existed = real.exists()
    data = args.content.encode("utf-8")
    await asyncio.to_thread(atomic_write, real, data)
    verb = "Overwrote" if existed else "Created"
    return ToolResult(f"{verb} {rel} ({len(data)} bytes).", changed_paths=[rel])


SPEC = ToolSpec(
    name="write_file",
    description="Create a file, or overwrite it completely, with the given content.",
    category="write",
    input_model=WriteFileInput,
    run=run,
)
