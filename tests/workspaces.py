"""THE factory of sample workspaces: a folder holding the files a test names.

Each test folder's ``workspace`` fixture (or ``make_workspace`` helper) calls :func:`project` with
what ITS tests rely on — the folder's name (a space, a non-ASCII letter: deliberately different
per suite, the paths must survive them) and the files (the scenario a fake model answers matches
their content) — so the contents stay explicit where they are used and the making is written once.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def project(parent: Path, name: str = "work space", files: Mapping[str, str | bytes] | None = None) -> Path:
    """``parent/name`` made (parents too) holding ``files``: workspace-relative ``/`` path → text
    (written as UTF-8) or bytes (written as they are). No files: an empty folder."""
    root = parent / name
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in (files or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, "utf-8")
    return root
