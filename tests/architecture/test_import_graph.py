"""The import graph of ``server/retrace`` stays one-way and acyclic.

Every module is parsed (``ast``), and every import counts: top level, under ``TYPE_CHECKING``
and inside functions — a type-only import that forces a function-local import is still a
dependency. The rules:

* no cycle between modules (a package ``__init__`` counts as a module);
* layers only point down (:data:`FORBIDDEN`), bottom to top: ``text``/``camel``/``relay`` (the
  command line's socket to a running server: standard library and ``text`` only) → ``engine`` →
  ``sync`` (beside ``agent``: neither imports the other) → ``agent`` → ``protocol`` → ``app`` →
  ``offline`` → ``bootstrap`` → ``lsp`` → ``cli``; ``mcp_server`` (``retrace mcp``, an edge beside
  ``lsp``: the engine, the application services, the protocol models and the relay client) is
  imported by ``cli`` only;
* the fake Messages API (``retrace.offline``) is imported by nobody in production except the
  composition root ``retrace.bootstrap`` (the offline demo) and the ``fake-model`` subcommand's
  entry, which serves it and nothing else.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2] / "server"
PACKAGE = "retrace"

# Arrows that break a rule and are tolerated while being removed; left out of every check.
# Empty: keep it that way. test_known_violations_are_still_real fails on any entry the code no
# longer has, so a fixed violation cannot linger here.
KNOWN_VIOLATIONS: frozenset[tuple[str, str]] = frozenset()

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "text": (
        "camel",
        "engine",
        "sync",
        "agent",
        "protocol",
        "app",
        "offline",
        "bootstrap",
        "lsp",
        "mcp_server",
        "cli",
    ),
    "camel": (
        "text",
        "engine",
        "sync",
        "agent",
        "protocol",
        "app",
        "offline",
        "bootstrap",
        "lsp",
        "mcp_server",
        "cli",
    ),
    "engine": ("sync", "agent", "protocol", "app", "offline", "bootstrap", "lsp", "mcp_server", "cli"),
    "sync": ("agent", "protocol", "app", "offline", "bootstrap", "lsp", "mcp_server", "cli"),
    "agent": ("sync", "protocol", "app", "offline", "bootstrap", "lsp", "mcp_server", "cli"),
    "protocol": ("app", "offline", "bootstrap", "lsp", "mcp_server", "cli"),
    "app": ("offline", "bootstrap", "lsp", "mcp_server", "cli"),
    "offline": ("sync", "app", "bootstrap", "lsp", "mcp_server", "cli"),
    "bootstrap": ("lsp", "mcp_server", "cli"),
    "lsp": ("mcp_server", "cli"),
    "mcp_server": ("offline", "bootstrap", "lsp", "cli"),
    "relay": (
        "camel",
        "engine",
        "sync",
        "agent",
        "protocol",
        "app",
        "offline",
        "bootstrap",
        "lsp",
        "mcp_server",
        "cli",
    ),
}
"""Per layer (``retrace.<layer>``), the layers it must not import: every arrow points down."""
OFFLINE_IMPORTERS = frozenset({"retrace.bootstrap", "retrace.cli.commands"})
PROTOCOL_SYNC_IMPORTS = frozenset({"retrace.sync.models"})
"""``protocol`` may name the remote-sync models and nothing else of ``sync``."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((ROOT / PACKAGE).rglob("*.py"))}


