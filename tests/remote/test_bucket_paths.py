"""A bucket is untrusted input (paths and names): a session whose checkpoints name a path that
walks out of the workspace (``..``, absolute), into ``.git``, or in a form Retrace never stores
is refused by ``retrace remote open`` — even when the forger sealed it properly — so no
``retrace restore`` can ever create that path; and a listed key whose session or store id would
escape ``<store>/`` as a path component is not a key at all."""

from __future__ import annotations

import json
import os
import posixpath
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.cli.cli_support import run
from tests.remote.helpers import Machine
from tests.remote.s3server import S3Server
from tests.remote.test_cli_remote import base_env

from retrace.sync.journal_check import path_problem
from retrace.sync.keys import SegmentKey, parse_segment
from retrace.sync.packs import open_segment, seal_segment


def retrace(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "retrace", *args], env, timeout=120)  # forked: tests/cli_forkserver.py


UNSAFE = [
    "../outside.txt",
    "a/../../outside.txt",
    "/tmp/retrace-abs-outside.txt",
    ".git/config",
    "sub/.GIT/x",
    "./x",
]


def forge(s3: S3Server, sid: str, path: str) -> str:
    """Rewrite the pushed session ``s1`` as a new session ``sid`` whose last checkpoint writes
    ``path`` (executable), sealed as a pusher would; returns that checkpoint's id."""
    root = s3.data / s3.bucket / "team" / "proj"
    (obj,) = (root / "sessions" / "s1").rglob("*.seg")
    seg = parse_segment(obj.relative_to(root).as_posix())
    assert seg is not None
    lines = open_segment(obj.read_bytes(), seg.key, None).splitlines(keepends=True)
    ev = json.loads(lines[-1])
    (entry,) = ev["delta"].values()
    ev["delta"] = {path: {**entry, "executable": True}}
    ev["checkpoint"]["files"] = [{**ev["checkpoint"]["files"][0], "path": path}]
    ev["checkpoint"]["sessionId"] = sid
    body = b"".join(lines[:-1]) + json.dumps(ev, separators=(",", ":")).encode() + b"\n"
    key = SegmentKey(sid, seg.store_id, 1, 0, 0, len(body), seg.unix_ms + 1)
    target = root / key.key
    target.parent.mkdir(parents=True)
    target.write_bytes(seal_segment(body, key.key, None))
    return str(ev["checkpoint"]["id"])


def test_a_forged_session_naming_a_path_out_of_the_workspace_is_never_restored(
    tmp_path: Path, s3: S3Server
) -> None:
    a = Machine.make(tmp_path, s3, "a")
    with a.engine("s1") as eng:
        (a.ws / "payload.sh").write_text("#!/bin/sh\necho owned\n")
        eng.checkpoint("one")
    a.add_remote().push()
    forged = {f"forged{i}": (path, forge(s3, f"forged{i}", path)) for i, path in enumerate(UNSAFE)}
    s3.restart()  # the server caches folder listings: it sees the new objects from a fresh start
    env = base_env(tmp_path, s3)
    ws, store = tmp_path / "b" / "proj", tmp_path / "b" / "store"
    where = ["--workspace", str(ws), "--store", str(store)]
    assert (
        retrace("remote", "add", "origin", s3.url(), "--endpoint", s3.endpoint, *where, env=env).returncode
        == 0
    )
    for sid, (path, cp) in forged.items():
        opened = retrace("remote", "open", sid, *where, env=env)
        assert opened.returncode == 2, (path, opened.stderr)
        assert "names paths outside the workspace" in opened.stderr and repr(path) in opened.stderr
        assert opened.stderr.count("\n") == 1
        assert not (store / "sessions" / sid).exists()
        restored = retrace("restore", cp, "--force", *where, env=env)
        assert restored.returncode != 0
        landing = path if path.startswith("/") else posixpath.normpath(posixpath.join(str(ws), path))
        assert not os.path.lexists(landing), path
    assert not (tmp_path / "b" / "outside.txt").exists() and not (tmp_path / "outside.txt").exists()
    assert retrace("remote", "open", "s1", *where, env=env).returncode == 0  # the honest session opens


@given(
    st.lists(st.sampled_from(["a", "b.txt", ".", "..", "", ".git", ".Git", "x\\..", "\x00", "é"]), max_size=6)
)
def test_a_path_that_passes_stays_inside_the_workspace_and_out_of_git(parts: list[str]) -> None:
    for path in ("/".join(parts), "/" + "/".join(parts)):
        if path_problem(path) is None:
            inside = posixpath.normpath(posixpath.join("/ws", path))
            assert inside.startswith("/ws/") and inside == f"/ws/{path}"
            assert ".git" not in path.casefold().split("/")


@pytest.mark.parametrize(
    "key",
    [
        "sessions/../st/g0001/00000000-0-10-1.seg",
        "sessions/s/../g0001/00000000-0-10-1.seg",
        "sessions/./st/g0001/00000000-0-10-1.seg",
        "sessions/s/st/g0001/00000000-0-10-1.seg/../../x",
        "sessions/s/st/g" + "9" * 5000 + "/00000000-0-10-1.seg",
        "sessions/s/st/g0001/00000000-0-" + "1" * 19 + "-1.seg",
    ],
)
def test_listed_keys_that_would_escape_or_overflow_are_not_segments(key: str) -> None:
    assert parse_segment(key) is None
