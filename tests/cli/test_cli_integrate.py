"""``retrace integrate claude-code|gemini-cli [--workspace DIR] [--remove] [--json]`` as a real
subprocess on real settings files: the user's settings are kept, a second run writes nothing, a
remove takes out only Retrace's entries, and every file Retrace cannot safely rewrite is refused
with one clear line and left byte for byte as it was."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.cli import cli_support
from tests.cli.cli_support import RETRACE

from retrace.app.hooks.claude_code import INSTALL as CLAUDE_CODE
from retrace.app.hooks.gemini_cli import INSTALL as GEMINI_CLI
from retrace.app.hooks.install import hook_command, is_ours
from retrace.app.hooks.registry import INSTALLS

CLAUDE = ".claude/settings.local.json"
GEMINI = ".gemini/settings.json"


def run(workspace: Path, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    cmd = [str(RETRACE), "integrate", *args, "--workspace", str(workspace)]
    proc = cli_support.run(cmd, dict(os.environ), timeout=60)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def run_json(workspace: Path, *args: str) -> Any:
    return json.loads(run(workspace, *args, "--json").stdout)


def ours(doc: dict[str, Any], agent: str) -> list[tuple[str, str]]:
    return [
        (event, hook["command"])
        for event, groups in doc.get("hooks", {}).items()
        if isinstance(groups, list)
        for group in groups
        for hook in group.get("hooks", [])
        if is_ours(hook, agent)
    ]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "my project"
    ws.mkdir()
    return ws


def _interpreter() -> str:
    # The console script's interpreter: what the command line writes as the hook's python.
    first = RETRACE.read_text().splitlines()[0]
    return first.removeprefix("#!")


@pytest.mark.parametrize("agent", ["claude-code", "gemini-cli"])
def test_a_fresh_workspace_gets_the_documented_hooks(ws: Path, agent: str) -> None:
    spec = INSTALLS[agent]
    result = run_json(ws, agent)
    path = ws / spec.settings_rel
    assert result["file"] == str(path)
    assert result["action"] == "added"
    assert result["events"] == spec.event_names
    assert result["agent"] == agent
    doc = json.loads(path.read_text())
    assert sorted(e for e, _ in ours(doc, agent)) == sorted(spec.event_names)
    command = ours(doc, agent)[0][1]
    assert command == result["command"] == hook_command(spec, _interpreter())
    assert path.read_text().endswith("}\n")


def test_users_settings_and_hooks_stay_and_a_second_run_writes_nothing(ws: Path) -> None:
    user = {
        "permissions": {"allow": ["Bash(npm test:*)"]},
        "hooks": {
            "PostToolUse": [
                {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "npx prettier"}]}
            ]
        },
    }
    path = ws / CLAUDE
    path.parent.mkdir()
    path.write_text(json.dumps(user))
    path.chmod(0o600)
    out = run(ws, "claude-code")
    assert "added" in out.stdout and CLAUDE in out.stdout
    doc = json.loads(path.read_text())
    assert doc["permissions"] == user["permissions"]
    assert doc["hooks"]["PostToolUse"][0] == user["hooks"]["PostToolUse"][0]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # the file's mode is kept
    written = path.read_bytes()
    before = path.stat()
    again = run_json(ws, "claude-code")
    assert again["action"] == "unchanged"
    after = path.stat()
    assert path.read_bytes() == written
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # not even rewritten


def test_a_stale_interpreter_path_is_replaced_not_duplicated(ws: Path) -> None:
    path = ws / CLAUDE
    path.parent.mkdir()
    from retrace.app.hooks.install import merge

    stale = merge({"model": "x"}, CLAUDE_CODE, hook_command(CLAUDE_CODE, "/gone/venv/bin/python")).doc
    path.write_text(json.dumps(stale, indent=2))
    assert run_json(ws, "claude-code")["action"] == "updated"
    doc = json.loads(path.read_text())
    entries = ours(doc, "claude-code")
    assert len(entries) == len(CLAUDE_CODE.events)
    assert all("/gone/" not in command for _, command in entries)
    assert doc["model"] == "x"


def test_remove_takes_out_only_retraces_entries(ws: Path) -> None:
    user_hook = {"type": "command", "command": "./check.sh"}
    path = ws / CLAUDE
    path.parent.mkdir()
    path.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [user_hook]}]}, "env": {"A": "1"}}))
    run(ws, "claude-code")
    result = run_json(ws, "claude-code", "--remove")
    assert result["action"] == "removed"
    assert json.loads(path.read_text()) == {"hooks": {"Stop": [{"hooks": [user_hook]}]}, "env": {"A": "1"}}
    assert run_json(ws, "claude-code", "--remove")["action"] == "unchanged"


@pytest.mark.parametrize("agent", ["claude-code", "gemini-cli"])
def test_remove_of_a_file_retrace_created_leaves_nothing(ws: Path, agent: str) -> None:
    spec = INSTALLS[agent]
    run(ws, agent)
    out = run(ws, agent, "--remove")
    assert "removed" in out.stdout
    assert not (ws / spec.settings_rel).exists()
    assert not (ws / spec.settings_dir).exists()  # the folder it created, now empty
    assert list(ws.iterdir()) == []


def test_remove_without_a_settings_file_creates_nothing(ws: Path) -> None:
    assert run_json(ws, "gemini-cli", "--remove")["action"] == "unchanged"
    assert list(ws.iterdir()) == []


def test_gemini_cli_hooks_switch_and_settings_kept(ws: Path) -> None:
    path = ws / GEMINI
    path.parent.mkdir()
    path.write_text('{\n  "theme": "GitHub",\n  "hooksConfig": {"enabled": false}\n}\n')
    result = run_json(ws, "gemini-cli")
    doc = json.loads(path.read_text())
    assert doc["theme"] == "GitHub"
    assert doc["hooksConfig"] == {"enabled": False}  # the user's explicit choice stays ...
    assert any("hooksConfig.enabled" in note for note in result["notes"])  # ... and is reported
    out = run(ws, "gemini-cli")
    assert "hooksConfig.enabled" in out.stdout


BAD_FILES = {
    "not json": (b"{hooks: }", "not valid JSON"),
    "comments": (b'{\n  // mine\n  "hooks": {}\n}\n', "not valid JSON"),
    "trailing comma": (b'{"a": 1,}', "not valid JSON"),
    "array": (b"[]", "not a JSON object"),
    "string": (b'"x"', "not a JSON object"),
    "empty": (b"", "not valid JSON"),
    "hooks not object": (b'{"hooks": []}', "'hooks'"),
    "event not list": (b'{"hooks": {"Stop": {}}}', "'hooks.Stop'"),
    "duplicate key": (b'{"hooks": {}, "hooks": {"Stop": []}}', "duplicate key"),
    "NaN": (b'{"a": NaN}', "not valid JSON"),
    "not utf-8": (b'{"a": "\xff"}', "not UTF-8"),
    "deep": (b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
    "too big": (b'{"a": "' + b"x" * (1 << 20) + b'"}', "larger than"),
    "infinite number": (b'{"a": 1e400}', "out of range"),
    "huge integer": (b'{"a": ' + b"9" * 5000 + b"}", "not valid JSON"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
@pytest.mark.parametrize("remove", [False, True])
def test_a_file_retrace_cannot_rewrite_safely_is_refused_and_left_untouched(
    ws: Path, case: str, remove: bool
) -> None:
    content, needle = BAD_FILES[case]
    path = ws / CLAUDE
    path.parent.mkdir()
    path.write_bytes(content)
    proc = run(ws, "claude-code", *(["--remove"] if remove else []), code=1)
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("retrace: error: "), proc.stderr
    assert needle in lines[0] and CLAUDE in lines[0], lines[0]
    assert path.read_bytes() == content
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.local.json"]  # no temporary left


def test_a_symlinked_settings_file_is_refused(ws: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    (ws / ".claude").mkdir()
    (ws / CLAUDE).symlink_to(target)
    proc = run(ws, "claude-code", code=1)
    assert ".claude/settings.local.json is a symlink" in proc.stderr
    assert target.read_text() == "{}"
    assert (ws / CLAUDE).is_symlink()


@pytest.mark.parametrize("inside", [False, True])
def test_a_symlinked_settings_folder_is_refused(ws: Path, tmp_path: Path, inside: bool) -> None:
    target = (ws / "shared") if inside else (tmp_path / "outside")
    target.mkdir()
    (ws / ".gemini").symlink_to(target)
    proc = run(ws, "gemini-cli", code=1)
    assert ".gemini is a symlink" in proc.stderr
    assert list(target.iterdir()) == []


def test_a_settings_folder_that_is_a_file_is_refused(ws: Path) -> None:
    (ws / ".claude").write_text("x")
    proc = run(ws, "claude-code", code=1)
    assert ".claude" in proc.stderr
    assert (ws / ".claude").read_text() == "x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_folder_is_a_clear_error(ws: Path) -> None:
    path = ws / CLAUDE
    path.parent.mkdir()
    path.write_text("{}")
    path.parent.chmod(0o500)
    try:
        proc = run(ws, "claude-code", code=1)
    finally:
        path.parent.chmod(0o700)
    assert "cannot write" in proc.stderr and "Permission denied" in proc.stderr
    assert path.read_text() == "{}"


def test_a_missing_workspace_is_a_clear_error(tmp_path: Path) -> None:
    proc = run(tmp_path / "nope", "claude-code", code=1)
    assert "workspace" in proc.stderr and "nope" in proc.stderr
    assert not (tmp_path / "nope").exists()


def test_an_unknown_agent_is_a_usage_error(ws: Path) -> None:
    proc = run(ws, "cline", code=2)
    assert "claude-code" in proc.stderr


def test_crlf_and_a_byte_order_mark_are_kept(ws: Path) -> None:
    path = ws / CLAUDE
    path.parent.mkdir()
    path.write_bytes(b'\xef\xbb\xbf{\r\n  "model": "opus"\r\n}\r\n')
    run(ws, "claude-code")
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf{\r\n")
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert json.loads(data.decode("utf-8-sig"))["model"] == "opus"
    assert run_json(ws, "claude-code")["action"] == "unchanged"


def test_the_hook_command_runs_retrace_even_from_a_folder_holding_its_own_retrace_package(ws: Path) -> None:
    fake = ws / "retrace"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text("print('HIJACKED')\n")
    command = run_json(ws, "claude-code")["command"]
    words = shlex.split(command)
    interpreter_and_module = words[: words.index("retrace") + 1]
    proc = subprocess.run(
        [*interpreter_and_module, "--version"],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.stdout.startswith("retrace "), (proc.stdout, proc.stderr)


def test_gemini_file_is_found_where_gemini_reads_it(ws: Path) -> None:
    run(ws, "gemini-cli")
    doc = json.loads((ws / GEMINI).read_text())
    assert doc["hooksConfig"] == {"enabled": True}
    assert [g["matcher"] for g in doc["hooks"]["AfterTool"]] == ["*"]
    assert GEMINI_CLI.settings_rel == GEMINI


def test_a_settings_path_that_is_a_folder_is_refused(ws: Path) -> None:
    (ws / CLAUDE).mkdir(parents=True)
    proc = run(ws, "claude-code", code=1)
    assert f"{CLAUDE} is not a regular file" in proc.stderr
    assert (ws / CLAUDE).is_dir()


def test_a_lone_surrogate_escape_survives_the_rewrite(ws: Path) -> None:
    path = ws / CLAUDE
    path.parent.mkdir()
    path.write_text('{"odd": "\\ud800 caf\u00e9", "name": "caf\u00e9"}')
    run(ws, "claude-code")
    doc = json.loads(path.read_text())
    assert doc["odd"] == "\ud800 caf\u00e9"
    assert doc["name"] == "caf\u00e9"


def test_a_read_only_settings_file_is_refused_when_it_would_change(ws: Path) -> None:
    run(ws, "claude-code")
    path = ws / CLAUDE
    path.chmod(0o444)
    assert run_json(ws, "claude-code")["action"] == "unchanged"  # nothing to write: no complaint
    before = path.read_bytes()
    proc = run(ws, "claude-code", "--remove", code=1)
    assert f"{CLAUDE} is read-only" in proc.stderr
    assert path.read_bytes() == before
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
