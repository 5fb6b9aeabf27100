"""``retrace remote`` through a real process: add, push, sessions, open on another machine,
then ``retrace restore`` there — byte-exact; one-line errors with non-zero exits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.cli.cli_support import run
from tests.oracles import entry_hashes
from tests.remote.s3server import ACCESS_KEY, SECRET_KEY, S3Server

pytestmark = pytest.mark.slow


def retrace(*args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = run([sys.executable, "-m", "retrace", *args], env, timeout=120)  # forked: tests/cli_forkserver.py
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def base_env(tmp_path: Path, s3: S3Server) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "RETRACE_"))}
    env.update(s3.env())
    env["HOME"] = str(tmp_path / "home")
    return env


def test_cli_round_trip(tmp_path: Path, s3: S3Server) -> None:
    env = base_env(tmp_path, s3)
    a_ws, a_store = tmp_path / "a" / "proj", tmp_path / "a" / "store"
    a_ws.mkdir(parents=True)
    (a_ws / "notes.md").write_text("hello\n")
    (a_ws / "blob.bin").write_bytes(os.urandom(5000))
    (a_ws / "tool.sh").write_text("#!/bin/sh\n")
    (a_ws / "tool.sh").chmod(0o755)
    a = ["--workspace", str(a_ws), "--store", str(a_store)]
    retrace("init", *a, env=env)
    (a_ws / "notes.md").write_text("hello again\n")
    cp = retrace("checkpoint", *a, "--label", "edit", "--json", env=env)
    cp_id = json.loads(cp.stdout)["id"]
    expected = entry_hashes(a_ws, include_git=True)
    retrace("remote", "add", "origin", s3.url(), "--endpoint", s3.endpoint, *a, env=env)
    pushed = json.loads(retrace("remote", "push", *a, "--json", env=env).stdout)
    assert pushed["segments"] >= 1 and not pushed["upToDate"]
    again = json.loads(retrace("remote", "push", *a, "--json", env=env).stdout)
    assert again["upToDate"] and again["packs"] == 0 and again["segments"] == 0
    status = json.loads(retrace("remote", "status", *a, "--json", env=env).stdout)
    assert status["lastPush"] and status["pendingCheckpoints"] == 0 and status["outbox"] == 0
    assert SECRET_KEY not in json.dumps(status)

    b_ws, b_store = tmp_path / "b" / "elsewhere", tmp_path / "b" / "store"
    b = ["--workspace", str(b_ws), "--store", str(b_store)]
    b_ws.mkdir(parents=True)
    retrace(
        "remote",
        "add",
        "origin",
        s3.url(),
        "--endpoint",
        s3.endpoint,
        "--workspace-name",
        "proj",
        *b,
        env=env,
    )
    sessions = json.loads(retrace("remote", "sessions", *b, "--json", env=env).stdout)
    assert [s["sessionId"] for s in sessions] == ["cli"]
    opened = json.loads(retrace("remote", "open", "cli", *b, "--json", env=env).stdout)
    assert opened["checkpoints"] >= 2
    verified = json.loads(retrace("verify", *b, "--json", env=env).stdout)
    assert verified["ok"] and verified["remoteBlobs"] >= 1
    retrace("restore", cp_id, *b, "--force", env=env)
    assert entry_hashes(b_ws, include_git=True) == expected
    remote_cfg = (b_store / "remote.json").read_text()
    assert ACCESS_KEY not in remote_cfg and SECRET_KEY not in remote_cfg


def test_cli_errors_are_one_line_and_non_zero(tmp_path: Path, s3: S3Server) -> None:
    env = base_env(tmp_path, s3)
    ws = tmp_path / "ws"
    ws.mkdir()
    w = ["--workspace", str(ws), "--store", str(tmp_path / "store")]
    bad = retrace("remote", "add", "origin", "http://nope", *w, env=env, check=False)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "s3://bucket/prefix" in bad.stderr
    none = retrace("remote", "push", *w, env=env, check=False)
    assert none.returncode == 2 and "no remote configured" in none.stderr
    retrace("remote", "add", "origin", s3.url(), "--endpoint", s3.endpoint, *w, env=env)
    unknown = retrace("remote", "open", "no-such-session", *w, env=env, check=False)
    assert unknown.returncode == 2 and "no session 'no-such-session'" in unknown.stderr
    s3.stop()
    down = retrace("remote", "sessions", *w, env=env, check=False)
    assert down.returncode == 2 and down.stderr.count("\n") == 1
    assert SECRET_KEY not in down.stderr and ACCESS_KEY not in down.stderr
    nocreds = {k: v for k, v in env.items() if not k.startswith("AWS_")}
    missing = retrace("remote", "sessions", *w, env=nocreds, check=False)
    assert missing.returncode == 2 and "no credentials" in missing.stderr
