"""Where a store lives and what is in it.

``<store>/store.json`` (format version, workspace path), ``blobs/``, ``sessions/<id>/journal.jsonl``,
``cache/`` (rebuildable: stat cache, history index), ``lock``, and ``tasks/`` (subagents' own
stores and workspace copies: not part of this store's history, size or retention). The default
location (:func:`retrace.engine.store.home.default_store_dir`, re-exported here) is
``$RETRACE_STORE`` or ``<user data dir>/retrace/stores/<slug>-<sha256(workspace)[:12]>`` (or the
store a pointer beside it names) — never inside the workspace.
The user data dir is the platform's (``platformdirs``): ``$XDG_DATA_HOME`` (else
``~/.local/share``) on Linux, ``~/Library/Application Support`` on macOS, ``%LOCALAPPDATA%`` on
Windows.
"""

# String paths and os-level calls on purpose: hot paths, no Path object per file.
# ruff: noqa: PTH105

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from retrace.engine.errors import RetraceError, StoreCorrupt, StoreNotInitialised
from retrace.engine.store.home import default_store_dir

__all__ = ["FORMAT_VERSION", "StoreLayout", "default_store_dir"]

FORMAT_VERSION = 1


class StoreLayout:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.meta = root / "store.json"
        self.blobs = root / "blobs"
        self.sessions = root / "sessions"
        self.cache = root / "cache"
        self.stat_cache = self.cache / "stat-cache.marshal"
        self.history_index = self.cache / "history-index.json"
        self.lock = root / "lock"
        self.tasks = root / "tasks"
        self.runtime = root / "runtime"
        """What a running server keeps that is neither history nor cache (its background commands;
        a headless holder's marker and log, ``retrace.relay.holder``)."""
        self.background_record = self.runtime / "background.json"
        self.remote_config = root / "remote.json"
        """Configured remotes (no credentials, no keys)."""
        self.remote = root / "remote"
        """Remote sync state, index cache and outbox: not history, like ``tasks/``."""

    def journal(self, session_id: str) -> Path:
        return self.sessions / session_id / "journal.jsonl"

    def session_ids(self) -> list[str]:
        if not self.sessions.is_dir():
            return []
        return sorted(
            p.name for p in self.sessions.iterdir() if p.is_dir() and (p / "journal.jsonl").exists()
        )

    def check_outside(self, workspace: Path) -> None:
        ws = workspace.resolve()
        root = self.root.resolve()
        if root == ws or ws in root.parents:
            raise RetraceError(f"the store must not be inside the workspace: {root} is under {ws}")

    def read_meta(self) -> dict[str, Any]:
        try:
            meta = json.loads(self.meta.read_text())
        except FileNotFoundError:
            raise StoreNotInitialised(f"no Retrace store at {self.root}") from None
        except ValueError as exc:
            raise StoreCorrupt(f"{self.meta} is not valid JSON: {exc}") from None
        if not isinstance(meta, dict) or meta.get("formatVersion") != FORMAT_VERSION:
            version = meta.get("formatVersion") if isinstance(meta, dict) else meta
            raise StoreCorrupt(f"{self.meta}: unsupported store format {version!r}")
        return meta

    def check_owner(self, meta: dict[str, Any], workspace: Path) -> dict[str, Any]:
        """``meta`` when this store is ``workspace``'s (a store records the workspace it was made for)."""
        if meta.get("workspace") not in (None, str(workspace)):
            owner = meta.get("workspace")
            raise RetraceError(f"store {self.root} belongs to workspace {owner}, not {workspace}")
        return meta

    def existing_meta(self, workspace: Path) -> dict[str, Any]:
        """The metadata of this existing store of ``workspace``: what a reader checks first (never
        creates anything)."""
        if not self.meta.exists():
            raise StoreNotInitialised(f"no Retrace store at {self.root} (open a writer first)")
        return self.check_owner(self.read_meta(), workspace)

    def init(self, workspace: Path) -> dict[str, Any]:
        """Create the store (idempotent) and return its metadata."""
        self.root.mkdir(parents=True, exist_ok=True)
        for d in (self.blobs, self.sessions, self.cache):
            d.mkdir(exist_ok=True)
        if self.meta.exists():
            return self.read_meta()
        # originKey: proves which checkpoint lines this store wrote (engine/history/origin.py).
        meta = {
            "formatVersion": FORMAT_VERSION,
            "workspace": str(workspace.resolve()),
            "originKey": secrets.token_hex(32),
        }
        tmp = self.meta.with_suffix(".tmp")
        tmp.write_text(json.dumps(meta, indent=2) + "\n")
        os.replace(tmp, self.meta)
        return meta
