"""An MCP tool result as ``tool_result`` text: every content block in order, size-capped.

Text is kept as it is; an embedded text resource is shown under its URI; binary content (images,
audio, blob resources) is named with its type and size, not sent (tool results are text in the
journal); a result with only ``structuredContent`` shows it as JSON. The whole is capped like a
command's output (head and tail kept, the cut said).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from retrace.agent.tools.base import cap_text


def _size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except ValueError:
        return len(data)


def block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind} {block.mimeType}, {_size(block.data):,} bytes: not shown]"
    if kind == "resource":
        res = block.resource
        text = getattr(res, "text", None)
        if isinstance(text, str):
            return f"[resource {res.uri}]\n{text}"
        return (
            f"[resource {res.uri} {res.mimeType or ''}, {_size(getattr(res, 'blob', '')):,} bytes: not shown]"
        )
    if kind == "resource_link":
        return f"[resource link {block.uri}{' ' + block.name if getattr(block, 'name', None) else ''}]"
    return f"[{kind or 'unknown'} content]"


def result_text(result: Any, cap_bytes: int) -> str:
    """``result`` (``mcp.types.CallToolResult``) as capped text."""
    parts = [block_text(block) for block in result.content]
    if not parts and result.structuredContent is not None:
        parts.append(json.dumps(result.structuredContent, ensure_ascii=False, indent=1))
    text = "\n".join(parts) if parts else "(no output)"
    return cap_text(text, cap_bytes)
