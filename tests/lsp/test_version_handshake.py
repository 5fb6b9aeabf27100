"""The server/extension version handshake at ``initialize``, over the real server process, and the
isolated start (``python -I -m retrace serve``) that nothing in the workspace can shadow.

Speaks raw JSON-RPC (Content-Length framing) to a subprocess so the test sees exactly what the
VS Code client sees: the ``initialize`` result or error."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from tests.jsonrpc_frames import read, send
from tests.workspaces import project

import retrace

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SERVER_VERSION = version("retrace-checkpoints")


def initialize(
    workspace: Path, options: dict[str, Any], *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Start ``python -I -m retrace serve`` (the extension's launch), send ``initialize``, return
    its response, and shut the server down."""
    proc = subprocess.Popen(
        [sys.executable, "-I", "-m", "retrace", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=cwd or workspace,
        env=env,
    )
    try:
        send(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "processId": None,
                    "rootUri": workspace.as_uri(),
                    "capabilities": {},
                    "initializationOptions": {"storeDir": str(workspace.parent / "store"), **options},
                },
            },
        )
        while True:
            message = read(proc)
            if message.get("id") == 1:
                return message
    finally:
        send(proc, {"jsonrpc": "2.0", "method": "exit"})
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return project(tmp_path, "ws", {"a.txt": "hello\n"})


def test_matching_client_version_is_accepted_and_server_info_names_the_version(workspace: Path) -> None:
    response = initialize(workspace, {"clientVersion": SERVER_VERSION})
    assert "error" not in response, response
    assert response["result"]["serverInfo"] == {"name": "retrace", "version": SERVER_VERSION}


def test_a_different_client_version_fails_initialize_naming_both_versions_and_the_fix(
    workspace: Path,
) -> None:
    response = initialize(workspace, {"clientVersion": "99.1.0"})
    error = response.get("error")
    assert error is not None, response
    assert "99.1.0" in error["message"]
    assert SERVER_VERSION in error["message"]
    assert "Rebuild Server Environment" in error["message"]
    assert error["data"]["serverVersion"] == SERVER_VERSION
    assert error["data"]["clientVersion"] == "99.1.0"


def test_a_client_that_sends_no_version_is_served(workspace: Path) -> None:
    # Other clients (the test harness, editors other than VS Code) do not take part in the handshake.
    response = initialize(workspace, {})
    assert response["result"]["serverInfo"]["version"] == SERVER_VERSION


def test_a_retrace_package_in_the_workspace_cannot_shadow_the_server(workspace: Path) -> None:
    # A hostile project: its own top-level ``retrace`` package, also put on PYTHONPATH.
    fake = workspace / "retrace"
    fake.mkdir()
    marker = workspace / "hijacked"
    payload = f"open({str(marker)!r}, 'w').write('ran')\nraise SystemExit(3)\n"
    (fake / "__init__.py").write_text(payload, "utf-8")
    (fake / "__main__.py").write_text(payload, "utf-8")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(workspace), "PYTHONSTARTUP": str(fake / "__init__.py")}
    response = initialize(workspace, {"clientVersion": SERVER_VERSION}, cwd=workspace, env=env)
    assert response["result"]["serverInfo"]["version"] == SERVER_VERSION
    assert not marker.exists()


def test_versions_agree_across_pyproject_package_json_and_the_package() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["version"]
    package_json = json.loads((REPO / "package.json").read_text("utf-8"))["version"]
    assert pyproject == package_json == SERVER_VERSION == retrace.__version__
