"""The settings file edge of ``retrace integrate`` in-process: failures in the middle of a write
(no permission, the file changed meanwhile) leave the user's file as it was, and the server's
start-up refresh only ever updates a file that already holds Retrace's entries."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrace.app.hooks import settings_file
from retrace.app.hooks.claude_code import INSTALL as CLAUDE_CODE
from retrace.app.hooks.gemini_cli import INSTALL as GEMINI_CLI
from retrace.app.hooks.install import hook_command, is_ours
from retrace.app.hooks.settings_file import AgentSettingsError, integrate, refresh


def _commands(path: Path, agent: str) -> set[str]:
    doc = json.loads(path.read_text())
    return {
        hook["command"]
        for groups in doc.get("hooks", {}).values()
        for group in groups
        for hook in group["hooks"]
        if is_ours(hook, agent)
    }


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


def test_no_permission_to_create_the_temporary_file_is_a_clear_error(ws: Path, monkeypatch: Any) -> None:
    path = ws / CLAUDE_CODE.settings_rel
    path.parent.mkdir()
    path.write_text('{"model": "opus"}')
    real_open = os.open

    def refusing_open(name: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & os.O_CREAT:
            raise PermissionError(13, "Permission denied", name)
        return real_open(name, flags, *args, **kwargs)

    monkeypatch.setattr(settings_file.os, "open", refusing_open)
    with pytest.raises(
        AgentSettingsError, match=r"cannot write \.claude/settings\.local\.json: Permission denied"
    ):
        integrate(ws, "claude-code", python="/py")
    assert path.read_text() == '{"model": "opus"}'
    assert [p.name for p in path.parent.iterdir()] == ["settings.local.json"]


@pytest.mark.parametrize("present", [True, False])
def test_a_file_changed_while_retrace_writes_is_never_overwritten(
    ws: Path, monkeypatch: Any, present: bool
) -> None:
    path = ws / CLAUDE_CODE.settings_rel
    path.parent.mkdir()
    if present:
        path.write_text("{}")
    real_render = settings_file.render_settings

    def render_while_someone_writes(doc: dict[str, Any], **kwargs: Any) -> bytes:
        path.write_text('{"theirs": true, "longer": 1}')  # the user (or the agent) saves meanwhile
        return real_render(doc, **kwargs)

    monkeypatch.setattr(settings_file, "render_settings", render_while_someone_writes)
    with pytest.raises(AgentSettingsError, match="changed while Retrace was updating it"):
        integrate(ws, "claude-code", python="/py")
    assert json.loads(path.read_text()) == {"theirs": True, "longer": 1}
    assert [p.name for p in path.parent.iterdir()] == ["settings.local.json"]


def test_refresh_never_creates_a_settings_file(ws: Path) -> None:
    results, problems = refresh(ws, python="/new/python")
    assert [r.action for r in results] == ["unchanged", "unchanged"]
    assert problems == []
    assert list(ws.iterdir()) == []


def test_refresh_leaves_a_file_without_retrace_entries_alone(ws: Path) -> None:
    path = ws / GEMINI_CLI.settings_rel
    path.parent.mkdir()
    path.write_text('{"theme": "x"}')
    results, _ = refresh(ws, python="/new/python")
    assert {r.action for r in results} == {"unchanged"}
    assert path.read_text() == '{"theme": "x"}'


def test_refresh_moves_an_integrated_workspace_to_this_interpreter(ws: Path) -> None:
    integrate(ws, "claude-code", python="/old/python")
    integrate(ws, "gemini-cli", python="/old/python")
    results, problems = refresh(ws, python="/new/python")
    assert problems == []
    assert [r.action for r in results] == ["updated", "updated"]
    assert _commands(ws / CLAUDE_CODE.settings_rel, "claude-code") == {
        hook_command(CLAUDE_CODE, "/new/python")
    }
    assert _commands(ws / GEMINI_CLI.settings_rel, "gemini-cli") == {hook_command(GEMINI_CLI, "/new/python")}
    again, _ = refresh(ws, python="/new/python")
    assert [r.action for r in again] == ["unchanged", "unchanged"]


def test_refresh_reports_a_broken_file_and_still_updates_the_other_agent(ws: Path) -> None:
    integrate(ws, "gemini-cli", python="/old/python")
    bad = ws / CLAUDE_CODE.settings_rel
    bad.parent.mkdir()
    bad.write_text("{oops")
    results, problems = refresh(ws, python="/new/python")
    assert [r.agent for r in results] == ["gemini-cli"]
    assert results[0].action == "updated"
    assert len(problems) == 1 and problems[0].startswith("claude-code: ") and "not valid JSON" in problems[0]
    assert bad.read_text() == "{oops"


def test_refresh_leaves_entries_running_another_live_interpreter(ws: Path, tmp_path: Path) -> None:
    other = tmp_path / "pipx python"  # another Retrace install the user chose: it still exists
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    integrate(ws, "claude-code", python=str(other))
    before = (ws / CLAUDE_CODE.settings_rel).read_bytes()
    results, _ = refresh(ws, python="/new/python")
    assert results[0].action == "unchanged"
    assert (ws / CLAUDE_CODE.settings_rel).read_bytes() == before


def test_refresh_updates_this_interpreters_entries_in_an_older_shape(ws: Path) -> None:
    path = ws / CLAUDE_CODE.settings_rel
    path.parent.mkdir()
    old = {
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "/new/python -m retrace hook claude-code"}]}]
        }
    }
    path.write_text(json.dumps(old))
    results, _ = refresh(ws, python="/new/python")
    assert results[0].action == "updated"
    assert _commands(path, "claude-code") == {hook_command(CLAUDE_CODE, "/new/python")}


_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=6)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
_user_docs = st.dictionaries(
    st.sampled_from(["env", "model", "theme", "permissions", "ü"]), _values, max_size=4
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    doc=_user_docs,
    indent=st.sampled_from([None, 2, 4, "\t"]),
    crlf=st.booleans(),
    bom=st.booleans(),
    agent=st.sampled_from(["claude-code", "gemini-cli"]),
)
def test_on_disk_integrate_keeps_the_users_values_writes_once_and_remove_gives_them_back(
    tmp_path: Path, doc: dict[str, Any], indent: Any, crlf: bool, bom: bool, agent: str
) -> None:
    spec = CLAUDE_CODE if agent == "claude-code" else GEMINI_CLI
    ws = Path(tempfile.mkdtemp(dir=tmp_path))  # one folder per example (the fixture is shared)
    (ws / spec.settings_dir).mkdir(parents=True)
    path = ws / spec.settings_rel
    text = json.dumps(doc, indent=indent, ensure_ascii=False)
    path.write_bytes((("\ufeff" if bom else "") + (text.replace("\n", "\r\n") if crlf else text)).encode())
    assert integrate(ws, agent, python="/py").action == "added"
    written = path.read_bytes()
    on_disk = json.loads(written.decode("utf-8-sig"))
    assert {k: v for k, v in on_disk.items() if k not in ("hooks", "hooksConfig")} == {
        k: v for k, v in doc.items() if k not in ("hooks", "hooksConfig")
    }
    assert written.startswith(b"\xef\xbb\xbf") is bom
    assert integrate(ws, agent, python="/py").action == "unchanged"
    assert path.read_bytes() == written
    assert integrate(ws, agent, remove_=True, python="/py").action == "removed"
    if path.exists():
        back = json.loads(path.read_bytes().decode("utf-8-sig"))
        expected = dict(doc)
        if spec.enable_switch is not None:
            expected.setdefault("hooksConfig", {"enabled": True})
        assert back == expected
    else:
        assert doc == {}
