"""``edit_file``: replace an exact string in a text file.

The match is exact (whitespace included); a file with CRLF line endings also matches an
``old_string`` written with ``\\n`` and keeps its CRLF. A missing or ambiguous ``old_string`` is an
error that tells the model how to fix its call.
"""

from __future__ import annotations

import asyncio

from retrace.agent.tools.base import ToolContext, ToolError, ToolInput, ToolResult, ToolSpec
from retrace.agent.tools.paths import atomic_write, read_regular, resolve_target
from retrace.text import decode_text


class EditFileInput(ToolInput):
    path: str
    """File path, relative to the workspace root."""
    old_string: str
    """The exact text to replace (include enough context to make it unique)."""
    new_string: str
    """The replacement text."""
    replace_all: bool = False
    """Replace every occurrence instead of requiring exactly one."""


async def run(args: EditFileInput, ctx: ToolContext) -> ToolResult:
    target = resolve_target(ctx, args.path, write=True)
    real, rel = target.real, target.shown
    if not args.old_string:
        raise ToolError("old_string is empty; use write_file to create or overwrite a whole file")
    if args.old_string == args.new_string:
        raise ToolError("old_string and new_string are identical; nothing to change")
    if not real.exists():
        raise ToolError(f"{rel} does not exist; use write_file to create it")
    data = read_regular(real, rel)
    text = decode_text(data)
    if text is None:
        raise ToolError(f"{rel} is not a UTF-8 text file; edit_file only edits text")
    old, new = args.old_string, args.new_string
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        raise ToolError(
            f"old_string not found in {rel}; it must match the file exactly (whitespace included)"
        )
    if count > 1 and not args.replace_all:
        raise ToolError(f"old_string occurs {count} times in {rel}; add context or set replace_all")
    first_line = text[: text.index(old)].count("\n") + 1
    updated = text.replace(old, new) if args.replace_all else text.replace(old, new, 1)
    await asyncio.to_thread(atomic_write, real, updated.encode("utf-8"))
    what = f"{count} occurrences" if count > 1 else f"1 occurrence at line {first_line}"
    return ToolResult(
        f"Edited {rel}: replaced {what}.", changed_paths=target.changed(), folder_paths=target.result_paths()
    )


SPEC = ToolSpec(
    name="edit_file",
    description="Replace an exact string in a text file. old_string must occur exactly once "
    "unless replace_all is set; include surrounding lines to make it unique.",
    category="write",
    input_model=EditFileInput,
    run=run,
)
