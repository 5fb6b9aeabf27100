"""``read_file``: a text file with line numbers (like ``cat -n``), a window of it for big files.

Binary files are refused politely (the model cannot use their bytes); long lines and long files
are capped so one read cannot flood the context. Only the first ``MAX_READ_BYTES`` of a file are
ever read, so a huge file cannot exhaust the server's memory; devices and FIFOs are refused.
"""

from __future__ import annotations

from pydantic import Field

from retrace.agent.tools.base import ToolContext, ToolError, ToolInput, ToolResult, ToolSpec, cap_text
from retrace.agent.tools.paths import read_regular, resolve_target
from retrace.text import is_text

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_READ_BYTES = 16 * 1024 * 1024


class ReadFileInput(ToolInput):
    path: str
    """File path, relative to the workspace root."""
    offset: int | None = Field(default=None, ge=1)
    """First line to read (1-based). Default: 1."""
    limit: int | None = Field(default=None, ge=1)
    """How many lines to read. Default: 2000."""


def looks_binary(data: bytes) -> bool:
    """Not text by Retrace's one rule (:func:`retrace.text.is_text`)."""
    return not is_text(data)


async def run(args: ReadFileInput, ctx: ToolContext) -> ToolResult:
    target = resolve_target(ctx, args.path)
    real, rel = target.real, target.shown
    if real.is_dir():
        raise ToolError(f"{rel} is a directory; use list_files to see what it contains")
    data = read_regular(real, rel, MAX_READ_BYTES + 1)
    cut = len(data) > MAX_READ_BYTES
    if cut:  # keep whole lines only, so a multi-byte character is never split
        data = data[: data.rfind(b"\n", 0, MAX_READ_BYTES) + 1]
    if looks_binary(data):
        size = real.stat().st_size
        return ToolResult(f"{rel} is a binary file ({size} bytes); its content is not shown.")
    lines = data.decode("utf-8").splitlines()
    if not lines:
        return ToolResult(f"{rel} is empty.")
    start = (args.offset or 1) - 1
    if start >= len(lines):
        raise ToolError(f"offset {start + 1} is past the end of {rel} ({len(lines)} lines)")
    end = min(len(lines), start + (args.limit or DEFAULT_LIMIT))
    shown = []
    for number in range(start, end):
        line = lines[number]
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + f" [... line cut at {MAX_LINE_CHARS} characters]"
        shown.append(f"{number + 1:6}\t{line}")
    text = "\n".join(shown)
    if cut:
        text += (
            f"\n[{rel} is larger than {MAX_READ_BYTES // (1024 * 1024)} MB: only its first {len(lines)} "
            "lines can be read here; use run_command (e.g. sed -n) for the rest]"
        )
    elif start > 0 or end < len(lines):
        text += f"\n[lines {start + 1}-{end} of {len(lines)}; use offset/limit to read more]"
    return ToolResult(cap_text(text, ctx.output_cap_bytes))


SPEC = ToolSpec(
    name="read_file",
    description="Read a text file of the workspace. Lines are numbered (number, tab, text). "
    "Use offset and limit for large files.",
    category="read",
    input_model=ReadFileInput,
    run=run,
)
