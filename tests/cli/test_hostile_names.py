"""No file name or stored text reaches the terminal raw, in any human-readable output.

A workspace (a real git repository) holds files whose names carry a carriage return, ``ESC [2K``
(erase line), a newline followed by a fake ``delete`` line, a tab, DEL, a C1 control (8-bit CSI),
a bidi override (U+202E) and a byte that is not valid UTF-8. A checkpoint label carries the same.
Every ``retrace`` command that prints for people is then run as a real subprocess — ``log``
(also ``--path``), ``show``, ``diff`` (patch and ``--stat``), ``restore --dry-run`` (plan and
conflicts), ``restore`` (applied), ``gc``, ``stats``, ``verify`` (with damage), ``attribution``,
``export --branch`` / ``--patch``, ``metrics``, ``run`` and ``remote`` (against a real S3
server) — and its stdout and stderr bytes must hold no control byte but the newline, no DEL, no
byte sequence that is not UTF-8, no C1 control and no format character; and no output line may
begin with the text a name tried to forge. ``--json`` output stays exact (a name round-trips).
"""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path

import pytest
from tests.cli import cli_support
from tests.cli.cli_support import RETRACE
from tests.handoff.git_support import commit_all, init_repo

FAKE = "delete     you-were-tricked.txt"
"""What a hostile name tries to print as a line of its own."""

NAMES: list[bytes] = [
    b"evil\r  " + FAKE.encode() + b".txt",
    b"wipe\x1b[2K\x1b[1G" + FAKE.encode(),
    b"nl\n  " + FAKE.encode(),
    b"tab\tname.txt",
    b"del\x7f.txt",
    "c1\u009b2Kcsi.txt".encode(),
    "\u202etxt.exe".encode(),
    b"bad\xff\xfe.txt",
]
LABEL = "label\x1b[2K\r" + FAKE + "\n" + FAKE


def bad_chars(data: bytes) -> list[str]:
    """What in ``data`` must not reach a terminal (empty when it is safe)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [f"not UTF-8 at {exc.start}: {data[max(exc.start - 20, 0) : exc.start + 20]!r}"]
    out = []
    for i, ch in enumerate(text):
        if ch == "\n":
            continue
        if unicodedata.category(ch) in {"Cc", "Cf", "Cs", "Zl", "Zp"}:
            out.append(f"{ch!r} at {i}: {text[max(i - 20, 0) : i + 20]!r}")
    return out


class Run:
    def __init__(self, workspace: Path, store: Path, env: dict[str, str]) -> None:
        self.workspace, self.store, self.env = workspace, store, env
        self.checked: list[str] = []

    def __call__(self, *args: str, code: int | None = 0, where: bool = True) -> bytes:
        cmd = [str(RETRACE), *args]
        if where:
            cmd += ["--workspace", str(self.workspace), "--store", str(self.store)]
        proc = cli_support.run_bytes(cmd, self.env, timeout=180)
        assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")
        if code is not None:
            assert proc.returncode == code, (args, proc.returncode, proc.stdout, proc.stderr)
        if "--json" not in args:
            for stream, data in (("stdout", proc.stdout), ("stderr", proc.stderr)):
                bad = bad_chars(data)
                assert not bad, f"retrace {' '.join(args)}: raw bytes on {stream}: {bad[:3]}"
                for line in data.decode().splitlines():
                    assert not line.lstrip().startswith(FAKE), f"retrace {' '.join(args)} forged: {line!r}"
            self.checked.append(args[0])
        return proc.stdout


@pytest.fixture
def run(tmp_path: Path) -> Run:
    assert RETRACE.exists()
    root = init_repo(tmp_path / "repo")
    (root / "README.md").write_text("# demo\n")
    commit_all(root, "initial")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "ANTHROPIC_", "RETRACE_"))}
    env["HOME"] = str(tmp_path / "home")
    return Run(root, tmp_path / "store", env)


def _write_names(root: Path, content: bytes) -> None:
    for name in NAMES:
        with open(os.path.join(os.fsencode(root), name), "wb") as f:
            f.write(content)


def test_every_human_output_quotes_hostile_names(run: Run, tmp_path: Path) -> None:
    root = run.workspace
    run("init")
    base = run("checkpoint", "--label", "base").decode().strip()
    _write_names(root, b"one\n")
    cp = run("checkpoint", "--label", LABEL).decode().strip()
    # --json stays exact: every hostile name is there, as the engine stores it.
    listed = json.loads(run("show", cp, "--json"))
    paths = {f["path"] for f in listed["files"]}
    assert {os.fsdecode(n) for n in NAMES} <= paths
    run("log")
    run("log", "--path", os.fsdecode(NAMES[0]))
    run("show", cp)
    run("diff", base, cp)
    run("diff", base, cp, "--stat")
    run("diff", base)
    run("restore", base, "--dry-run")
    run("attribution", "--to", cp)
    run("export", cp, "--branch", "retrace/hostile")
    run("export", f"{base}..{cp}", "--patch", str(tmp_path / "patches"))
    # Changed outside the agent: a restore is a conflict naming every file, with a way out.
    _write_names(root, b"user's own work\n")
    run("restore", base, "--dry-run")
    run("restore", base, code=3)
    run("restore", cp, "--force")
    run("restore", base)
    run("gc")
    run("stats")
    run("metrics")
    run("verify")
    # Damage: a blob of a hostile-named file disappears.
    blobs = sorted(p for p in run.store.rglob("*") if p.is_file() and "blobs" in p.parts)
    if blobs:
        blobs[-1].unlink()
    run("verify", code=None)
    run("log", code=None)
    for cmd in (
        "log",
        "show",
        "diff",
        "restore",
        "attribution",
        "export",
        "gc",
        "stats",
        "verify",
        "metrics",
    ):
        assert cmd in run.checked


def test_remote_commands_quote_names(run: Run, tmp_path: Path) -> None:
    from tests.remote.s3server import serving

    with serving(tmp_path / "s3data") as s3:
        run.env.update(s3.env())
        run("init")
        _write_names(run.workspace, b"pushed\n")
        run("checkpoint", "--label", LABEL)
        hostile_ws = "ws\x1b[2Kx"
        run("remote", "add", "x", s3.url(), "--endpoint", s3.endpoint, "--workspace-name", hostile_ws, code=2)
        run("remote", "add", "origin", s3.url(), "--endpoint", s3.endpoint, "--workspace-name", "ws")
        run("remote", "push")
        run("remote", "status")
        rows = run("remote", "sessions", "--json")
        sid = json.loads(rows)[0]["sessionId"]
        run("remote", "sessions")
        other = Run(tmp_path / "elsewhere", tmp_path / "store2", run.env)
        other("remote", "add", "origin", s3.url(), "--endpoint", s3.endpoint, "--workspace-name", "ws")
        other("remote", "open", sid)
        other("log")  # a store holding only an opened session lists it (no local head yet)
        opened = json.loads(other("log", "--json"))[-1]["id"]
        other("restore", opened, "--dry-run")
        other("remote", "remove", "origin")


def test_headless_run_quotes_names_and_text(run: Run) -> None:
    run("init")
    _write_names(run.workspace, b"external\n")
    run.env["RETRACE_FAKE_MODEL"] = "e2e"
    out = run("run", "make the e2e changes")
    assert b"checkpoint" in out
