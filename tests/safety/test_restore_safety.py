"""Restore safety on real files: compare-and-swap against concurrent writers, no write through a
symlinked parent, exact rollback, type swaps, long names, bounded memory for huge files.

Faults are injected through ``retrace.engine.restore.faults``: the hook runs just before each
rename/unlink the disk applier performs (and before each rollback step)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from tests.engine.conftest import write
from tests.oracles import entry_hashes, inodes

from retrace.engine import Engine, EngineConfig
from retrace.engine.restore import faults
from retrace.engine.workspace import TEMP_PREFIX

EXAMPLES = 300 if os.environ.get("RETRACE_FULL_CAMPAIGNS") else 25
FAST = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture
def scratch() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="rt-safety-"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def fresh(root: Path) -> tuple[Path, Path]:
    if root.exists():
        shutil.rmtree(root)
    ws = root / "ws"
    ws.mkdir(parents=True)
    return ws, root / "store"


def same_size_preserved_mtime(path: Path) -> bytes:
    """Rewrite ``path`` with different bytes of the same size and put its mtime back."""
    st = os.lstat(path)
    old = path.read_bytes()
    new = bytes((b + 1) % 256 for b in old) if old else b""
    path.write_bytes(new)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    return new


# --------------------------------------------------------------------------- compare-and-swap

names = st.lists(
    st.sampled_from(["a.txt", "b.txt", "d/c.txt", "d/e/f.txt", "g.bin"]), min_size=1, unique=True
)


@FAST
@given(paths=names, victim_index=st.integers(0, 10), data=st.data())
def test_concurrent_writer_during_apply_is_a_conflict_and_survives(
    scratch: Path, paths: list[str], victim_index: int, data: st.DataObject
) -> None:
    ws, store = fresh(scratch / "cas")
    for p in paths:
        write(ws, p, f"original {p}\n")
    with Engine.open(ws, store) as eng:
        base = eng.head.id
        deleted = data.draw(st.lists(st.sampled_from(paths), unique=True))
        for p in paths:
            if p in deleted:
                (ws / p).unlink()
            else:
                write(ws, p, f"agent {p}\n")
        eng.checkpoint("agent", kind="tool", tool="edit_file")
        before = entry_hashes(ws)
        steps: list[tuple[str, str]] = []
        survivor: dict[str, bytes] = {}

        def hook(step: str, rel: str) -> None:
            steps.append((step, rel))
            if survivor or step not in ("replace", "delete", "create") or len(steps) <= victim_index % 4:
                return
            target = ws / rel
            if step == "create":
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(b"concurrent create\n")
                survivor[rel] = b"concurrent create\n"
            else:
                survivor[rel] = same_size_preserved_mtime(target)

        with faults.injected(hook):
            out = eng.restore(base)
        event(f"concurrent writer: {'yes' if survivor else 'no'}; outcome: {out.kind}")
        if not survivor:
            assert out.kind == "applied"  # the writer never got a turn: a plain restore
            return
        assert out.kind == "conflict", out
        ((rel, content),) = survivor.items()
        assert [f.path for f in out.files] == [rel]
        assert (ws / rel).read_bytes() == content, "the concurrent content was overwritten"
        now = entry_hashes(ws)
        expected = {p: v for p, v in before.items() if p != rel}
        assert {p: v for p, v in now.items() if p != rel} == expected, "rollback is incomplete"
        assert not [p for p in now if os.path.basename(p).startswith(TEMP_PREFIX)]


def test_concurrent_writer_without_identity_is_caught_by_content(tmp_path: Path) -> None:
    """The editor path has no stat identity from the plan: the applier checks the content."""
    from retrace.engine.restore.disk import apply_disk
    from retrace.engine.restore.ops import DiskOp, Seen

    ws = tmp_path / "ws"
    write(ws, "a.txt", "seen by the plan\n")
    with Engine.open(ws, tmp_path / "store") as eng:
        seen = eng.manifest(eng.head.id)["a.txt"]
    same_size_preserved_mtime(ws / "a.txt")
    changed = (ws / "a.txt").read_bytes()
    op = DiskOp("a.txt", "write", seen, Seen(seen), source=lambda: b"restored\n")
    res = apply_disk(ws, tmp_path / "trash", [op])
    assert not res.ok and res.conflicts and res.rolled_back
    assert (ws / "a.txt").read_bytes() == changed


# --------------------------------------------------------------------------- symlinked parents


def test_parent_swapped_for_symlink_during_apply_never_writes_outside(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    write(ws, "d/a.txt", "one\n")
    write(ws, "d/b.txt", "bee\n")
    write(outside, "a.txt", "OUTSIDE\n")
    write(outside, "b.txt", "OUTSIDE B\n")
    (outside / "hard").hardlink_to(outside / "a.txt")
    outside_before = (entry_hashes(outside), inodes(outside))
    with Engine.open(ws, tmp_path / "store") as eng:
        base = eng.head.id
        write(ws, "d/a.txt", "two\n")
        (ws / "d" / "b.txt").unlink()
        write(ws, "d/new.txt", "new\n")
        eng.checkpoint("agent", kind="tool", tool="edit_file")
        swapped: list[str] = []

        def hook(step: str, rel: str) -> None:
            if not swapped and rel.startswith("d/"):
                (ws / "d").rename(ws / "d.moved")
                (ws / "d").symlink_to(outside, target_is_directory=True)
                swapped.append(rel)

        with faults.injected(hook):
            eng.restore(base, force=True)
        assert swapped
        assert (entry_hashes(outside), inodes(outside)) == outside_before, "wrote outside the workspace"
        assert (ws / "d").is_symlink()


def test_rollback_never_writes_through_a_parent_that_became_a_symlink(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    write(ws, "d/a.txt", "one\n")
    write(ws, "z.txt", "zed\n")
    write(outside, "a.txt", "OUTSIDE\n")
    outside_before = (entry_hashes(outside), inodes(outside))
    with Engine.open(ws, tmp_path / "store") as eng:
        base = eng.head.id
        write(ws, "d/a.txt", "two\n")
        write(ws, "z.txt", "zed two\n")
        eng.checkpoint("agent", kind="tool", tool="edit_file")
        state: dict[str, bool] = {}

        def hook(step: str, rel: str) -> None:
            if step == "replace" and rel == "z.txt":
                raise OSError(5, "injected I/O error", rel)  # fail after d/a.txt was replaced
            if step == "rollback" and rel == "d/a.txt" and not state:
                state["swapped"] = True
                (ws / "d").rename(ws / "d.moved")
                (ws / "d").symlink_to(outside, target_is_directory=True)

        with faults.injected(hook):
            out = eng.restore(base)
        assert out.kind == "failed"
        assert (entry_hashes(outside), inodes(outside)) == outside_before, "rollback wrote outside"


def test_failed_restore_rolls_back_exactly_links_and_dirs_included(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "keep.txt", "keep\n")
    write(ws, "x/inner.txt", "inner\n")
    with Engine.open(ws, tmp_path / "store") as eng:
        base = eng.head.id
        shutil.rmtree(ws / "x")
        (ws / "x").symlink_to("keep.txt")  # directory replaced by a symlink
        (ws / "link").symlink_to("dangling-target")
        write(ws, "keep.txt", "changed\n")
        write(ws, "zz-last.txt", "last\n")
        eng.checkpoint("agent", kind="tool", tool="edit_file")
        before_state, before_inodes = entry_hashes(ws), inodes(ws)
        ops: list[str] = []

        def hook(step: str, rel: str) -> None:
            ops.append(f"{step}:{rel}")
            if step in ("replace", "create") and rel == "x/inner.txt":
                raise OSError(28, "injected: no space left", rel)

        with faults.injected(hook):
            out = eng.restore(base, force=True)
        assert out.kind == "failed" and out.rolled_back, (out, ops)
        assert entry_hashes(ws) == before_state
        assert inodes(ws) == before_inodes, "rollback recreated entries instead of moving them back"
        assert (ws / "x").is_symlink() and (ws / "link").is_symlink()


# --------------------------------------------------------------------------- type swaps

KINDS = ("absent", "file", "dir", "symlink")
slot_kinds = st.fixed_dictionaries({n: st.sampled_from(KINDS) for n in ("p", "q", "r")})


def build(ws: Path, layout: dict[str, str], tag: str) -> None:
    for name, kind in layout.items():
        p = ws / name
        if p.is_symlink() or p.is_file():
            p.unlink()
        elif p.is_dir():
            shutil.rmtree(p)
        if kind == "file":
            write(ws, name, f"{tag} file {name}\n")
        elif kind == "dir":
            write(ws, f"{name}/inner.txt", f"{tag} inner {name}\n")
            write(ws, f"{name}/sub/deep.txt", f"{tag} deep {name}\n")
        elif kind == "symlink":
            p.symlink_to(f"target-{tag}-{name}")


@FAST
@given(first=slot_kinds, second=slot_kinds, third=slot_kinds)
def test_random_type_swaps_restore_exactly(
    scratch: Path, first: dict[str, str], second: dict[str, str], third: dict[str, str]
) -> None:
    """first (target) → second (recorded by the agent) → third (unrecorded edits of the same
    paths, so conflicts only ``force`` resolves) → restore first: the tree is exactly first."""
    ws, store = fresh(scratch / "swap")
    write(ws, "anchor.txt", "anchor\n")
    build(ws, first, "one")
    with Engine.open(ws, store) as eng:
        target = eng.checkpoint("first").id
        want = entry_hashes(ws)
        build(ws, second, "two")
        eng.checkpoint("second", kind="tool", tool="write_file")
        second_id = eng.head.id
        build(ws, {k: v for k, v in third.items() if first[k] != second[k]}, "three")
        pre = entry_hashes(ws)
        out = eng.restore(target, force=True)
        assert out.kind in ("applied", "nothingToRestore"), out
        event(f"outcome: {out.kind}; swapped kinds: {sum(first[k] != second[k] for k in first)}")
        now = entry_hashes(ws)
        assert {p: now.get(p) for p in want} == want
        recorded = set(eng.manifest(target)) | set(eng.manifest(second_id))
        for extra in set(now) - set(want):
            # Only unrecorded work that no checkpoint covers stays, untouched.
            assert extra not in recorded and now[extra] == pre[extra], extra
        head = eng.manifest(eng.head.id)
        recorded_now = {
            p: (e.kind, e.target if e.kind == "symlink" else e.hash, e.executable) for p, e in head.items()
        }
        assert recorded_now == now, "the head checkpoint does not describe the disk"


# --------------------------------------------------------------------------- long names

long_names = st.sampled_from(
    [
        "n" * 255,
        "m" * 200 + ".txt",
        "é" * 127,  # 254 bytes
        "日本" * 42,  # 252 bytes
        "x" * 250 + ".py",
    ]
)


@FAST
@given(name=long_names, nested=st.booleans())
def test_names_up_to_name_max_restore(scratch: Path, name: str, nested: bool) -> None:
    ws, store = fresh(scratch / "names")
    rel = f"{'é' * 120}/{name}" if nested else name
    write(ws, rel, "first\n")
    temp_names: list[str] = []
    with Engine.open(ws, store) as eng:
        base = eng.head.id
        write(ws, rel, "second version\n")
        eng.checkpoint("edit", kind="tool", tool="edit_file")

        def hook(step: str, path: str) -> None:
            parent = (ws / path).parent
            if parent.is_dir():
                temp_names.extend(n for n in os.listdir(parent) if n.startswith(TEMP_PREFIX))

        with faults.injected(hook):
            out = eng.restore(base)
        assert out.kind == "applied", out
        assert (ws / rel).read_text() == "first\n"
    assert temp_names, "the hook saw no temporary file"
    assert all(len(os.fsencode(n)) <= 20 and name[:8] not in n for n in temp_names)


# --------------------------------------------------------------------------- bounded memory

RSS_SCRIPT = textwrap.dedent(
    """
    import json, os, resource, sys
    from pathlib import Path
    from retrace.engine import Engine
    ws, store = Path(sys.argv[1]), Path(sys.argv[2])
    size = int(sys.argv[3])
    (ws / "small.txt").write_text("small\\n")
    (ws / "replaced.bin").write_text("small original\\n")
    with Engine.open(ws, store) as eng:
        base = eng.head.id
        for name in ("huge.bin", "replaced.bin"):
            with open(ws / name, "wb") as f:
                f.truncate(size)
        eng.checkpoint("huge files", kind="tool", tool="run_command")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out = eng.restore(base, force=True)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"kind": out.kind, "before_kb": before, "after_kb": after,
                      "huge": (ws / "huge.bin").exists(),
                      "replaced_size": (ws / "replaced.bin").stat().st_size}))
    """
)


@pytest.mark.slow
def test_forced_restore_of_huge_file_keeps_memory_bounded(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    size = 2 * 1024**3
    proc = subprocess.run(
        [sys.executable, "-c", RSS_SCRIPT, str(ws), str(tmp_path / "store"), str(size)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["kind"] == "applied", got
    assert not got["huge"] and got["replaced_size"] == len("small original\n")
    growth_mb = (got["after_kb"] - got["before_kb"]) / 1024
    assert growth_mb < 100, f"restore grew RSS by {growth_mb:.0f} MB"


def test_default_config_is_what_the_memory_test_assumes() -> None:
    assert EngineConfig().max_file_bytes < 100 * 1024 * 1024


def test_large_restore_parallel_temps_conflict_rolls_back_and_leaves_no_temp(tmp_path: Path) -> None:
    """Past the parallel threshold temporary files are made ahead: a conflict on the last
    publish still rolls back everything and removes every temporary file."""
    ws = tmp_path / "ws"
    names = [f"d{i % 5}/f{i:03d}.txt" for i in range(60)]
    for n in names:
        write(ws, n, f"v1 {n}\n")
    with Engine.open(ws, tmp_path / "store") as eng:
        base = eng.head.id
        for n in names:
            write(ws, n, f"v2 {n}\n")
        eng.checkpoint("agent", kind="tool", tool="run_command")
        before = entry_hashes(ws)
        last = sorted(names)[-1]
        hit: dict[str, bytes] = {}

        def hook(step: str, rel: str) -> None:
            if step == "replace" and rel == last and not hit:
                hit[rel] = same_size_preserved_mtime(ws / rel)

        with faults.injected(hook):
            out = eng.restore(base)
        assert out.kind == "conflict" and [f.path for f in out.files] == [last]
        now = entry_hashes(ws)
        assert (ws / last).read_bytes() == hit[last]
        assert {p: v for p, v in now.items() if p != last} == {p: v for p, v in before.items() if p != last}
        assert not [p for p in now if os.path.basename(p).startswith(TEMP_PREFIX)]
        again = eng.restore(base, force=True)
        assert again.kind == "applied"
        assert all((ws / n).read_text() == f"v1 {n}\n" for n in names)
