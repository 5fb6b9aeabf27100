"""``list_files``: the workspace's files (or a folder's), filtered by a glob, respecting the
engine's ignore rules (built-in excludes, configured excludes, every ``.gitignore``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pathspec

from retrace.agent.tools.base import ToolContext, ToolError, ToolInput, ToolResult, ToolSpec, cap_text
from retrace.agent.tools.paths import resolve_target, workspace_root
from retrace.engine.capture.ignore import Ignorer
from retrace.engine.capture.scan import walk

MAX_ENTRIES = 1000


class ListFilesInput(ToolInput):
    path: str | None = None
    """Folder to list, relative to the workspace root. Default: the whole workspace."""
    glob: str | None = None
    """Gitignore-style pattern the relative path must match, e.g. ``*.py`` or ``src/**/*.ts``."""


async def run(args: ListFilesInput, ctx: ToolContext) -> ToolResult:
    target = resolve_target(ctx, args.path or ".", allow_root=True)
    real, rel = target.real, target.rel
    if not real.is_dir():
        raise ToolError(f"{target.shown or '.'} is not a directory")
    # Another folder of a multi-root workspace: its own ignore rules, its paths named with its name.
    there = ctx if target.folder is None else dataclasses.replace(ctx, workspace=Path(target.folder.root))
    root = workspace_root(there)
    prefix = "" if target.folder is None else f"{target.folder.name}/"
    ignorer = Ignorer(root, ctx.engine_config)
    if rel and ignorer.excluded_path(rel, True):
        return ToolResult(f"{target.shown} is excluded from the workspace (ignore rules); nothing listed.")
    spec = pathspec.GitIgnoreSpec.from_lines([args.glob]) if args.glob else None
    found = sorted(
        prefix + p for p, _ in walk(ignorer.workspace, ignorer, rel) if spec is None or spec.match_file(p)
    )
    if not found:
        return ToolResult("No files found.")
    text = "\n".join(found[:MAX_ENTRIES])
    if len(found) > MAX_ENTRIES:
        text += f"\n[{len(found) - MAX_ENTRIES} more files not shown; narrow with path or glob]"
    return ToolResult(cap_text(text, ctx.output_cap_bytes))


SPEC = ToolSpec(
    name="list_files",
    description="List the files of the workspace (or of one folder), optionally matching a glob. "
    "Ignored files (.gitignore, node_modules, ...) are left out.",
    category="read",
    input_model=ListFilesInput,
    run=run,
)
