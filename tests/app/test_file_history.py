"""Per-file history over a real engine: which checkpoints touched a file, what each did to it,
the content hash after it, line statistics, sessions, paging and the errors a client can get."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrace.app.file_history import file_history
from retrace.engine import Engine, EngineConfig
from retrace.engine.errors import PathOutsideWorkspace, RetraceError, UnknownCheckpoint
from retrace.protocol.file_history import FileHistoryParams, FileHistoryResult


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "work space"
    root.mkdir()
    (root / "keep.txt").write_bytes(b"kept\n")
    (root / "base.txt").write_bytes(b"one\n")
    return root


@pytest.fixture
def engine(ws: Path, tmp_path: Path) -> Iterator[Engine]:
    eng = Engine.open(ws, tmp_path / "store", config=EngineConfig())
    yield eng
    eng.close()


def history(engine: Engine, path: str, **params: object) -> FileHistoryResult:
    return file_history(engine, FileHistoryParams.model_validate({"path": path, **params}))


def write(engine: Engine, ws: Path, rel: str, data: bytes, label: str) -> str:
    (ws / rel).parent.mkdir(parents=True, exist_ok=True)
    (ws / rel).write_bytes(data)
    return engine.checkpoint(label, [rel], kind="tool", tool="write_file").id


def story(engine: Engine, ws: Path) -> dict[str, str]:
    """A small session touching a.txt in every way; returns label → checkpoint id."""
    ids = {"baseline": engine.head.id}
    ids["create"] = write(engine, ws, "a.txt", b"one\ntwo\n", "create a")
    ids["other"] = write(engine, ws, "b/other.txt", b"x\n", "other file")
    ids["modify"] = write(engine, ws, "a.txt", b"one\n2\nthree\n", "modify a")
    (ws / "a.txt").rename(ws / "moved.txt")
    ids["away"] = engine.checkpoint("move a away", ["a.txt", "moved.txt"], kind="tool", tool="run_command").id
    (ws / "moved.txt").rename(ws / "a.txt")
    ids["back"] = engine.checkpoint("move a back", ["a.txt", "moved.txt"], kind="tool", tool="run_command").id
    (ws / "a.txt").unlink()
    ids["delete"] = engine.checkpoint("delete a", ["a.txt"], kind="tool", tool="run_command").id
    return ids


Row = tuple[str, str, bool, bytes | None, int | None, int | None, str | None]
"""checkpoint label, change, exists, content after it (or None), +, −, rename."""

# path → expected rows, newest first
CASES: list[tuple[str, list[Row]]] = [
    (
        "a.txt",
        [
            ("delete", "deleted", False, None, 0, 3, None),
            ("back", "renamed", True, b"one\n2\nthree\n", None, None, "from moved.txt"),
            ("away", "renamed", False, None, None, None, "to moved.txt"),
            ("modify", "modified", True, b"one\n2\nthree\n", 2, 1, None),
            ("create", "created", True, b"one\ntwo\n", 2, 0, None),
        ],
    ),
    (
        "moved.txt",
        [
            ("back", "renamed", False, None, None, None, "to a.txt"),
            ("away", "renamed", True, b"one\n2\nthree\n", None, None, "from a.txt"),
        ],
    ),
    ("base.txt", [("baseline", "created", True, b"one\n", None, None, None)]),
    ("./b//other.txt", [("other", "created", True, b"x\n", 1, 0, None)]),
    ("never/seen.txt", []),
]


@pytest.mark.parametrize(("path", "expected"), CASES, ids=[c[0] for c in CASES])
def test_history_lists_each_change_to_the_file(
    engine: Engine, ws: Path, path: str, expected: list[Row]
) -> None:
    ids = story(engine, ws)
    label_of = {cid: label for label, cid in ids.items()}
    result = history(engine, path)
    got = [
        (
            label_of[v.checkpoint_id],
            v.change,
            v.exists,
            v.hash,
            v.additions,
            v.deletions,
            f"from {v.renamed_from}" if v.renamed_from else f"to {v.renamed_to}" if v.renamed_to else None,
        )
        for v in result.versions
    ]
    want = [
        (lab, ch, ex, sha(data) if data is not None else None, add, rem, ren)
        for lab, ch, ex, data, add, rem, ren in expected
    ]
    assert got == want
    assert result.next_cursor is None
    for version in result.versions:
        if version.exists:
            assert version.hash is not None
            assert sha(engine.file_content(version.checkpoint_id, result.path) or b"") == version.hash


def test_rows_carry_the_timeline_title_session_and_a_file_summary(engine: Engine, ws: Path) -> None:
    ids = story(engine, ws)
    rows = {v.checkpoint_id: v for v in history(engine, "a.txt").versions}
    assert rows[ids["modify"]].title == "modify a"
    assert rows[ids["modify"]].summary == "+2 −1"
    assert rows[ids["create"]].summary == "created, +2 −0"
    assert rows[ids["back"]].summary == "renamed from moved.txt"
    assert rows[ids["delete"]].summary == "deleted, +0 −3"
    assert {v.session_id for v in rows.values()} == {engine.session_id}
    assert rows[ids["modify"]].parent_id == ids["other"]
    assert history(engine, "base.txt").versions[0].title == "Starting point"


def test_restore_of_the_file_is_a_version_too(engine: Engine, ws: Path) -> None:
    ids = story(engine, ws)
    outcome = engine.restore(ids["create"], paths=["a.txt"])
    assert outcome.kind == "applied", outcome
    newest = history(engine, "a.txt").versions[0]
    assert (newest.kind, newest.change, newest.hash) == ("restore", "created", sha(b"one\ntwo\n"))
    assert newest.title.startswith("Restored code to")


def test_sessions_filter_and_span(engine: Engine, ws: Path) -> None:
    first = engine.session_id
    write(engine, ws, "a.txt", b"1\n", "first session")
    second = engine.new_session()
    write(engine, ws, "a.txt", b"2\n", "second session")
    assert [v.session_id for v in history(engine, "a.txt").versions] == [second, first]
    assert [v.title for v in history(engine, "a.txt", sessionId=first).versions] == ["first session"]
    with pytest.raises(RetraceError, match="unknown session"):
        history(engine, "a.txt", sessionId="no-such-session")


def test_paging_walks_every_version_once_newest_first(engine: Engine, ws: Path) -> None:
    labels = [f"edit {n}" for n in range(7)]
    for n, label in enumerate(labels):
        write(engine, ws, "a.txt", f"{n}\n".encode(), label)
        write(engine, ws, "noise.txt", f"{n}\n".encode(), f"noise {n}")
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = history(engine, "a.txt", limit=3, cursor=cursor)
        seen.extend(v.title for v in page.versions)
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == list(reversed(labels))
    assert pages == 3
    with pytest.raises(UnknownCheckpoint, match="cursor"):
        history(engine, "a.txt", cursor="zzzzzzzzzzzz")


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "", "a/../../x"])
def test_a_path_outside_the_workspace_is_refused_clearly(engine: Engine, path: str) -> None:
    with pytest.raises(PathOutsideWorkspace, match="outside the workspace"):
        history(engine, path)


def test_an_absolute_path_inside_the_workspace_is_accepted(engine: Engine, ws: Path) -> None:
    write(engine, ws, "a.txt", b"1\n", "create a")
    result = history(engine, str(ws / "a.txt"))
    assert result.path == "a.txt" and [v.title for v in result.versions] == ["create a"]


def test_after_reopening_the_store_the_history_is_the_same(ws: Path, tmp_path: Path) -> None:
    with Engine.open(ws, tmp_path / "store", config=EngineConfig()) as engine:
        story(engine, ws)
        before = history(engine, "a.txt")
    with Engine.open(ws, tmp_path / "store", config=EngineConfig(), readonly=True) as engine:
        assert history(engine, "a.txt") == before


def test_the_query_reads_only_per_checkpoint_deltas(
    engine: Engine, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No manifest is rebuilt and nothing is walked per file: only the first baseline (which has
    no delta) is looked up, and only when the page reaches it."""
    for n in range(60):
        write(engine, ws, f"f{n % 20}.txt", f"{n}\n".encode(), f"edit {n}")
    write(engine, ws, "f3.txt", b"last\n", "last f3")
    calls: list[str] = []
    history_ = engine.history
    for name in ("manifest_at", "entries_at", "changed_between"):
        real = getattr(history_, name)
        monkeypatch.setattr(history_, name, lambda *a, _n=name, _r=real, **k: calls.append(_n) or _r(*a, **k))
    page = history(engine, "f3.txt", limit=2)
    assert [v.title for v in page.versions] == ["last f3", "edit 43"] and calls == []
    everything = history(engine, "base.txt")
    assert [v.title for v in everything.versions] == ["Starting point"]
    assert calls == ["entries_at"]
