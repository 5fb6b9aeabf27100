"""Capture never misses a change, and ignore rules never cost the user a file.

* Writers that keep size and mtime (``touch -r``, ``cp -p``, ``rsync -a``, ``tar x``) are seen
  on every path: the ``retrace`` CLI across processes (persisted stat cache), an in-process
  engine with a healthy watcher, an engine without a watcher (stat walk), and a re-open.
* A restore never deletes a path that is ignored now or at its target, and ignore-rule
  changes never show up as phantom "external" changes.
* Tool folders are recognised by their markers, not their names.
* What cannot be captured (paths beyond PATH_MAX, unreadable directories) is reported, and the
  checkpoint says it is partial.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.cli.cli_support import run

from retrace.engine import Engine, EngineConfig

pytestmark = pytest.mark.slow

RETRACE = Path(sys.executable).with_name("retrace")
HOUR_NS = 3600 * 10**9
EXAMPLES = int(os.environ.get("RETRACE_CAPTURE_EXAMPLES", "25"))
"""Examples per property test (raise it for a campaign run)."""


def _run(*args: str, ws: Path, store: Path, code: int | None = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RETRACE_STORE"}
    cmd = [str(RETRACE), *args, "--workspace", str(ws), "--store", str(store)]
    proc = run(cmd, env, timeout=120)  # forked: tests/cli_forkserver.py
    assert "Traceback" not in proc.stderr, proc.stderr
    if code is not None:
        assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- item: stat identity


def test_cli_touch_r_change_is_never_lost(tmp_path: Path) -> None:
    """The exact reproduction: a same-size write whose mtime is put back with ``touch -r``,
    then a restore in a new process. 3333 must end up in a checkpoint (or the restore must
    refuse); it must never be overwritten without a trace."""
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    a, ref = ws / "a", tmp_path / "ref"
    a.write_text("value = 1111\n")
    subprocess.run(["touch", "-d", "2 hours ago", str(a)], check=True)
    _run("init", ws=ws, store=store)
    c1 = _run("checkpoint", ws=ws, store=store).stdout.strip().split()[0]
    a.write_text("value = 2222\n")
    subprocess.run(["touch", "-d", "1 hour ago", str(a)], check=True)
    _run("checkpoint", ws=ws, store=store)
    subprocess.run(["touch", "-r", str(a), str(ref)], check=True)
    a.write_text("value = 3333\n")
    subprocess.run(["touch", "-r", str(ref), str(a)], check=True)
    proc = _run("restore", c1, ws=ws, store=store, code=None)
    with Engine.open(ws, store, readonly=True) as eng:
        recorded = {eng.file_content(cp.id, "a") for cp in eng.timeline() if "a" in eng.manifest(cp.id)}
    assert b"value = 3333\n" in recorded or a.read_text() == "value = 3333\n", (
        proc.returncode,
        proc.stdout,
        proc.stderr,
    )
    if a.read_text() != "value = 3333\n":
        assert b"value = 3333\n" in recorded, "3333 was overwritten and is in no checkpoint"


def _inplace(p: Path, data: bytes, mtime_ns: int) -> None:
    with open(p, "r+b") as f:
        f.write(data)
        f.truncate(len(data))
    os.utime(p, ns=(mtime_ns, mtime_ns))


def _replace(p: Path, data: bytes, mtime_ns: int) -> None:
    """``rsync -a``: a temporary file renamed over the old one, timestamps copied."""
    tmp = p.with_name(p.name + ".tmp~")
    tmp.write_bytes(data)
    os.utime(tmp, ns=(mtime_ns, mtime_ns))
    os.replace(tmp, p)


def _recreate(p: Path, data: bytes, mtime_ns: int) -> None:
    """``tar x``: unlink and create (the file system may hand out the same inode again)."""
    p.unlink()
    p.write_bytes(data)
    os.utime(p, ns=(mtime_ns, mtime_ns))


WRITERS = {"inplace": _inplace, "replace": _replace, "recreate": _recreate}
NAMES = ["a.py", "b.txt", "sub/c.md"]


def _seed(ws: Path, old_ns: int) -> None:
    for n in NAMES:
        p = ws / n
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"value = 0000\n")
        os.utime(p, ns=(old_ns, old_ns))


def _assert_head_matches_disk(eng: Engine, ws: Path) -> None:
    m = eng.manifest(eng.head.id)
    for n in NAMES:
        assert m[n].hash == _sha((ws / n).read_bytes()), f"{n}: the head does not hold what is on disk"


steps = st.lists(
    st.tuples(
        st.sampled_from(NAMES),
        st.sampled_from(sorted(WRITERS)),
        st.integers(0, 9999),
        st.sampled_from(["watch", "edit", "reopen"]),
    ),
    min_size=1,
    max_size=8,
)


@pytest.mark.parametrize("watcher", [True, False], ids=["watcher", "stat-walk"])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=steps)
def test_size_and_mtime_preserving_writers_are_always_captured(
    watcher: bool, steps: list[tuple[str, str, int, str]]
) -> None:
    """Same size, same mtime (to the nanosecond), sometimes the same inode: every write must be
    in the next checkpoint, whether it is found by the watcher, a stat walk, an announced
    path, or the catch-up of a re-open reading the persisted stat cache."""
    with tempfile.TemporaryDirectory() as d:
        ws, store = Path(d) / "ws", Path(d) / "store"
        ws.mkdir()
        old_ns = time.time_ns() - 2 * HOUR_NS
        _seed(ws, old_ns)
        cfg = EngineConfig(watcher=watcher)
        eng = Engine.open(ws, store, config=cfg)
        try:
            for name, writer, value, how in steps:
                WRITERS[writer](ws / name, f"value = {value:04d}\n".encode(), old_ns)
                if how == "reopen":
                    eng.close()
                    eng = Engine.open(ws, store, config=cfg)
                elif how == "edit":
                    eng.checkpoint(changed_paths=[name])
                else:
                    eng.checkpoint()
                _assert_head_matches_disk(eng, ws)
        finally:
            eng.close()


def test_restore_refuses_to_overwrite_an_mtime_preserving_edit(tmp_path: Path) -> None:
    """In one long-running engine with a healthy watcher: a restore must see the edit."""
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    old_ns = time.time_ns() - 2 * HOUR_NS
    _seed(ws, old_ns)
    with Engine.open(ws, store) as eng:
        c1 = eng.head.id
        _inplace(ws / "a.py", b"value = 2222\n", old_ns - HOUR_NS)
        eng.checkpoint(changed_paths=["a.py"])
        _inplace(ws / "a.py", b"value = 3333\n", old_ns - HOUR_NS)
        assert eng.capture_status()["watcher"]
        out = eng.restore(c1)
        kept = (ws / "a.py").read_bytes() == b"value = 3333\n"
        recorded = any(
            "a.py" in eng.manifest(cp.id) and eng.file_content(cp.id, "a.py") == b"value = 3333\n"
            for cp in eng.timeline()
        )
        assert kept or recorded, out.kind


# --------------------------------------------------------------------------- item: tool folders


def test_tool_folders_are_recognised_by_markers_not_names(tmp_path: Path) -> None:
    ws, store = tmp_path / "ws", tmp_path / "store"
    for rel in ["stdlib/venv/__init__.pyi", "src/build/rules.py", "docs/dist/index.md", "lib/target/t.rs"]:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("real source\n")
    (ws / ".venv/lib").mkdir(parents=True)
    (ws / ".venv/pyvenv.cfg").write_text("home = /usr\n")
    (ws / ".venv/lib/site.py").write_text("x\n")
    (ws / "env2/lib").mkdir(parents=True)
    (ws / "env2/pyvenv.cfg").write_text("home = /usr\n")
    (ws / "env2/lib/site.py").write_text("x\n")
    (ws / "package.json").write_text("{}\n")
    (ws / "node_modules/left-pad").mkdir(parents=True)
    (ws / "node_modules/left-pad/index.js").write_text("x\n")
    (ws / "crate/target/debug").mkdir(parents=True)
    (ws / "crate/Cargo.toml").write_text("[package]\n")
    (ws / "crate/target/CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    (ws / "crate/target/debug/app").write_text("bin\n")
    with Engine.open(ws, store) as eng:
        tracked = set(eng.manifest(eng.head.id))
    assert {
        "stdlib/venv/__init__.pyi",
        "src/build/rules.py",
        "docs/dist/index.md",
        "lib/target/t.rs",
    } <= tracked
    assert not any(p.startswith((".venv/", "env2/", "node_modules/", "crate/target/")) for p in tracked), (
        tracked
    )


# --------------------------------------------------------------------------- item: ignore rules


def test_restore_never_deletes_a_file_ignored_at_the_target(tmp_path: Path) -> None:
    """The agent rewrites .gitignore without ``.env``; restoring the earlier checkpoint must
    not delete ``.env`` (it was never the agent's tracked content)."""
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    (ws / ".gitignore").write_text(".env\n*.log\n")
    (ws / ".env").write_text("API_KEY=secret\n")
    (ws / "app.py").write_text("print(1)\n")
    with Engine.open(ws, store) as eng:
        c1 = eng.head.id
        assert ".env" not in eng.manifest(c1)
        (ws / ".gitignore").write_text("*.log\n")
        eng.checkpoint(changed_paths=[".gitignore"], kind="tool")
        assert ".env" in eng.manifest(eng.head.id), "un-ignored files are tracked from now on"
        out = eng.restore(c1)
        assert out.kind == "applied", out
        assert (ws / ".env").read_text() == "API_KEY=secret\n"
        assert (ws / ".gitignore").read_text() == ".env\n*.log\n"
        assert out.plan is not None and [k.path for k in out.plan.kept] == [".env"]
        assert ".env" not in eng.manifest(eng.head.id), "ignored again: no longer tracked"
        assert eng.record_external() is None, "nothing changed that nobody recorded"


@pytest.mark.parametrize("watcher", [False, True])
@pytest.mark.parametrize("rules", [".gitignore", "sub/.gitignore", "sub/deeper/.gitignore"])
@pytest.mark.parametrize("how", ["created", "edited"])
def test_restore_never_deletes_a_file_ignored_now(
    tmp_path: Path, watcher: bool, rules: str, how: str
) -> None:
    """The user ignores a file the agent created, just before restoring to before it (nothing
    captured since): whether the rules file is new or edited, at the root or nested, and whether
    or not a watcher keeps the rules cached, the restore reads the rules as they are now."""
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    (ws / "app.py").write_text("print(1)\n")
    if how == "edited":
        (ws / "sub" / "deeper").mkdir(parents=True)
        (ws / rules).write_text("*.log\n")
    with Engine.open(ws, store, config=EngineConfig(watcher=watcher)) as eng:
        c1 = eng.head.id
        (ws / "sub" / "deeper").mkdir(parents=True, exist_ok=True)  # new folders: created by the agent
        (ws / "sub" / "deeper" / "notes.txt").write_text("mine\n")
        eng.checkpoint(changed_paths=["sub/deeper/notes.txt"], kind="tool")
        eng.plan_restore(c1)  # rules cached by a plan before the user's change
        # The user ignores it now; nothing has been captured since.
        with (ws / rules).open("a") as f:
            f.write("notes.txt\n")
        out = eng.restore(c1, force=True)
        assert (ws / "sub" / "deeper" / "notes.txt").read_text() == "mine\n", out


def test_nested_gitignore_changes_make_no_phantom_changes(tmp_path: Path) -> None:
    """A restore that removes (or brings back) nested .gitignore files changes which files are
    tracked: that is part of the restore, not an external change, and creates no conflicts."""
    ws, store = tmp_path / "ws", tmp_path / "store"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg/mod.py").write_text("x = 1\n")
    (ws / "pkg/cache.gen").write_text("generated\n")
    for watcher in (True, False):
        shutil.rmtree(store, ignore_errors=True)
        (ws / "pkg/.gitignore").unlink(missing_ok=True)
        with Engine.open(ws, store, config=EngineConfig(watcher=watcher)) as eng:
            c1 = eng.head.id
            (ws / "pkg/.gitignore").write_text("*.gen\n")
            eng.checkpoint(changed_paths=["pkg/.gitignore"], kind="tool")
            assert "pkg/cache.gen" not in eng.manifest(eng.head.id)
            c2 = eng.head.id
            assert eng.record_external() is None
            out = eng.restore(c1)
            assert out.kind == "applied" and out.safety_checkpoint_id is None, out
            assert (ws / "pkg/cache.gen").read_text() == "generated\n"
            assert "pkg/cache.gen" in eng.manifest(eng.head.id)
            assert eng.record_external() is None, "no phantom external change"
            back = eng.restore(c2)
            assert back.kind == "applied" and back.safety_checkpoint_id is None, back
            assert (ws / "pkg/cache.gen").read_text() == "generated\n", "ignored at the target: kept"
            assert eng.record_external() is None


# --------------------------------------------------------------------------- item: not captured


def test_unreadable_directory_is_reported_not_silently_dropped(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every directory")
    ws, store = tmp_path / "ws", tmp_path / "store"
    (ws / "secret").mkdir(parents=True)
    (ws / "secret/a.txt").write_text("a\n")
    (ws / "b.txt").write_text("b\n")
    with Engine.open(ws, store, config=EngineConfig(watcher=False)) as eng:
        os.chmod(ws / "secret", 0)
        try:
            cp = eng.checkpoint()
        finally:
            os.chmod(ws / "secret", 0o755)
        assert cp.recoverability == "partial", cp
        assert any(u.path == "secret" and "not captured" in u.reason for u in cp.unrecoverable), cp
        assert "secret/a.txt" in eng.manifest(cp.id), "an unreadable directory is not a deletion"


def _deep_tree(ws: Path) -> str:
    """A file under a directory chain longer than PATH_MAX (built with relative calls)."""
    fd = os.open(ws, os.O_RDONLY)
    depth = 0
    try:
        while depth * 201 < 4200:
            os.mkdir("d" * 200, dir_fd=fd)
            nfd = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
            depth += 1
        wfd = os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(wfd, b"deep\n")
        os.close(wfd)
    finally:
        os.close(fd)
    return "/".join(["d" * 200] * depth) + "/deep.txt"


@pytest.mark.parametrize("watcher", [True, False], ids=["watcher", "stat-walk"])
def test_paths_beyond_path_max_are_captured(tmp_path: Path, watcher: bool) -> None:
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    (ws / "top.txt").write_text("top\n")
    deep = _deep_tree(ws)
    assert len(str(ws / deep)) > 4096
    with Engine.open(ws, store, config=EngineConfig(watcher=watcher)) as eng:
        base = eng.head
        assert base.recoverability == "full", base
        assert eng.file_content(base.id, deep) == b"deep\n"
        assert eng.capture_status()["watcher"] == watcher, eng.capture_status()
        walks = eng.capture_status()["walks"]
        # A change down there is seen (watcher or walk), and a re-open finds nothing new.
        fd = os.open(ws, os.O_RDONLY)
        for part in deep.split("/")[:-1]:
            nfd = os.open(part, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        wfd = os.open("deep.txt", os.O_WRONLY | os.O_TRUNC, dir_fd=fd)
        os.write(wfd, b"deeper\n")
        os.close(wfd)
        os.close(fd)
        cp = eng.checkpoint()
        assert [f.path for f in cp.files] == [deep], cp.files
        assert eng.file_content(cp.id, deep) == b"deeper\n"
        if watcher:
            assert eng.capture_status()["walks"] == walks, "the watcher saw it: no stat walk"
    with Engine.open(ws, store, config=EngineConfig(watcher=watcher)) as eng:
        assert eng.record_external() is None
    shutil.rmtree(ws, ignore_errors=True)


def test_a_directory_that_cannot_be_listed_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection (root reads every directory): listing ``secret`` fails with EACCES."""
    ws, store = tmp_path / "ws", tmp_path / "store"
    (ws / "secret").mkdir(parents=True)
    (ws / "secret/a.txt").write_text("a\n")
    (ws / "b.txt").write_text("b\n")
    real = os.scandir

    def scandir(path: object = ".") -> object:
        if isinstance(path, str) and path.endswith("/secret"):
            raise PermissionError(13, "Permission denied", path)
        return real(path)  # type: ignore[call-overload]

    with Engine.open(ws, store, config=EngineConfig(watcher=False)) as eng:
        monkeypatch.setattr(os, "scandir", scandir)
        (ws / "b.txt").write_text("bb\n")
        cp = eng.checkpoint()
        monkeypatch.undo()
        assert cp.recoverability == "partial", cp
        assert [(u.path, u.reason) for u in cp.unrecoverable] == [
            ("secret", "not captured: Permission denied")
        ]
        assert "secret/a.txt" in eng.manifest(cp.id), "unknown is not deleted"
        assert [f.path for f in cp.files] == ["b.txt"]
        assert eng.checkpoint().recoverability == "full"


def test_watcher_and_walk_agree_when_a_folder_becomes_a_tool_folder(tmp_path: Path) -> None:
    """A shell command turns ``env3`` into a virtual environment (``pyvenv.cfg`` appears): the
    watcher's checkpoint must record what a full walk sees, so nothing is left for a phantom
    external change later."""
    ws, store = tmp_path / "ws", tmp_path / "store"
    (ws / "env3/lib").mkdir(parents=True)
    (ws / "env3/lib/site.py").write_text("x\n")
    (ws / "app.py").write_text("print(1)\n")
    with Engine.open(ws, store) as eng:
        assert "env3/lib/site.py" in eng.manifest(eng.head.id)
        subprocess.run(["sh", "-c", "echo 'home = /usr' > env3/pyvenv.cfg"], cwd=ws, check=True)
        cp = eng.checkpoint(kind="tool")
        assert "env3/lib/site.py" not in eng.manifest(cp.id)
        assert eng.capture_status()["walks"] >= 1
        with Engine.open(ws, store, readonly=True) as ro:
            assert ro.diff(cp.id) == [], "a full walk sees exactly the head"
        assert eng.record_external() is None


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writer=st.sampled_from(sorted(WRITERS)), value=st.integers(1, 9999))
def test_stat_cache_row_never_vouches_for_a_changed_file(
    writer: str, value: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row recorded long after the file's timestamps (so not racily clean) must still stop
    vouching once a size- and mtime-preserving writer has touched the file: its ctime moved."""
    from retrace.engine.capture.statcache import StatCache
    from retrace.engine.manifest import make_entry

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "f"
        old_ns = time.time_ns() - 2 * HOUR_NS
        f.write_bytes(b"value = 0000\n")
        os.utime(f, ns=(old_ns, old_ns))
        before = os.lstat(f)
        cache = StatCache(Path(d) / "cache.bin")
        later = time.time_ns() + 3 * 10**9
        monkeypatch.setattr("retrace.engine.capture.statcache.time.time_ns", lambda: later)
        cache.put("f", before, make_entry("file", _sha(f.read_bytes()), before.st_size))
        assert cache.lookup("f", before) is not None, "an old, settled file is vouched for"
        time.sleep(0.011)  # past one timestamp granule
        WRITERS[writer](f, f"value = {value:04d}\n".encode(), old_ns)
        after = os.lstat(f)
        assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
        assert cache.lookup("f", after) is None
        monkeypatch.undo()


@pytest.mark.parametrize("how", ["edit", "watcher"])
def test_a_file_that_cannot_be_looked_at_is_not_recorded_as_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Fault injection: lstat of ``locked/a.txt`` fails with EACCES (its directory lost search
    permission). Unknown is not absent: the file stays tracked and the checkpoint says so."""
    ws, store = tmp_path / "ws", tmp_path / "store"
    (ws / "locked").mkdir(parents=True)
    (ws / "locked/a.txt").write_text("a\n")
    real = os.stat

    def fake_stat(path: object, *args: object, **kw: object) -> os.stat_result:
        if isinstance(path, str) and path.endswith("locked/a.txt"):
            raise PermissionError(13, "Permission denied", path)
        return real(path, *args, **kw)  # type: ignore[arg-type]

    with Engine.open(ws, store) as eng:
        (ws / "locked/a.txt").write_text("b\n")  # the watcher sees it
        monkeypatch.setattr(os, "stat", fake_stat)
        cp = eng.checkpoint(changed_paths=["locked/a.txt"]) if how == "edit" else eng.checkpoint()
        monkeypatch.undo()
        assert "locked/a.txt" in eng.manifest(cp.id), "unknown is not deleted"
        assert cp.recoverability == "partial", cp
        assert any(u.path == "locked/a.txt" and "not captured" in u.reason for u in cp.unrecoverable), cp


@settings(
    max_examples=max(3, EXAMPLES // 5),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(NAMES), st.sampled_from(sorted(WRITERS)), st.integers(0, 9999)),
        min_size=1,
        max_size=3,
    )
)
def test_writers_are_captured_across_cli_processes(steps: list[tuple[str, str, int]]) -> None:
    """Every ``retrace checkpoint`` is a new process reading the persisted stat cache: a
    size- and mtime-preserving write between two of them is always in the next checkpoint."""
    with tempfile.TemporaryDirectory() as d:
        ws, store = Path(d) / "ws", Path(d) / "store"
        ws.mkdir()
        old_ns = time.time_ns() - 2 * HOUR_NS
        _seed(ws, old_ns)
        _run("init", ws=ws, store=store)
        for name, writer, value in steps:
            WRITERS[writer](ws / name, f"value = {value:04d}\n".encode(), old_ns)
            _run("checkpoint", ws=ws, store=store)
        with Engine.open(ws, store, readonly=True) as eng:
            _assert_head_matches_disk(eng, ws)
