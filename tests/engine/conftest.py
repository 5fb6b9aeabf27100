"""Shared fixtures for engine tests: a workspace, a store outside it, and a tree snapshot helper."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from retrace.engine import Engine, EngineConfig


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    d = tmp_path / "work space ü"
    d.mkdir()
    return d


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
