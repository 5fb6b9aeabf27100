"""Fixtures for the real-server tests: a sample workspace, a store outside it, and the fake
Messages API running in the test process (real HTTP), so it outlives server restarts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from tests.lsp.lsp_support import APP_PY, AUTO, EditorClient, fake_model, model_env, start_editor, stop_editor

from retrace.offline import FakeModel


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "work space"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# Sample\n\nA small project.\n", "utf-8")
    (root / "src" / "app.py").write_text(APP_PY, "utf-8")
    (root / "notes.txt").write_bytes(b"todo: one\r\ntodo: two\r\n")
    (root / "logo.bin").write_bytes(bytes(range(256)))
    return root


@pytest.fixture
def session_model() -> Iterator[FakeModel]:
    model = fake_model("session")
    yield model
    model.stop()


@pytest.fixture
async def editor(workspace: Path, store: Path, session_model: FakeModel) -> AsyncIterator[EditorClient]:
    client = await start_editor(workspace, store, env=model_env(session_model), settings=AUTO)
    yield client
    await stop_editor(client)


@pytest.fixture
async def editors() -> AsyncIterator[list[EditorClient]]:
    """Editors a test starts (append each): every one still running is stopped at the end."""
    started: list[EditorClient] = []
    yield started
    for editor in started:
        if not editor.client.stopped:
            await stop_editor(editor)
