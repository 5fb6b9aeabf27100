"""Property: after any trace of edits, shell batches and restores, restoring ANY earlier
checkpoint reproduces exact bytes, modes and links of every tracked path."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.oracles import EntryHashes, entry_hashes

from retrace.engine import Engine, EngineConfig

# No pool path is a directory of another, so any subset can exist at once.
FILES = ["f.txt", "dir one/g.txt", "dir one/sub/h.bin", "ünï/x.md", "d2/y", "run.sh"]
LINKS = ["lnk", "dir one/lnk2"]
CONTENTS = st.sampled_from([b"", b"alpha\n", b"beta\nbeta\n", b"\x00\xff\x00binary", "ünïcødé ✓\n".encode()])

Op = tuple[str, str, object]


def ops_strategy() -> st.SearchStrategy[Op]:
    return st.one_of(
        st.tuples(st.just("write"), st.sampled_from(FILES), CONTENTS),
        st.tuples(st.just("delete"), st.sampled_from(FILES + LINKS), st.none()),
        st.tuples(st.just("rename"), st.sampled_from(FILES), st.sampled_from(FILES)),
        st.tuples(st.just("chmod"), st.sampled_from(FILES), st.booleans()),
        st.tuples(st.just("link"), st.sampled_from(LINKS), st.sampled_from([*FILES, "missing-target"])),
    )


def apply_op(ws: Path, op: Op) -> list[str]:
    """Perform one operation; returns the paths it changed (for an edit-style checkpoint)."""
    kind, path, arg = op
    p = ws / path
    if kind == "write":
        if p.is_symlink():
            return []
        p.parent.mkdir(parents=True, exist_ok=True)
        assert isinstance(arg, bytes)
        p.write_bytes(arg)
        return [path]
    if kind == "delete":
        if p.is_symlink() or p.is_file():
            p.unlink()
            return [path]
        return []
    if kind == "rename":
        dest = ws / str(arg)
        if path == arg or not p.is_file() or p.is_symlink() or os.path.lexists(dest):
            return []
        dest.parent.mkdir(parents=True, exist_ok=True)
        p.rename(dest)
        return [path, str(arg)]
    if kind == "chmod":
        if not p.is_file() or p.is_symlink():
            return []
        p.chmod(0o755 if arg else 0o644)
        return [path]
    if kind == "link":
        if os.path.lexists(p):
            return []
        p.parent.mkdir(parents=True, exist_ok=True)
        target = os.path.relpath(ws / str(arg), p.parent)
        os.symlink(target, p)
        return [path]
    raise AssertionError(kind)


STEP = st.one_of(
    st.tuples(st.just("edit"), ops_strategy()),
    st.tuples(st.just("shell"), st.lists(ops_strategy(), min_size=1, max_size=4)),
    st.tuples(st.just("restore"), st.integers(min_value=0, max_value=10**6)),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    initial=st.lists(st.tuples(st.sampled_from(FILES), CONTENTS), max_size=4),
    steps=st.lists(STEP, min_size=1, max_size=10),
    watcher=st.booleans(),
    final_order=st.randoms(use_true_random=False),
)
def test_any_checkpoint_restores_exactly(
    initial: list[tuple[str, bytes]],
    steps: list[tuple[str, object]],
    watcher: bool,
    final_order: object,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        for path, data in initial:
            (ws / path).parent.mkdir(parents=True, exist_ok=True)
            (ws / path).write_bytes(data)
        eng = Engine.open(ws, Path(tmp) / "store", config=EngineConfig(watcher=watcher))
        try:
            expected: dict[str, EntryHashes] = {eng.head.id: entry_hashes(ws)}
            for kind, arg in steps:
                if kind == "edit":
                    assert isinstance(arg, tuple)
                    changed = apply_op(ws, arg)
                    cp = eng.checkpoint("edit", changed, kind="tool")
                elif kind == "shell":
                    assert isinstance(arg, list)
                    for op in arg:
                        apply_op(ws, op)
                    cp = eng.checkpoint("shell", kind="tool")
                else:
                    assert isinstance(arg, int)
                    ids = list(expected)
                    target = ids[arg % len(ids)]
                    out = eng.restore(target)
                    assert out.kind in ("applied", "nothingToRestore"), out
                    assert entry_hashes(ws) == expected[target]
                    cp = eng.head
                expected[cp.id] = entry_hashes(ws)
            ids = list(expected)
            final_order.shuffle(ids)  # type: ignore[attr-defined]
            for cid in ids:
                out = eng.restore(cid)
                assert out.kind in ("applied", "nothingToRestore"), out
                assert entry_hashes(ws) == expected[cid], f"restoring {cid}"
        finally:
            eng.close()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(ops_strategy(), min_size=1, max_size=6),
    user_path=st.sampled_from(FILES),
    user_bytes=st.binary(min_size=1, max_size=40),
    target_pick=st.integers(min_value=0, max_value=10**6),
)
def test_unrecorded_user_work_is_never_lost(
    steps: list[Op], user_path: str, user_bytes: bytes, target_pick: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        eng = Engine.open(ws, Path(tmp) / "store")
        try:
            ids = [eng.head.id]
            for op in steps:
                apply_op(ws, op)
                ids.append(eng.checkpoint("agent", kind="tool").id)
            target = ids[target_pick % len(ids)]
            # The user writes a file and nobody records it.
            p = ws / user_path
            unchanged = p.is_file() and not p.is_symlink() and p.read_bytes() == user_bytes
            if p.is_symlink():
                p.unlink()
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(user_bytes)
            before = entry_hashes(ws)
            out = eng.restore(target)
            if out.kind == "conflict":
                assert entry_hashes(ws) == before, "a conflicting restore changes nothing"
                assert out.plan is not None and any(
                    f.path == user_path and f.conflict is not None and f.conflict.reason == "unrecorded"
                    for f in out.plan.files
                )
            else:
                assert out.kind in ("applied", "nothingToRestore"), out
                # Either the user's file was out of scope (left alone) or it already matched.
                assert p.read_bytes() == user_bytes
            # Whatever happened, the user's bytes are recorded somewhere and can be recovered.
            recorded = [
                c.id for c in eng.timeline() if c.kind == "safety" and user_path in {f.path for f in c.files}
            ]
            if out.kind == "applied" and not unchanged:
                assert recorded and eng.file_content(recorded[-1], user_path) == user_bytes
        finally:
            eng.close()
