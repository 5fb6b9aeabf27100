"""The pure merge rules of a subagent's net change (table), and a property: children that touch
disjoint files give, merged in any order, exactly the state of applying their changes one after
another; any path two children changed differently is never silently given one side."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.oracles import file_bytes

from retrace.agent.subagents.apply import NetChange, merge_into
from retrace.agent.subagents.merge import MergeStep, Version, decide
from retrace.agent.tools.base import ToolContext
from retrace.engine.config import EngineConfig

A = Version(b"line 1\nline 2\nline 3\nline 4\nline 5\n")
OURS = Version(b"line 1 ours\nline 2\nline 3\nline 4\nline 5\n")
THEIRS = Version(b"line 1\nline 2\nline 3\nline 4\nline 5 theirs\n")
MERGED = Version(b"line 1 ours\nline 2\nline 3\nline 4\nline 5 theirs\n")
CLASH = Version(b"line 1 clash\nline 2\nline 3\nline 4\nline 5\n")
BINARY = Version(b"\x00\x01\x02")
EXEC = Version(A.data, executable=True)
LINK = Version(b"target", link=True)


@pytest.mark.parametrize(
    ("base", "ours", "theirs", "unsaved", "kind", "result"),
    [
        (A, A, A, False, "keep", None),  # nobody changed it
        (A, OURS, A, False, "keep", None),  # only the parent changed it
        (A, THEIRS, THEIRS, False, "keep", None),  # the parent already has the child's version
        (A, A, THEIRS, False, "write", THEIRS),  # only the child changed it
        (None, None, THEIRS, False, "write", THEIRS),  # the child created it
        (A, A, None, False, "delete", None),  # the child deleted it
        (A, OURS, THEIRS, False, "write", MERGED),  # both changed, apart: merged
        (A, OURS, CLASH, False, "conflict", None),  # both changed the same line
        (A, None, THEIRS, False, "conflict", None),  # deleted here, changed there
        (A, OURS, None, False, "conflict", None),  # changed here, deleted there
        (None, OURS, THEIRS, False, "conflict", None),  # both created it, differently
        (BINARY, Version(b"\x00x"), Version(b"\x00y"), False, "conflict", None),  # not text
        (A, A, EXEC, False, "write", EXEC),  # only the mode changed
        (A, OURS, LINK, False, "conflict", None),  # a link on one side, changed on both
        (A, A, THEIRS, True, "conflict", None),  # unsaved in the editor: never written
        (A, A, None, True, "conflict", None),
        (A, OURS, A, True, "keep", None),  # nothing to write: the buffer is not in the way
    ],
)
def test_decide(
    base: Version | None,
    ours: Version | None,
    theirs: Version | None,
    unsaved: bool,
    kind: str,
    result: Version | None,
) -> None:
    step = decide("f.txt", base, ours, theirs, unsaved=unsaved)
    assert step.kind == kind, step.reason
    assert step.version == result
    if kind == "conflict":
        assert step.reason


NAMES = st.sampled_from(["a.txt", "b.txt", "src/c.py", "src/d/e.md", "f g.txt"])
CONTENT = st.binary(max_size=40).map(lambda b: b.replace(b"\x00", b"0"))
# One child's net change: path -> new content (None: deleted).
CHANGE = st.dictionaries(NAMES, st.one_of(st.none(), CONTENT), max_size=4)


def _write_state(root: Path, state: dict[str, bytes]) -> None:
    for rel, data in state.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def _net(base: dict[str, bytes], change: dict[str, bytes | None]) -> NetChange:
    out = NetChange()
    for rel, data in change.items():
        before = Version(base[rel]) if rel in base else None
        after = None if data is None else Version(data)
        if before != after:
            out.changes[rel] = (before, after)
    return out


@settings(max_examples=60, deadline=None)
@given(
    base=st.dictionaries(NAMES, CONTENT, max_size=5),
    changes=st.lists(CHANGE, min_size=1, max_size=4),
    order=st.randoms(use_true_random=False),
)
def test_disjoint_children_merge_to_their_sequential_application(
    tmp_path_factory: pytest.TempPathFactory,
    base: dict[str, bytes],
    changes: list[dict[str, bytes | None]],
    order: object,
) -> None:
    # Make the children disjoint: a path belongs to the first child that changes it.
    seen: set[str] = set()
    disjoint = []
    for change in changes:
        mine = {p: d for p, d in change.items() if p not in seen}
        seen |= set(mine)
        disjoint.append(mine)
    root = tmp_path_factory.mktemp("ws")
    _write_state(root, base)
    expected = dict(base)
    for change in disjoint:
        for rel, data in change.items():
            if data is None:
                expected.pop(rel, None)
            else:
                expected[rel] = data
    merge_order = list(range(len(disjoint)))
    order.shuffle(merge_order)  # type: ignore[attr-defined]
    ctx = ToolContext(workspace=root, engine_config=EngineConfig(watcher=False))
    conflicts: list[MergeStep] = []
    for index in merge_order:
        outcome = merge_into(ctx, _net(base, disjoint[index]))
        conflicts += outcome.conflicts
    assert conflicts == []
    assert file_bytes(root) == expected


@settings(max_examples=60, deadline=None)
@given(base=CONTENT, one=CONTENT, two=CONTENT)
def test_two_children_changing_one_file_never_lose_a_side_silently(
    tmp_path_factory: pytest.TempPathFactory, base: bytes, one: bytes, two: bytes
) -> None:
    root = tmp_path_factory.mktemp("ws")
    (root / "f.txt").write_bytes(base)
    ctx = ToolContext(workspace=root, engine_config=EngineConfig(watcher=False))
    first = merge_into(ctx, _net({"f.txt": base}, {"f.txt": one}))
    second = merge_into(ctx, _net({"f.txt": base}, {"f.txt": two}))
    assert first.conflicts == []
    final = (root / "f.txt").read_bytes()
    if second.conflicts:
        assert final == one  # the conflict left the file exactly as the first merge made it
    elif one == base:
        assert final == two
    elif two in (base, one):
        assert final == one
    else:
        # Both changed it and the merge was clean: each side's change is in the result.
        assert "f.txt" in second.merged