def imported_names(module: str, path: Path) -> Iterator[str]:
    """Every ``retrace`` module named by an import anywhere in the file (absolute form)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def graph() -> dict[str, set[str]]:
    """The import graph without the tolerated :data:`KNOWN_VIOLATIONS`."""
    return {
        source: targets - {t for s, t in KNOWN_VIOLATIONS if s == source}
        for source, targets in raw_graph().items()
    }


def raw_graph() -> dict[str, set[str]]:
    """The import graph of the package as the source files say (a fresh copy each call: tests
    plant edges in theirs)."""
    return {source: set(targets) for source, targets in _parsed_graph().items()}


@functools.cache
def _parsed_graph() -> dict[str, frozenset[str]]:
    """Parsed once per test process: every test of this file reads the same source tree, and a
    parse of every module costs about a CPU-second."""
    modules = all_modules()
    edges: dict[str, frozenset[str]] = {}
    for name, path in modules.items():
        targets = set()
        for imported in imported_names(name, path):
            # ``from retrace.engine import Engine`` names a module or an attribute of one: keep
            # the longest prefix that is a module.
            parts = imported.split(".")
            while parts and ".".join(parts) not in modules:
                parts.pop()
            target = ".".join(parts)
            if target and target != name and target.startswith(PACKAGE):
                targets.add(target)
        edges[name] = frozenset(targets)
    return edges


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return cycles


def test_the_graph_is_parsed() -> None:
    edges = raw_graph()
    assert len(edges) > 50
    assert "retrace.engine.engine" in edges["retrace.engine"]  # package re-export seen
    assert "retrace.engine.gate" in edges["retrace.agent.runtime"]  # top-level import
    assert "retrace.lsp.server" in edges["retrace.lsp.host"]  # under TYPE_CHECKING
    assert "retrace.lsp.main" in edges["retrace.cli.commands"]  # inside a function


def test_no_import_cycle() -> None:
    cycles = find_cycles(graph())
    assert cycles == [], f"import cycles: {cycles}"


def test_no_cycle_between_layers() -> None:
    """Whole packages too: ``agent`` using ``offline`` while ``offline`` uses ``agent`` is a
    circle even when no two modules import each other."""
    layers: dict[str, set[str]] = {}
    for source, targets in graph().items():
        layers.setdefault(layer(source), set()).update(layer(t) for t in targets if layer(t) != layer(source))
    assert find_cycles(layers) == []


def rooms_below_layers(edges: dict[str, set[str]], packages: set[str]) -> dict[str, set[str]]:
    """The graph one level below the layers: a module inside a sub-package of a layer
    (``retrace.lsp.services.restore``) counts as that sub-package (``retrace.lsp.services``); a
    module directly in a layer (``retrace.lsp.server``) counts as itself."""

    def room(module: str) -> str:
        parts = module.split(".")
        sub = ".".join(parts[:3])
        return sub if len(parts) >= 3 and sub in packages else module

    rooms: dict[str, set[str]] = {}
    for source, targets in edges.items():
        rooms.setdefault(room(source), set()).update(room(t) for t in targets if room(t) != room(source))
    return rooms


def packages_of(edges: dict[str, set[str]]) -> set[str]:
    return {m for m in edges if (ROOT / m.replace(".", "/")).is_dir()}


def test_no_cycle_between_sub_packages() -> None:
    """A sub-package and the modules beside it lean one way: ``lsp/services`` is below
    ``lsp/server.py`` (it sees the server through ``services/port.py``), ``agent/subagents`` below
    ``agent/loop.py`` (the loop's ``run_turn`` is handed in). Such a circle is invisible to the
    module rule when no two modules import each other directly."""
    edges = graph()
    assert find_cycles(rooms_below_layers(edges, packages_of(edges))) == []


def test_sub_package_rule_catches_a_planted_circle() -> None:
    edges = {k: set(v) for k, v in graph().items()}
    edges["retrace.lsp.services.restore"].add("retrace.lsp.server")  # a service importing the server back
    cycles = find_cycles(rooms_below_layers(edges, packages_of(edges)))
    assert any({"retrace.lsp.services", "retrace.lsp.server"} <= set(c) for c in cycles), cycles


def layer_violations(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    found = set()
    for source, targets in edges.items():
        forbidden = FORBIDDEN.get(layer(source), ())
        for target in targets:
            if layer(target) in forbidden:
                found.add((source, target))
    return found


def test_layers_only_point_down() -> None:
    found = layer_violations(graph())
    unexpected = sorted(found)
    assert unexpected == [], "upward imports:\n" + "\n".join(f"{s} -> {t}" for s, t in unexpected)


def stale_violations(known: frozenset[tuple[str, str]], edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The entries of ``known`` that ``edges`` no longer has."""
    return sorted((s, t) for s, t in known if t not in edges.get(s, set()))


def test_known_violations_are_still_real() -> None:
    """An entry the code no longer has must be deleted, so the list only shrinks (the list is
    empty today: the check is proven on a planted entry below)."""
    assert stale_violations(KNOWN_VIOLATIONS, raw_graph()) == [], "remove from KNOWN_VIOLATIONS"


def test_a_stale_known_violation_is_found() -> None:
    edges = raw_graph()
    real = ("retrace.agent.runtime", "retrace.engine.gate")
    planted = frozenset({real, ("retrace.engine.gate", "retrace.cli.main")})
    assert stale_violations(planted, edges) == [("retrace.engine.gate", "retrace.cli.main")]


def test_only_the_composition_root_imports_the_fake_model() -> None:
    edges = graph()
    importers = sorted(
        source
        for source, targets in edges.items()
        if layer(source) != "offline" and any(layer(t) == "offline" for t in targets)
    )
    assert set(importers) <= OFFLINE_IMPORTERS, f"production imports of retrace.offline: {importers}"


def test_protocol_uses_only_the_sync_models() -> None:
    found = sorted(
        (source, target)
        for source, targets in graph().items()
        if layer(source) == "protocol"
        for target in targets
        if layer(target) == "sync" and target not in PROTOCOL_SYNC_IMPORTS
    )
    assert found == [], f"protocol may import only retrace.sync.models: {found}"


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ],
)
def test_cycle_finder_finds_cycles(edges: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert find_cycles(edges) == expected


def test_layer_rule_catches_an_upward_import() -> None:
    assert layer_violations({"retrace.engine.x": {"retrace.agent.loop"}}) == {
        ("retrace.engine.x", "retrace.agent.loop")
    }
    assert layer_violations({"retrace.agent.x": {"retrace.engine.engine"}}) == set()


MODEL_ENV = frozenset({"ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "RETRACE_FAKE_MODEL"})


def environment_reads(path: Path) -> list[str]:
    """``os.environ.get("X")`` / ``os.getenv("X")`` / ``os.environ["X"]`` of a model variable."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names = {  # module constants: ENV_KEY = "ANTHROPIC_API_KEY"
        target.id: stmt.value.value
        for stmt in tree.body
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant)
        for target in stmt.targets
        if isinstance(target, ast.Name)
    }
    for node in ast.walk(tree):
        key: ast.expr | None = None
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("get", "getenv"):
                key = node.args[0]
        elif isinstance(node, ast.Subscript) and getattr(node.value, "attr", "") == "environ":
            key = node.slice
        value = key.value if isinstance(key, ast.Constant) else None
        if isinstance(key, ast.Name):
            value = names.get(key.id)
        if value in MODEL_ENV:
            found.append(f"{path.name}:{node.lineno} {value}")
    return found


def test_the_model_endpoint_is_read_from_the_environment_in_one_place() -> None:
    readers = {name: reads for name, path in all_modules().items() if (reads := environment_reads(path))}
    assert set(readers) == {"retrace.bootstrap"}, readers
