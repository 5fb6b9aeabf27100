"""Shared fixtures for engine tests: a workspace, a store outside it, and a tree snapshot helper."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from retrace.engine import Engine, EngineConfig

TreeState = dict[str, tuple[str, str, bool]]


def tree_state(root: Path, *, include_git: bool = False) -> TreeState:
    """path → (kind, sha256 of bytes or link target, executable) for every file and link."""
    out: TreeState = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if not include_git:
            dirnames[:] = [d for d in dirnames if d != ".git"]
        names = list(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        for name in names:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root).replace(os.sep, "/")
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("symlink", os.readlink(p), False)
            else:
                with open(p, "rb") as f:
                    out[rel] = ("file", hashlib.sha256(f.read()).hexdigest(), bool(st.st_mode & 0o100))
    return out


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "work space ü"
    d.mkdir()
    return d


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def open_engine(ws: Path, store: Path) -> Iterator[Callable[..., Engine]]:
    opened: list[Engine] = []

    def factory(**kw: object) -> Engine:
        cfg = kw.pop("config", None) or EngineConfig()
        eng = Engine.open(ws, store, config=cfg, **kw)  # type: ignore[arg-type]
        opened.append(eng)
        return eng

    yield factory
    for e in opened:
        e.close()


def write(root: Path, rel: str, data: str | bytes, *, executable: bool = False) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    p.write_bytes(data)
    if executable:
        p.chmod(0o755)
