"""Journal event types are named in ONE place: the journal package (``retrace/engine/store``,
``events.py``'s models). Everywhere else a reader branches on the typed event (``isinstance``,
``match``) or, for the few line-level readers that keep lines as bytes, on the model a raw line
claims (``model_of(raw) is CheckpointEvent``) — never on the ``"type"`` string.

The checker parses every server module (``ast``: comments and docstrings do not count) and
reports each comparison or membership test in which one side is a journal type name (a string
constant, or a tuple/list/set of them) and the other reads ``"type"`` off something
(``x.get("type")``, ``x["type"]``) or is a name assigned from such a read. Content blocks of
the Messages API (``"text"``, ``"tool_use"``…) also carry ``type``; they are not journal types,
so they do not count. It also reports string sets of journal type names handed to a reader
(``skip={"checkpoint"}``: readers filter by model), module constants made of journal type names
only, dictionaries keyed by several of them (a dispatch table) in a module that reads ``"type"``,
and any use of ``KNOWN_TYPES``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from retrace.engine.store.events import KNOWN_TYPES

SERVER = Path(__file__).resolve().parents[2] / "server" / "retrace"
JOURNAL_PACKAGE = SERVER / "engine" / "store"


def _is_type_read(node: ast.expr) -> bool:
    """``x.get("type")`` or ``x["type"]``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        first = node.args[0] if node.args else None
        return isinstance(first, ast.Constant) and first.value == "type"
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, ast.Constant) and key.value == "type"
    return False


def _journal_names(node: ast.expr) -> set[str]:
    """The journal type names a constant (or a tuple/list/set/frozenset of constants) holds."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value} & KNOWN_TYPES
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return set().union(*(_journal_names(e) for e in node.elts)) if node.elts else set()
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("frozenset", "set")
    ):
        return set().union(*(_journal_names(a) for a in node.args)) if node.args else set()
    return set()


def _only_journal_names(node: ast.expr) -> bool:
    """A collection constant made of journal type names only (``("checkpoint", "task")``)."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("frozenset", "set")
    ):
        return len(node.args) == 1 and _only_journal_names(node.args[0])
    if not isinstance(node, ast.Tuple | ast.List | ast.Set) or not node.elts:
        return False
    return all(isinstance(e, ast.Constant) and e.value in KNOWN_TYPES for e in node.elts)


def _type_holders(nodes: list[ast.AST]) -> set[str]:
    """Names assigned from a ``"type"`` read anywhere in the module (``kind = ev.get("type")``)."""
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Assign) and _is_type_read(node.value):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.NamedExpr) and _is_type_read(node.value):
            out.add(node.target.id)
    return out


def _type_sets(nodes: list[ast.AST]) -> dict[str, set[str]]:
    """Names bound to journal type names (``NEEDED = frozenset({"checkpoint", ...})``)."""
    out: dict[str, set[str]] = {}
    for node in nodes:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        names = _journal_names(value) if value is not None else set()
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        for t in targets:
            if names and isinstance(t, ast.Name):
                out[t.id] = names
    return out


def journal_type_branches(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` for each branch on a journal event's type string in ``source``."""
    tree = ast.parse(source)
    nodes = list(ast.walk(tree))
    holders = _type_holders(nodes)
    sets = _type_sets(nodes)
    reads_type = bool(holders) or any(isinstance(n, ast.expr) and _is_type_read(n) for n in nodes)

    def named(side: ast.expr) -> set[str]:
        return _journal_names(side) or (sets.get(side.id, set()) if isinstance(side, ast.Name) else set())

    hits: list[tuple[int, str]] = [
        (node.lineno, f"names journal types {sorted(_journal_names(node.value))} in a constant")
        for node in getattr(tree, "body", [])
        if isinstance(node, ast.Assign) and _only_journal_names(node.value)
    ]
    for node in nodes:
        if isinstance(node, ast.Name) and node.id == "KNOWN_TYPES":
            hits.append((node.lineno, "uses the journal's type names (KNOWN_TYPES)"))
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            reads = any(_is_type_read(s) or (isinstance(s, ast.Name) and s.id in holders) for s in sides)
            names = set().union(*(named(s) for s in sides))
            if reads and names:
                hits.append((node.lineno, f"compares a type string with {sorted(names)}"))
        elif isinstance(node, ast.keyword) and node.arg in ("skip", "only"):
            names = named(node.value)
            if names:
                hits.append((node.value.lineno, f"filters a reader by type strings {sorted(names)}"))
        elif isinstance(node, ast.Dict) and reads_type:
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and k.value in KNOWN_TYPES}
            if len(keys) >= 2:
                hits.append((node.lineno, f"dispatches on type strings {sorted(keys)}"))
    return sorted(hits)


def test_checker_finds_each_form_and_leaves_content_blocks_alone() -> None:
    sample = (
        'if ev.get("type") == "checkpoint": pass\n'
        'if raw["type"] in ("turn", "turnEnd"): pass\n'
        'kind = event.get("type")\n'
        'if kind == "restoreIntent": pass\n'
        'if "task" != e.get("type"): pass\n'
        'xs = list(engine.events(sid, skip={"checkpoint"}))\n'
        'if (k := e.get("type")) is None or k == "usage": pass\n'
        'if block.get("type") == "tool_use": pass\n'  # a Messages API content block
        'if b["type"] == "text": pass\n'
        "if isinstance(ev, TurnEvent): pass\n"
        "label = f\"{ev.get('type')} event\"\n"
    )
    assert [line for line, _ in journal_type_branches(sample)] == [1, 2, 4, 5, 6, 7]


def test_no_module_outside_the_journal_package_branches_on_a_journal_type_string() -> None:
    found: list[str] = []
    for path in sorted(SERVER.rglob("*.py")):
        if path.is_relative_to(JOURNAL_PACKAGE):
            continue
        for line, what in journal_type_branches(path.read_text("utf-8")):
            found.append(f"{path.relative_to(SERVER.parent)}:{line}: {what}")
    assert not found, "branch on the typed event (isinstance/match) or model_of(raw):\n" + "\n".join(found)
