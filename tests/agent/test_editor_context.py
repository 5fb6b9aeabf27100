"""The editor-context formatter (pure) and the mention reader, table-tested."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from retrace.agent.editor_context import (
    MAX_MENTION_LINES,
    MAX_MENTIONS,
    MAX_SELECTION_LINES,
    EditorContext,
    MentionContent,
    bounded,
    fenced,
    format_attachments,
)
from retrace.agent.mentions import MAX_MENTION_BYTES, read_mention
from retrace.engine.config import EngineConfig


def ctx(**fields: object) -> EditorContext:
    return EditorContext.model_validate({"path": "app.py", "language": "python", **fields})


SEL = {"lines": {"start": 12, "end": 20}, "text": "def f():\n    return 1"}


@pytest.mark.parametrize(
    ("context", "mentions", "in_block", "summary"),
    [
        (None, [], [], []),
        (
            ctx(),
            [],
            ["<editor-context>", "Active file: app.py (python)", "</editor-context>"],
            ["app.py (active file)"],
        ),
        (
            ctx(visible={"start": 1, "end": 40}, selections=[SEL]),
            [],
            ["Visible lines: 1-40", "Selected lines 12-20:", "```python\ndef f():\n    return 1\n```"],
            ["app.py:12-20 (selection)"],
        ),
        (
            ctx(
                selections=[
                    {"lines": {"start": 3, "end": 3}, "text": "x = 1"},
                    {"lines": {"start": 9, "end": 9}, "text": "  "},
                ]
            ),
            [],
            ["Selected lines 3:"],
            ["app.py:3 (selection)"],
        ),
        (
            ctx(openEditors=["app.py", "b.py", "c.py"]),
            [],
            ["Open editors: b.py, c.py"],
            ["app.py (active file)", "2 open editors"],
        ),
        (
            None,
            [MentionContent("utils.py", text="def g():\n    pass\n")],
            ['<file path="utils.py">\ndef g():\n    pass\n</file>'],
            ["@utils.py"],
        ),
        (
            None,
            [MentionContent("../x", problem="outside the workspace")],
            ['<file path="../x" status="not attached: outside the workspace"/>'],
            ["@../x (not attached: outside the workspace)"],
        ),
        (
            None,
            [MentionContent("a.py", text="1"), MentionContent("a.py", text="1")],
            ['<file path="a.py">'],
            ["@a.py"],
        ),
        (None, [MentionContent('q"<.py', text="")], ['<file path="q&quot;&lt;.py">'], ['@q"<.py']),
    ],
)
def test_format_attachments(
    context: EditorContext | None, mentions: list[MentionContent], in_block: list[str], summary: list[str]
) -> None:
    out = format_attachments(context, mentions)
    for part in in_block:
        assert part in out.block
    assert out.summary == summary
    if context is None and not mentions:
        assert out.block == ""
    assert format_attachments(context, mentions) == out  # deterministic


@pytest.mark.parametrize(
    ("text", "max_lines", "max_chars", "expected"),
    [
        ("a\nb\nc", 5, 100, "a\nb\nc"),
        ("a\nb\nc", 2, 100, "a\nb\n[truncated: 1 more lines]"),
        ("aaaa\nbbbb\ncccc", 10, 9, "aaaa\n[truncated: 2 more lines]"),
        ("", 5, 100, ""),
    ],
)
def test_bounded(text: str, max_lines: int, max_chars: int, expected: str) -> None:
    assert bounded(text, max_lines, max_chars) == expected


def test_a_long_selection_and_a_long_mention_are_cut_with_a_visible_marker() -> None:
    long = "\n".join(f"line {i}" for i in range(1000))
    out = format_attachments(ctx(selections=[{"lines": {"start": 1, "end": 1000}, "text": long}]), [])
    assert f"[truncated: {1000 - MAX_SELECTION_LINES} more lines]" in out.block
    out = format_attachments(None, [MentionContent("big.py", text=long)])
    assert f"[truncated: {1000 - MAX_MENTION_LINES} more lines]" in out.block
    assert "line 999" not in out.block


def test_too_many_mentions_are_reported_not_attached() -> None:
    mentions = [MentionContent(f"f{i}.py", text="x") for i in range(MAX_MENTIONS + 2)]
    out = format_attachments(None, mentions)
    assert out.summary[-1] == "2 more mentions not attached"
    assert f'<file path="f{MAX_MENTIONS}.py">' not in out.block


@pytest.mark.parametrize(("text", "fence"), [("plain", "```"), ("has ``` inside", "````"), ("````", "`````")])
def test_fences_outlast_the_text(text: str, fence: str) -> None:
    assert fenced(text).startswith(fence + "\n")
    assert fenced(text).endswith("\n" + fence)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "u.py").write_text("print('u')\n", "utf-8")
    (root / "logo.bin").write_bytes(b"\x00\x01")
    (root / "big.txt").write_bytes(b"x" * (MAX_MENTION_BYTES + 1))
    (tmp_path / "secret.txt").write_text("TOP SECRET", "utf-8")
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    return root


@pytest.mark.parametrize(
    ("raw", "path", "text", "problem"),
    [
        ("src/u.py", "src/u.py", "print('u')\n", None),
        ("./src/../src/u.py", "src/u.py", "print('u')\n", None),
        ("../secret.txt", "../secret.txt", None, "outside the workspace"),
        ("link.txt", "link.txt", None, "outside the workspace"),
        ("nope.py", "nope.py", None, "missing"),
        ("logo.bin", "logo.bin", None, "binary"),
        ("big.txt", "big.txt", None, f"too big ({MAX_MENTION_BYTES + 1} bytes)"),
        ("src", "src", None, "a folder"),
    ],
)
def test_read_mention(ws: Path, raw: str, path: str, text: str | None, problem: str | None) -> None:
    got = read_mention(ws, EngineConfig(), raw)
    assert (got.path, got.text, got.problem) == (path, text, problem)


def test_an_absolute_path_outside_is_refused(ws: Path, tmp_path: Path) -> None:
    got = read_mention(ws, EngineConfig(), str(tmp_path / "secret.txt"))
    assert got.problem == "outside the workspace" and got.text is None
