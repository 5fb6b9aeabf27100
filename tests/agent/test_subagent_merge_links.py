"""A child's merge treats links as links (safety round 3, item 2).

A child that deletes, replaces or re-points a symlink makes the merge delete, replace or
re-point the LINK in the parent workspace, never its target; a path whose parent is a link (to a
directory, into ``.git``, outside the workspace, dangling) is never written through; a path
that is not a plain workspace path is a conflict. Random link layouts and random child changes:
the parent's ``.git`` and everything outside the workspace stay byte-identical, every written
path holds exactly the child's version, every other path is untouched, and the task checkpoint
of the written paths leaves nothing unrecorded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.oracles import entries_and_modes

from retrace.agent.subagents.apply import NetChange, merge_into
from retrace.agent.subagents.merge import Version
from retrace.agent.tools.base import ToolContext
from retrace.engine import Engine, EngineConfig

LINKS = {
    "ln_file": "a/f.txt",
    "ln_dir": "a",
    "ln_git": ".git",
    "ln_git_config": ".git/config",
    "ln_out": "../outside",
    "ln_out_file": "../outside/secret",
    "ln_dangling": "nowhere",
    "a/ln_up": "..",
}
FILES = {"a/f.txt": b"mine\n", "a/b/g.txt": b"mine too\n", "top.txt": b"top\n"}


def layout(base: Path) -> tuple[Path, Path]:
    ws, outside = base / "ws", base / "outside"
    (ws / ".git" / "refs").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    outside.mkdir()
    (outside / "secret").write_text("outside\n")
    for rel, data in FILES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_bytes(data)
    for rel, target in LINKS.items():
        (ws / rel).symlink_to(target)
    return ws, outside


def link(target: str) -> Version:
    return Version(target.encode(), link=True)


# What a child can do to a link: delete it, re-point it, replace it with a file; or write
# (create) a file below a link, as a child whose copy had a real directory there would.
ACTIONS = st.sampled_from(["delete", "repoint", "to_file", "below"])
CHILD = st.dictionaries(st.sampled_from(sorted(LINKS)), ACTIONS, min_size=1, max_size=4)


def net_change_for(child: dict[str, str]) -> tuple[NetChange, dict[str, Version | None]]:
    """The child's net change, and what each path should hold if the merge writes it."""
    out, want = NetChange(), {}
    for rel, action in child.items():
        base = link(LINKS[rel])
        if action == "delete":
            out.changes[rel], want[rel] = (base, None), None
        elif action == "repoint":
            new = link("top.txt")
            out.changes[rel], want[rel] = (base, new), new
        elif action == "to_file":
            new = Version(b"a file now\n")
            out.changes[rel], want[rel] = (base, new), new
        else:
            inner = f"{rel}/config"
            new = Version(b"[core]\n\tfsmonitor = evil\n")
            out.changes[inner], want[inner] = (None, new), new
    return out, want


def holds(ws: Path, rel: str) -> Version | None:
    p = ws / rel
    try:
        st_ = os.lstat(p)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if os.path.islink(p):
        return link(os.readlink(p))
    return Version(p.read_bytes(), bool(st_.st_mode & 0o111)) if p.is_file() else Version(b"<dir>")


def check_merge(base: Path, child: dict[str, str]) -> None:
    ws, outside = layout(base)
    eng = Engine.open(ws, base / "store", config=EngineConfig(watcher=False))
    try:
        before_git, before_out, before_ws = (
            entries_and_modes(ws / ".git"),
            entries_and_modes(outside),
            entries_and_modes(ws),
        )
        change, want = net_change_for(child)
        merged = merge_into(ToolContext(workspace=ws, engine_config=EngineConfig(watcher=False)), change)
        assert entries_and_modes(ws / ".git") == before_git
        assert entries_and_modes(outside) == before_out
        for rel in merged.written:
            assert holds(ws, rel) == want[rel], rel
        conflicted = {c.path for c in merged.conflicts}
        assert conflicted | set(merged.written) == set(change.changes)
        touched = set(merged.written) | {p.split("/")[0] for p in merged.written}
        after = entries_and_modes(ws)
        for rel, value in before_ws.items():
            if not any(rel == t or rel.startswith(t + "/") for t in touched):
                assert after.get(rel) == value, rel
        if merged.written:
            eng.checkpoint("apply subagent result", merged.written, kind="manual")
        assert eng.record_external() is None, "the task checkpoint missed a change"
    finally:
        eng.close()


@pytest.mark.parametrize("rel", sorted(LINKS))
@pytest.mark.parametrize("action", ["delete", "repoint", "to_file", "below"])
def test_each_link_change_lands_on_the_link(tmp_path: Path, rel: str, action: str) -> None:
    check_merge(tmp_path, {rel: action})


@settings(max_examples=60, deadline=None)
@given(child=CHILD)
def test_random_link_layouts_under_a_merge(
    tmp_path_factory: pytest.TempPathFactory, child: dict[str, str]
) -> None:
    check_merge(tmp_path_factory.mktemp("merge"), child)


@pytest.mark.parametrize(
    "rel", ["../outside/secret", ".git/config", "a/../../outside/x", "/etc/x", "a//f.txt"]
)
def test_a_forged_child_path_is_a_conflict(tmp_path: Path, rel: str) -> None:
    ws, outside = layout(tmp_path)
    before_git, before_out = entries_and_modes(ws / ".git"), entries_and_modes(outside)
    change = NetChange(changes={rel: (None, Version(b"evil\n"))})
    merged = merge_into(ToolContext(workspace=ws, engine_config=EngineConfig(watcher=False)), change)
    assert merged.written == []
    assert [c.path for c in merged.conflicts] == [rel]
    assert entries_and_modes(ws / ".git") == before_git and entries_and_modes(outside) == before_out
