"""Tests reach the engine through its public interface only.

A test that reads ``eng._head`` or calls ``engine._entries_at`` pins an internal layout: every
move of that internal breaks tests that say nothing about behaviour. Every test module is parsed
(``ast``, so comments and strings do not count) and any attribute access with a leading
underscore (dunders excepted) on an engine-named receiver (``eng``, ``engine``, ``self.engine``,
``old_eng``, ``engine2`` ...) fails this test.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ENGINE_NAME = re.compile(r"(?:^|_)(?:eng|engine)(?:$|_|\d)", re.IGNORECASE)


def _receiver_name(node: ast.expr) -> str | None:
    """The name an attribute is read from: ``eng`` in ``eng._x``, ``engine`` in ``self.engine._x``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):  # ``Engine.open(ws)._head``
        return _receiver_name(node.func.value)
    return None


def private_engine_accesses(source: str) -> list[tuple[int, str]]:
    """``(line, "receiver._attr")`` for each private attribute read off an engine-named receiver."""
    hits: list[tuple[int, int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        attr = node.attr
        if not attr.startswith("_") or (attr.startswith("__") and attr.endswith("__")):
            continue
        name = _receiver_name(node.value)
        if name is not None and (ENGINE_NAME.search(name)):
            hits.append((node.lineno, node.col_offset, f"{name}.{attr}"))
    return [(line, hit) for line, _, hit in sorted(hits)]


def test_checker_catches_private_engine_access() -> None:
    sample = (
        "eng._head['a']\n"
        "x = engine._entries_at(c, p)\n"
        "self.engine._capture.walks\n"
        "old_eng._manifest_at(c)\n"
        "Engine.open(ws)._head\n"
        "# eng._in_a_comment\n"
        "s = 'eng._in_a_string'\n"
        "eng.__class__\n"
        "engine.head_manifest\n"
        "agent._private\n"
    )
    assert [h for _, h in private_engine_accesses(sample)] == [
        "eng._head",
        "engine._entries_at",
        "engine._capture",
        "old_eng._manifest_at",
        "Engine._head",
    ]


def test_tests_use_public_engine_interfaces_only() -> None:
    offenders = [
        f"{path.relative_to(TESTS.parent)}:{line}: {hit}"
        for path in sorted(TESTS.rglob("*.py"))
        if path.resolve() != Path(__file__).resolve()
        for line, hit in private_engine_accesses(path.read_text("utf-8"))
    ]
    assert not offenders, "tests reach into Engine privates (add a public accessor):\n" + "\n".join(offenders)
