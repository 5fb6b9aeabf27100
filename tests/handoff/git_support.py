"""Real git repositories for the hand-off tests: an identity for the test's own commits (the
product must work without one), and snapshots of everything the export must leave alone."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.cli.cli_support import Cli

from retrace.engine import Engine

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test User",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test User",
    "GIT_COMMITTER_EMAIL": "test@example.com",
}


def git(cwd: Path, *args: str, identity: bool = True, input: bytes | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    if identity:
        env.update(IDENTITY)
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, input=input, check=False)
    assert proc.returncode == 0, (args, proc.stderr.decode())
    return proc.stdout.decode()


def git_text(cwd: Path, *args: str) -> str:
    """``git`` with the test identity; its output without the final newline (a sha, a branch)."""
    return git(cwd, *args).strip()


def init_repo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "core.autocrlf", "false")
    return root


def commit_all(root: Path, message: str = "commit") -> str:
    git(root, "add", "-A", "-f")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def untouchables(root: Path) -> dict[str, bytes]:
    """What an export must never change: status, the index file's bytes, HEAD, the branch ref."""
    gitdir = root / ".git"
    out = {
        "status": git(root, "status", "--porcelain=v1", "--untracked-files=all").encode(),
        "index": (gitdir / "index").read_bytes() if (gitdir / "index").exists() else b"",
        "HEAD": (gitdir / "HEAD").read_bytes(),
        "branches": git(root, "for-each-ref", "refs/heads/main").encode(),
    }
    head = (gitdir / "HEAD").read_bytes().decode().strip()
    if head.startswith("ref: "):
        ref = gitdir / head[5:]
        out["ref"] = ref.read_bytes() if ref.exists() else b""
    return out


def ls_tree(root: Path, rev: str, prefix: str = "") -> dict[str, tuple[str, str]]:
    """path (relative to ``prefix``) → (mode, blob id) of a commit's tree."""
    out: dict[str, tuple[str, str]] = {}
    for line in git(root, "ls-tree", "-r", "-z", "--full-tree", rev).split("\0"):
        if not line:
            continue
        meta, path = line.split("\t", 1)
        mode, _type, oid = meta.split(" ")
        if path.startswith(prefix):
            out[path[len(prefix) :]] = (mode, oid)
    return out


def manifest_tree(cli: Cli, cp: str, root: Path) -> dict[str, tuple[str, str]]:
    """The checkpoint's manifest as (mode, git blob id), the blob id from ``git hash-object``."""
    out: dict[str, tuple[str, str]] = {}
    with Engine.open(cli.workspace, cli.store, readonly=True, create=False, catch_up=False) as engine:
        for path, entry in engine.manifest(cp).items():
            data = engine.content(entry)
            assert data is not None
            mode = "120000" if entry.kind == "symlink" else "100755" if entry.executable else "100644"
            oid = git(root, "hash-object", "--stdin", input=data).strip()
            out[path] = (mode, oid)
    return out
