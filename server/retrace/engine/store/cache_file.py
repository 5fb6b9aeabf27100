"""Cache files in ``<store>/cache/``: written whole and atomically, never required.

A cache (the history index, the agent's session index) only saves work: readers treat a missing
or damaged file as empty and rebuild from the journals, so a failed write is logged, not raised.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def write_cache_json(path: Path, body: Any, what: str) -> bool:
    """Write ``body`` as compact JSON to ``path`` through a temporary file and a rename (readers
    see the old file or the new one, never a torn one). ``False`` (and a warning naming ``what``)
    when it could not be written."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(body, separators=(",", ":")))
        tmp.replace(path)
    except OSError as exc:
        log.warning("%s %s not written: %s", what, path, exc)
        tmp.unlink(missing_ok=True)
        return False
    return True
