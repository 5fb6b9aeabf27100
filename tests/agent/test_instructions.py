"""Project instructions (``AGENTS.md`` / ``CLAUDE.md``) and the system prompt, against the real
engine and the fake Messages API: what the model is sent, request by request."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from retrace.agent.instructions import (
    MAX_FILE_CHARS,
    MAX_FOLDERS,
    MAX_TOTAL_CHARS,
    folders_of,
    project_instructions,
)

from .conftest import Harness, HarnessFactory


def system_of(request: dict[str, Any]) -> str:
    system = request["system"]
    if isinstance(system, str):
        return system
    return "".join(block["text"] for block in system)


def read(path: str) -> dict[str, Any]:
    return {"toolCalls": [{"name": "read_file", "input": {"path": path}}]}


async def test_root_and_nested_instructions_reach_the_system_prompt(make_harness: HarnessFactory) -> None:
    h: Harness = await make_harness([read("pkg/deep/mod.py"), {"text": "done"}, {"text": "again"}])
    (h.workspace / "AGENTS.md").write_text("Root rule: run `make test` before finishing.\n")
    (h.workspace / "CLAUDE.md").write_text("Claude rule: tabs, never spaces.\n")
    (h.workspace / "pkg" / "deep").mkdir(parents=True)
    (h.workspace / "pkg" / "AGENTS.md").write_text("Package rule: no new dependencies.\n")
    (h.workspace / "pkg" / "deep" / "mod.py").write_text("x = 1\n")
    (h.workspace / "other").mkdir()
    (h.workspace / "other" / "AGENTS.md").write_text("Other rule: never shown.\n")

    sid = await h.turn("look at the module")
    first, second = (system_of(r) for r in h.fake.requests)
    assert "Root rule: run `make test`" in first
    assert "Claude rule: tabs" in first
    assert "Package rule" not in first  # pkg/ not touched yet
    # After the read of pkg/deep/mod.py, the next request carries pkg/AGENTS.md.
    assert "Package rule: no new dependencies." in second
    assert "Other rule" not in second
    assert second.index("Root rule") < second.index("Package rule")
    assert "pkg/AGENTS.md" in second
    # The section says what it is and how big it may be.
    assert f"{MAX_FILE_CHARS:,}" in second and f"{MAX_TOTAL_CHARS:,}" in second

    # The richer prompt: checkpoints, edit tools over shell, task, concision.
    for phrase in ("checkpoint", "edit_file", "task", "concise"):
        assert phrase in first

    # Read fresh each turn, identical text when nothing changed (so it caches).
    await h.turn("again", sid)
    assert system_of(h.fake.requests[-1]) == second
    (h.workspace / "AGENTS.md").write_text("Root rule, edited.\n")
    await h.turn("once more", sid)
    assert "Root rule, edited." in system_of(h.fake.requests[-1])


async def test_a_symlinked_instructions_file_pointing_outside_is_not_read(
    make_harness: HarnessFactory, tmp_path: Path
) -> None:
    h: Harness = await make_harness([{"text": "ok"}])
    secret = tmp_path / "secret.md"
    secret.write_text("SECRET outside the workspace\n")
    os.symlink(secret, h.workspace / "AGENTS.md")
    inside = h.workspace / "docs" / "rules.md"
    inside.parent.mkdir()
    inside.write_text("Inside rule via a link.\n")
    os.symlink(inside, h.workspace / "CLAUDE.md")
    await h.turn("hi")
    system = system_of(h.fake.requests[-1])
    assert "SECRET" not in system
    assert "Inside rule via a link." in system  # a link that stays inside is an ordinary file


def test_instruction_files_table(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    outside = tmp_path / "out"
    (outside).mkdir()
    (outside / "AGENTS.md").write_text("OUTSIDE\n")
    os.symlink(outside, ws / "linked")
    (ws / "AGENTS.md").write_text("root\n")
    os.symlink("AGENTS.md", ws / "CLAUDE.md")  # the same file under both names: once
    (ws / "a" / "AGENTS.md").write_text("A" * (MAX_FILE_CHARS + 50))
    (ws / "a" / "b" / "CLAUDE.md").write_bytes(b"\x00binary")
    text = project_instructions(ws, ["a/b/c.py", "linked/x.py", "../escape.py", "/etc/passwd", "a/b"])
    assert text.count("root") == 1
    assert "OUTSIDE" not in text
    assert "binary" not in text
    assert "a/AGENTS.md" in text and "[cut at" in text
    assert project_instructions(ws, ["a/b/c.py"]) == project_instructions(ws, ["a/b", "a/b/c.py"])
    assert project_instructions(tmp_path / "empty", []) == ""


@pytest.mark.parametrize("count", [1, 8])
def test_the_total_cap_holds(tmp_path: Path, count: int) -> None:
    ws = tmp_path / "ws"
    names = [f"d{i}" for i in range(count)]
    for name in names:
        (ws / name).mkdir(parents=True)
        (ws / name / "AGENTS.md").write_text(name * (MAX_FILE_CHARS // len(name)))
    text = project_instructions(ws, [f"{n}/f.py" for n in names])
    assert len(text) <= MAX_TOTAL_CHARS + 2000  # the caps plus the section's own words
    if count * MAX_FILE_CHARS > MAX_TOTAL_CHARS:
        assert "left out" in text


def test_folders_root_first_shallow_first_and_capped(tmp_path: Path) -> None:
    assert folders_of(tmp_path, ["b/c/d.py", "a/x.py", str(tmp_path / "z" / "y.py"), "../out"]) == [
        "",
        "a",
        "b",
        "z",
        "a/x.py",
        "b/c",
        "z/y.py",
        "b/c/d.py",
    ]
    many = folders_of(tmp_path, [f"deep/f{i}/x.py" for i in range(3 * MAX_FOLDERS)])
    assert len(many) == MAX_FOLDERS and many[:2] == ["", "deep"]
