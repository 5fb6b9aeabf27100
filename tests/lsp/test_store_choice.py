"""Which store the server opens (:func:`retrace.lsp.startup.choose_store`), from the client's
initialization options, untrusted: an explicit ``storeDir`` wins; otherwise the folder's one
store, after adopting a valid old store named by ``legacyStoreDir``; a malformed old path never
keeps the folder from opening."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrace.engine import Engine
from retrace.engine.store import home
from retrace.lsp.handlers.lifecycle import initialization_options
from retrace.lsp.startup import choose_store
from retrace.protocol.models import InitializationOptions


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("RETRACE_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()


def test_explicit_store_wins_over_everything(ws: Path, tmp_path: Path) -> None:
    legacy = tmp_path / "legacy"
    Engine.open(ws, legacy).close()
    chosen = choose_store(
        ws, InitializationOptions(store_dir=str(tmp_path / "given"), legacy_store_dir=str(legacy))
    )
    assert chosen == tmp_path / "given" and (legacy / "store.json").is_file()


def test_valid_old_store_is_adopted(ws: Path, tmp_path: Path) -> None:
    legacy = tmp_path / "legacy"
    Engine.open(ws, legacy).close()
    assert choose_store(ws, InitializationOptions(legacy_store_dir=str(legacy))) == home.store_home(ws)
    assert not legacy.exists()


@pytest.mark.parametrize("legacy", ["relative/store", "/no/such/store", "/tmp/with\0nul", "", "/"])
def test_malformed_old_store_path_opens_the_folders_store(ws: Path, legacy: str) -> None:
    assert choose_store(ws, InitializationOptions(legacy_store_dir=legacy)) == home.store_home(ws)


def test_no_option_is_the_folders_store(ws: Path) -> None:
    assert choose_store(ws, InitializationOptions()) == home.store_home(ws)


@pytest.mark.parametrize("raw", [7, None, ["x"], {"a": 1}])
def test_non_string_old_store_is_dropped(raw: object) -> None:
    options = initialization_options({"legacyStoreDir": raw, "settings": {"maxTokens": -1}})
    assert options.legacy_store_dir is None
