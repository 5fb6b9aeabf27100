"""What a ``retrace`` command imports: only what the command needs (issue 26 item 3).

Other agents call the command line after every tool call, so each command's start-up is part of
every call. These tests run the REAL entry points (``python -m retrace`` and the ``retrace``
console script) in a subprocess under ``-X importtime`` and read the list of modules the process
actually imported: ``--version`` and ``--help`` import no Retrace subpackage and no pydantic; the
checkpoint commands (``checkpoint``, ``log``, ``show``, ``stats``) import no model SDK, no
language-server code, no protocol models, no agent, no application service and no sync code (a
store without a configured remote). Behaviour, never timings: the figures are in
``bench/cli_start.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.cli.cli_support import RETRACE

pytestmark = pytest.mark.slow

# Never imported by a command that records or reads checkpoints.
SERVER_AND_AGENT = (
    "anthropic",
    "httpx",
    "lsprotocol",
    "pygls",
    "obstore",
    "cryptography",
    "retrace.protocol",
    "retrace.lsp",
    "retrace.agent",
    "retrace.app",
    "retrace.bootstrap",
    "retrace.offline",
    "retrace.sync.service",
    "retrace.sync.fetch",
    "retrace.sync.push",
)
# ``--version`` and ``--help`` additionally import no engine, no pydantic, no package metadata.
START_ONLY = (
    *SERVER_AND_AGENT,
    "pydantic",
    "pydantic_core",
    "importlib.metadata",
    "retrace.engine",
    "retrace.sync",
    "retrace.camel",
    "retrace.cli.commands",
    "retrace.cli.format",
    "platformdirs",
)


def imported(
    argv: list[str], *, cwd: Path | None = None
) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """Modules a process running ``argv`` under ``-X importtime`` imported, and its result."""
    env = {k: v for k, v in os.environ.items() if k not in ("RETRACE_STORE", "PYTHONPROFILEIMPORTTIME")}
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    }
    return modules, proc


def offending(modules: set[str], forbidden: tuple[str, ...]) -> list[str]:
    """The imported modules that are, or lie inside, a forbidden package."""
    return sorted(m for m in modules if any(m == f or m.startswith(f + ".") for f in forbidden))


def test_the_importtime_reader_sees_what_a_process_imports() -> None:
    # The reader itself must be able to fail: a process that imports the server is caught.
    modules, proc = imported(["-c", "import retrace.lsp.server"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "retrace.lsp.server" in modules and "pygls" in modules
    assert "retrace.lsp.server" in offending(modules, SERVER_AND_AGENT)


@pytest.mark.parametrize(
    "entry",
    [["-m", "retrace"], [str(RETRACE)]],
    ids=["python -m retrace", "console script"],
)
@pytest.mark.parametrize(
    "flag", [["--version"], ["--help"], ["checkpoint", "--help"], ["remote", "push", "--help"]]
)
def test_version_and_help_import_no_retrace_subpackage(entry: list[str], flag: list[str]) -> None:
    modules, proc = imported([*entry, *flag])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "retrace" in modules  # the reader saw the process (not an empty list)
    assert offending(modules, START_ONLY) == []
    if flag == ["--version"]:
        assert proc.stdout.startswith("retrace ")


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Path]:
    ws, st = tmp_path / "ws", tmp_path / "store"
    (ws / "src").mkdir(parents=True)
    for i in range(20):
        (ws / "src" / f"m{i}.py").write_text(f"x = {i}\n", "utf-8")
    init = subprocess.run(
        [str(RETRACE), "init", "--workspace", str(ws), "--store", str(st)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert init.returncode == 0, init.stderr
    return ws, st


@pytest.mark.parametrize(
    "command",
    [
        ["checkpoint", "--label", "one"],
        ["checkpoint", "--path", "src/m3.py"],
        ["log"],
        ["show", "head"],
        ["stats"],
    ],
    ids=" ".join,
)
def test_checkpoint_commands_import_no_server_agent_protocol_or_sync(
    store: tuple[Path, Path], command: list[str]
) -> None:
    ws, st = store
    (ws / "src" / "m3.py").write_text("x = 'changed'\n", "utf-8")
    modules, proc = imported(["-m", "retrace", *command, "--workspace", str(ws), "--store", str(st)])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "retrace.engine.engine" in modules  # it did open the store
    assert offending(modules, SERVER_AND_AGENT) == []


def test_a_store_with_a_remote_still_reads_remote_blobs(store: tuple[Path, Path]) -> None:
    # The sync code is skipped only when no remote is configured: with one, the blob source is
    # attached as before (sessions opened from a remote read their blobs from it).
    ws, st = store
    add = subprocess.run(
        [
            str(RETRACE),
            "remote",
            "add",
            "origin",
            "s3://bucket/prefix",
            "--workspace",
            str(ws),
            "--store",
            str(st),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert add.returncode == 0, add.stderr
    modules, proc = imported(["-m", "retrace", "log", "--workspace", str(ws), "--store", str(st)])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "retrace.sync.service" in modules


ANSWERING_SERVER = """
import sys, time
from pathlib import Path
from retrace.relay.server import RelayServer
relay = RelayServer(Path(sys.argv[1]), {"hook": lambda request: {"notes": []}})
relay.start()
print("ready", flush=True)
time.sleep(120)
"""
# ``retrace hook`` with a server answering: the standard library, the relay client and the
# store's location rule; no pydantic, no engine beyond that rule, no application code.
HOOK_FAST_PATH = (
    *SERVER_AND_AGENT,
    "pydantic",
    "pydantic_core",
    "retrace.engine.engine",
    "retrace.engine.store.events",
    "retrace.engine.capture",
    "retrace.cli.commands",
    "retrace.cli.format",
    "retrace.cli.hook_cold",
)


def test_the_hook_fast_path_imports_only_the_standard_library_and_the_relay(
    tmp_path: Path, relay_dir: Path
) -> None:
    ws, st, relay = tmp_path / "ws", tmp_path / "st", relay_dir
    ws.mkdir()
    env = {**os.environ, "RETRACE_RELAY_DIR": str(relay)}
    server = subprocess.Popen(
        [sys.executable, "-c", ANSWERING_SERVER, str(st)], stdout=subprocess.PIPE, env=env
    )
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == b"ready"
        event = json.dumps({"session_id": "s", "cwd": str(ws), "hook_event_name": "Stop"})
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "retrace", "hook", "claude-code",
             "--workspace", str(ws), "--store", str(st)],
            input=event, capture_output=True, text=True, env=env, timeout=120, check=False,
        )  # fmt: skip
    finally:
        server.kill()
        server.wait()
    assert (proc.returncode, proc.stdout) == (0, "")
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    }
    assert "retrace.relay.client" in modules  # it did take the fast path
    assert offending(modules, HOOK_FAST_PATH) == []
    assert not (st / "store.json").exists()  # the server took it: this process opened nothing


def test_a_restore_imports_no_language_server_and_no_protocol_models(store: tuple[Path, Path]) -> None:
    """``retrace restore`` runs the one restore sequence with a headless agent service (the
    conversation half), but nothing of the server: no language-server code, no protocol models,
    no timeline cache (``app/restore.py`` imported those for types only, ~0.1 s)."""
    ws, st = store
    modules, proc = imported(
        ["-m", "retrace", "restore", "head", "--dry-run", "--workspace", str(ws), "--store", str(st)]
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "retrace.app.restore_sequence" in modules  # it did run the sequence
    server = ("pygls", "retrace.lsp", "retrace.protocol.models", "retrace.app.timeline.cache")
    assert offending(modules, server) == []
