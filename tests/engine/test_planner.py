"""Table tests of the pure restore planner: (target, head, disk, provenance) → planned action."""

from __future__ import annotations

import hashlib

import pytest

from retrace.engine.manifest import make_entry
from retrace.engine.models import FileEntry
from retrace.engine.restore.planner import PathState, plan_restore

CONTENT = {
    "base": b"one\ntwo\nthree\nfour\nfive\n",
    "agent": b"one\ntwo AGENT\nthree\nfour\nfive\n",
    "user": b"one\ntwo\nthree\nfour\nfive USER\n",
    "clash": b"one\ntwo USER\nthree\nfour\nfive\n",
    "other": b"something else entirely\n",
}
BY_HASH = {hashlib.sha256(v).hexdigest(): v for v in CONTENT.values()}


def f(name: str, *, executable: bool = False) -> FileEntry:
    data = CONTENT[name]
    return make_entry("file", hashlib.sha256(data).hexdigest(), len(data), executable=executable)


def link(target: str) -> FileEntry:
    return make_entry("symlink", hashlib.sha256(target.encode()).hexdigest(), len(target), target=target)


UNSTORED = make_entry("file", None, 10**9, unstored="over size cap (953.7 MB > 8.0 MB)")


def plan(states: dict[str, PathState], disk: dict[str, bytes] | None = None):  # type: ignore[no-untyped-def]
    return plan_restore(
        target_id="t",
        head_id="h",
        mode="code",
        states=states,
        read_blob=lambda e: BY_HASH.get(e.hash or ""),
        read_disk=(disk or {}).get,
    )


CASES = [
    # id, state, expected action, expected intended, conflict reason
    pytest.param(
        PathState(f("base"), f("agent"), f("agent")), "overwrite", None, None, id="agent-edit-undone"
    ),
    pytest.param(PathState(None, f("agent"), f("agent")), "delete", None, None, id="agent-create-undone"),
    pytest.param(PathState(f("base"), None, None), "create", None, None, id="agent-delete-undone"),
    pytest.param(
        PathState(f("base", executable=True), f("base"), f("base")),
        "chmod",
        None,
        None,
        id="exec-bit-restored",
    ),
    pytest.param(
        PathState(link("a"), link("b"), link("b")), "overwrite", None, None, id="symlink-retargeted"
    ),
    pytest.param(
        PathState(f("base"), f("agent"), f("base")), None, None, None, id="disk-already-matches-target"
    ),
    pytest.param(
        PathState(f("base"), f("agent"), f("user")),
        "conflict",
        "overwrite",
        "unrecorded",
        id="unrecorded-edit",
    ),
    # Creating where nothing exists loses nothing: never a conflict, whatever the history says.
    pytest.param(PathState(f("base"), f("agent"), None), "create", None, None, id="unrecorded-delete"),
    pytest.param(
        PathState(f("base"), None, None, external=True, base=f("base")),
        "create",
        None,
        None,
        id="fresh-folder-external-delete",
    ),
    pytest.param(PathState(link("a"), link("b"), None), "create", None, None, id="missing-link-recreated"),
    pytest.param(
        PathState(f("base"), f("base"), None, external=True, base=f("agent")),
        "create",
        None,
        None,
        id="missing-file-with-external-history",
    ),
    # ... and deleting what is already gone is nothing to do.
    pytest.param(PathState(None, f("agent"), None), None, None, None, id="delete-already-absent"),
    pytest.param(
        PathState(None, f("agent"), None, external=True, base=f("base")),
        None,
        None,
        None,
        id="delete-already-absent-external",
    ),
    # Existing files with other content stay conflicts.
    pytest.param(
        PathState(f("base"), f("other"), f("other"), external=True),
        "conflict",
        "overwrite",
        "external",
        id="fresh-folder-existing-different-file",
    ),
    pytest.param(
        PathState(f("base"), None, f("other")),
        "conflict",
        "overwrite",
        "unrecorded",
        id="unrecorded-file-where-target-creates",
    ),
    pytest.param(
        PathState(None, f("agent"), f("user")),
        "conflict",
        "delete",
        "unrecorded",
        id="unrecorded-then-delete",
    ),
    pytest.param(
        PathState(f("base"), f("user"), f("user"), external=True, base=f("agent")),
        "conflict",
        "overwrite",
        "external",
        id="external-latest-change",
    ),
    pytest.param(
        PathState(None, UNSTORED, UNSTORED), "conflict", "delete", "unrecorded", id="unstored-current-delete"
    ),
    pytest.param(
        PathState(f("base"), UNSTORED, UNSTORED),
        "conflict",
        "overwrite",
        "unrecorded",
        id="unstored-overwrite",
    ),
    pytest.param(
        PathState(f("base"), f("agent"), None, current_error="Permission denied"),
        "conflict",
        "create",
        "unreadable",
        id="unreadable",
    ),
]


@pytest.mark.parametrize(("state", "action", "intended", "reason"), CASES)
def test_plan_table(state: PathState, action: str | None, intended: str | None, reason: str | None) -> None:
    p = plan({"x.txt": state})
    if action is None:
        assert p.files == []
        return
    assert [pf.action for pf in p.files] == [action]
    pf = p.files[0]
    assert pf.intended == intended
    assert (pf.conflict.reason if pf.conflict else None) == reason
    assert getattr(p.counts, action) == 1


def test_unrecorded_conflict_offers_clean_merge() -> None:
    # base = what the head recorded (agent), ours = disk (agent + user), theirs = target (base).
    disk_bytes = b"one\ntwo AGENT\nthree\nfour\nfive USER\n"
    cur = make_entry("file", hashlib.sha256(disk_bytes).hexdigest(), len(disk_bytes))
    p = plan({"x.txt": PathState(f("base"), f("agent"), cur)}, disk={"x.txt": disk_bytes})
    conflict = p.files[0].conflict
    assert conflict is not None and conflict.merged_text == CONTENT["user"].decode()


def test_overlapping_edits_have_no_merge() -> None:
    # The agent's line 2 change is to be undone but the user rewrote that same line.
    disk_bytes = b"one\ntwo USER EDIT\nthree\nfour\nfive\n"
    cur = make_entry("file", hashlib.sha256(disk_bytes).hexdigest(), len(disk_bytes))
    p = plan({"x.txt": PathState(f("base"), f("agent"), cur)}, disk={"x.txt": disk_bytes})
    conflict = p.files[0].conflict
    assert conflict is not None and conflict.reason == "unrecorded" and conflict.merged_text is None


def test_rename_is_paired() -> None:
    p = plan(
        {
            "old.txt": PathState(f("base"), None, None),
            "new.txt": PathState(None, f("base"), f("base")),
        }
    )
    assert [(pf.action, pf.path, pf.from_path) for pf in p.files] == [("rename", "old.txt", "new.txt")]
    assert p.counts.rename == 1 and p.counts.delete == 0 and p.counts.create == 0


def test_unstored_target_is_unrecoverable_not_planned() -> None:
    p = plan(
        {
            "big.bin": PathState(UNSTORED, f("agent"), f("agent")),
            "a.txt": PathState(None, f("base"), f("base")),
        }
    )
    assert [pf.path for pf in p.files] == ["a.txt"]
    assert [u.path for u in p.unrecoverable] == ["big.bin"]
    assert "over size cap" in p.unrecoverable[0].reason


def test_planner_is_pure() -> None:
    states = {"x.txt": PathState(f("base"), f("agent"), f("user"))}
    a = plan(states)
    b = plan(states)
    assert a == b
