"""Sync's JSON local files (remote.json, push state, caches), written whole through the store's
one atomic replace (:func:`retrace.engine.store.atomic.write_atomic`)."""

from __future__ import annotations

import json
from pathlib import Path

from retrace.engine.store.atomic import write_atomic


def write_json(path: Path, data: object, *, compact: bool = False) -> None:
    text = json.dumps(data, separators=(",", ":")) if compact else json.dumps(data, indent=1) + "\n"
    write_atomic(path, text.encode("utf-8"))
