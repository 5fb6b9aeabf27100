"""The extension's interpreter probe (serverEnv.ts ``PROBE_SCRIPT``), read from its source, for the
tests that run it for real with a Python."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def probe_script() -> str:
    """``PROBE_SCRIPT`` as the extension joins it (one quoted line per array element)."""
    ts = (ROOT / "extension" / "src" / "client" / "serverEnv.ts").read_text("utf-8")
    start = ts.index("export const PROBE_SCRIPT = [")
    body = ts[start : ts.index("].join(", start)]
    return "\n".join(m.group(1).replace("\\'", "'") for m in re.finditer(r"^\s*'(.*)',\s*$", body, re.M))
