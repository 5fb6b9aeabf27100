"""Where a folder's store lives: THE rule every process follows (the extension's server, a server
started without ``--store``, the command line, the agents' hooks, the relay's client side).

:func:`default_store_dir` is the one entry point: ``$RETRACE_STORE`` when set (tests, users who
want one place), else the folder's home ``<user data dir>/retrace/stores/<slug>-<sha256(ws)[:12]>``
(:func:`store_home`), unless that home holds no store and a valid pointer names one elsewhere.

The pointer, ``<stores>/<slug>-<hash>.json`` = ``{"store": "<absolute dir>", "workspace": "..."}``,
records an existing store that could not be moved home (another file system: see
:mod:`retrace.engine.store.adopt`). It is untrusted on every read: it counts only when it names
an absolute directory outside the folder holding a ``store.json`` whose workspace is this folder;
anything else is ignored with a log line, and the home is used. A home holding a store always
wins over a pointer.

Standard library only (plus ``platformdirs``): the command line's fast path imports this module
before any store is opened.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

import platformdirs

from retrace.engine.store.atomic import write_atomic

log = logging.getLogger(__name__)

META = "store.json"
POINTER_SUFFIX = ".json"
MAX_POINTER_BYTES = 64 * 1024
"""A pointer is a few hundred bytes; a bigger file is not one (never read whole)."""


def explicit_store() -> Path | None:
    """``$RETRACE_STORE`` when set: it names the store of every folder (no home, no pointer)."""
    env = os.environ.get("RETRACE_STORE")
    return Path(env).expanduser().resolve() if env else None


def store_home(workspace: Path) -> Path:
    """The folder's own store directory under the user data dir (whether or not it exists).
    ``workspace`` is resolved first."""
    ws = workspace.resolve()
    base = Path(platformdirs.user_data_dir("retrace", appauthor=False))
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", ws.name).strip("-") or "root"
    # normcase: where the file system ignores letter case (Windows), C:\Work and c:\work are
    # one workspace and must share one store. The identity on POSIX, so Linux keys are unchanged.
    digest = hashlib.sha256(os.path.normcase(str(ws)).encode()).hexdigest()[:12]
    return base / "stores" / f"{slug}-{digest}"


def pointer_file(home: Path) -> Path:
    """The pointer beside a home: ``<stores>/<slug>-<hash>.json``."""
    return home.with_name(home.name + POINTER_SUFFIX)


def default_store_dir(workspace: Path) -> Path:
    """THE store of ``workspace``: ``$RETRACE_STORE``, else its home when the home holds a store,
    else a valid pointer's store, else the home (where a new store is created)."""
    explicit = explicit_store()
    if explicit is not None:
        return explicit
    ws = workspace.resolve()
    home = store_home(ws)
    if (home / META).is_file():
        return home
    return read_pointer(ws, home) or home


def same_workspace(recorded: object, workspace: Path) -> bool:
    """Whether a ``store.json``'s recorded workspace names ``workspace`` (resolved)."""
    return isinstance(recorded, str) and os.path.normcase(recorded) == os.path.normcase(str(workspace))


def store_workspace(store: Path) -> str | None:
    """The workspace ``<store>/store.json`` records; ``None`` when there is no readable one."""
    try:
        with (store / META).open("rb") as f:
            meta = json.loads(f.read(MAX_POINTER_BYTES))
    except (OSError, ValueError):
        return None
    recorded = meta.get("workspace") if isinstance(meta, dict) else None
    return recorded if isinstance(recorded, str) else None


def pointer_problem(raw: Any, workspace: Path) -> tuple[Path | None, str | None]:
    """A parsed pointer checked against ``workspace`` (resolved): its store, else why not."""
    if not isinstance(raw, dict) or not isinstance(raw.get("store"), str):
        return None, 'it is not {"store": "<directory>", ...}'
    named: str = raw["store"]
    if "\0" in named or not Path(named).is_absolute():
        return None, f"the store it names is not an absolute path: {named!r}"
    target = Path(named)
    problem = _place_problem(target, workspace)
    return (None, problem) if problem is not None else (target, None)


def _place_problem(target: Path, workspace: Path) -> str | None:
    """Why the absolute ``target`` cannot be ``workspace``'s store; ``None`` when it can."""
    if not target.is_dir():
        return f"the store it names is not a directory: {target}"
    real = target.resolve()
    if real == workspace or workspace in real.parents:
        return f"the store it names is inside the workspace: {target}"
    recorded = store_workspace(target)
    if recorded is None:
        return f"{target} holds no readable {META}"
    if not same_workspace(recorded, workspace):
        return f"the store {target} belongs to workspace {recorded}, not {workspace}"
    return None


def read_pointer(workspace: Path, home: Path | None = None) -> Path | None:
    """The store a valid pointer names for ``workspace`` (resolved); ``None`` when there is no
    pointer, and (logged) when it is not valid."""
    path = pointer_file(home or store_home(workspace))
    try:
        with path.open("rb") as f:
            data = f.read(MAX_POINTER_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("store pointer %s ignored: cannot read it (%s)", path, exc.strerror or exc)
        return None
    try:
        raw = json.loads(data) if len(data) <= MAX_POINTER_BYTES else None
    except ValueError:
        raw = None
    target, problem = pointer_problem(raw, workspace)
    if problem is not None:
        log.warning("store pointer %s ignored (using %s): %s", path, home or store_home(workspace), problem)
    return target


def write_pointer(workspace: Path, store: Path, home: Path | None = None) -> Path:
    """Record that ``workspace``'s store is ``store`` (atomically: a reader sees the old pointer
    or the new one, never a torn file). Returns the pointer's path; ``OSError`` when it cannot."""
    path = pointer_file(home or store_home(workspace))
    body = json.dumps({"store": str(store), "workspace": str(workspace)}, indent=2) + "\n"
    write_atomic(path, body.encode("utf-8"))
    return path
