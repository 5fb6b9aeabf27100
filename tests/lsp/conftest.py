"""Fixtures for the real-server tests: a sample workspace, a store outside it, and the fake
Messages API running in the test process (real HTTP), so it outlives server restarts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from tests.lsp.lsp_support import APP_PY, AUTO, EditorClient, fake_model, model_env, start_editor, stop_editor
from tests.workspaces import project

from retrace.offline import FakeModel


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    files: dict[str, str | bytes] = {
        "README.md": "# Sample\n\nA small project.\n",
        "src/app.py": APP_PY,
        "notes.txt": b"todo: one\r\ntodo: two\r\n",
        "logo.bin": bytes(range(256)),
    }
    return project(tmp_path, "work space", files)


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
