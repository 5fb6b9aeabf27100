"""``search_text``: lines matching a regular expression, as ``path:line:text``.

Uses ripgrep when it is on PATH (fast on big trees), else a Python walk; both skip what the
engine ignores (built-in and configured excludes always; ``.gitignore`` files as ripgrep reads
them, or via the engine's ignorer in the fallback) and binary files.
"""

from __future__ import annotations

import asyncio
import re
import shutil

import pathspec

from retrace.agent.tools.base import ToolContext, ToolError, ToolInput, ToolResult, ToolSpec, cap_text
from retrace.agent.tools.paths import Place, locate, read_regular, workspace_root
from retrace.agent.tools.read_file import looks_binary
from retrace.engine.capture.ignore import Ignorer
from retrace.engine.capture.scan import walk
from retrace.engine.config import BUILTIN_EXCLUDES, TOOL_FOLDER_PATTERNS

MAX_MATCHES = 200
MAX_FILE_BYTES = 2 * 1024 * 1024


class SearchTextInput(ToolInput):
    pattern: str
    """Regular expression (Rust/Python syntax) to search for."""
    path: str | None = None
    """File or folder to search, relative to the workspace root (in a multi-root workspace,
    ``<folder>`` or ``<folder>/sub`` searches another folder). Default: the first folder."""
    glob: str | None = None
    """Only search files whose relative path matches this pattern, e.g. ``*.py``."""


def _format(matches: list[str], total: int) -> str:
    if not matches:
        return "No matches."
    text = "\n".join(matches)
    if total > len(matches):
        text += f"\n[{total - len(matches)} more matches not shown; narrow with path or glob]"
    return text


async def _ripgrep(rg: str, args: SearchTextInput, place: Place) -> str:
    ctx, rel = place.ctx, place.rel
    cmd = [rg, "--line-number", "--no-heading", "--color=never", "--hidden", "--no-require-git"]
    cmd += ["--max-columns=500", "--max-columns-preview", "--glob=!.git"]
    for pattern in (*BUILTIN_EXCLUDES, *TOOL_FOLDER_PATTERNS, *ctx.engine_config.excludes):
        cmd.append(f"--glob=!{pattern.rstrip('/')}")
    if not ctx.engine_config.use_gitignore:
        cmd.append("--no-ignore")
    if args.glob:
        cmd.append(f"--glob={args.glob}")
    cmd += ["--regexp", args.pattern, "--", rel or "."]
    proc = await asyncio.create_subprocess_exec(
        *cmd,
        cwd=workspace_root(ctx),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    if proc.returncode == 2 and not out:
        first = err.decode("utf-8", errors="replace").strip().splitlines()
        raise ToolError(f"search failed: {first[-1] if first else 'ripgrep error'}")
    lines = sorted(out.decode("utf-8", errors="replace").splitlines())
    lines = [place.shown(ln.removeprefix("./")) for ln in lines]
    return _format(lines[:MAX_MATCHES], len(lines))


def _python_search(regex: re.Pattern[str], args: SearchTextInput, place: Place) -> str:
    ctx, rel = place.ctx, place.rel
    root = workspace_root(ctx)
    ignorer = Ignorer(root, ctx.engine_config)
    spec = pathspec.GitIgnoreSpec.from_lines([args.glob]) if args.glob else None
    target = root / rel if rel else root
    files = [rel] if rel and target.is_file() else sorted(p for p, _ in walk(root, ignorer, rel))
    matches: list[str] = []
    total = 0
    for path in files:
        if spec is not None and not spec.match_file(path):
            continue
        try:
            data = read_regular(root / path, path, MAX_FILE_BYTES)
        except ToolError:
            continue
        if looks_binary(data):
            continue
        for number, line in enumerate(data.decode("utf-8").splitlines(), 1):
            if regex.search(line):
                total += 1
                if len(matches) < MAX_MATCHES:
                    matches.append(place.shown(f"{path}:{number}:{line[:500]}"))
    return _format(matches, total)


async def run(args: SearchTextInput, ctx: ToolContext) -> ToolResult:
    try:
        regex = re.compile(args.pattern)
    except re.error as e:
        raise ToolError(f"invalid regular expression {args.pattern!r}: {e}") from None
    place = locate(ctx, args.path or ".")
    real, rel = place.real, place.rel
    if not real.exists():
        raise ToolError(f"{rel} does not exist")
    if not real.is_dir() and not real.is_file():  # a FIFO or device would block or never end
        raise ToolError(f"{rel} is not a regular file (a device, FIFO or socket); refused")
    rg = shutil.which("rg")
    if rg is not None:
        text = await _ripgrep(rg, args, place)
    else:
        text = await asyncio.to_thread(_python_search, regex, args, place)
    return ToolResult(cap_text(text, ctx.output_cap_bytes))


SPEC = ToolSpec(
    name="search_text",
    description="Search the workspace's text files for a regular expression. "
    "Returns matching lines as path:line:text.",
    category="read",
    input_model=SearchTextInput,
    run=run,
)
