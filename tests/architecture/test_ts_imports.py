"""The extension's import graph (``extension/src``, TypeScript) stays one-way and acyclic, as the
server's does (``test_import_graph.py``).

Every relative import counts: ``import … from``, ``export … from``, ``import type``, a bare
``import './x'`` and a dynamic ``import('./x')``. The rules:

* no cycle between files;
* no cycle between rooms (a folder, or a file of its own in :data:`LAYERS`: two rooms leaning
  on each other are one room);
* layers only point down (:data:`LAYERS`, bottom to top): the leaves (``constants``, ``logging``,
  ``ui``, ``labels``, ``paths``, the generated wire types ``client/protocol``) → ``settings`` →
  ``client`` (the server process and its environment) → ``ctx`` (the connection every feature
  shares) → ``webview`` (the page scripts and their message types) → ``diff``/``editorState``/
  ``context`` (editor features) → ``views/models`` (what the views show, pure) →
  ``views/providers`` (trees, panels, items: what VS Code calls) → ``commands`` →
  ``extension.ts`` (the composition root);
* a view model is pure: of ``vscode`` it uses only ``vscode.l10n`` and types (so it runs in the
  unit tests' stand-in and never reaches for a window, a command or a tree).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_import_graph import find_cycles

SRC = Path(__file__).resolve().parents[2] / "extension" / "src"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("constants.ts", "logging.ts", "ui.ts", "labels.ts", "paths.ts", "client/protocol.ts"),
    ("settings.ts",),
    ("client/",),
    ("ctx.ts",),
    ("webview/",),
    ("diff/", "editorState/", "context/"),
    ("views/models/",),
    ("views/providers/",),
    ("commands/",),
    ("extension.ts",),
)
"""Bottom to top; an entry ending in ``/`` is a folder (every file under it), else one file.
The first matching entry wins (``client/protocol.ts`` before ``client/``)."""

# Arrows that break a rule and are tolerated while being removed; test_known_violations_are_still_real
# fails on any entry the code no longer has, so the list only shrinks.
KNOWN_VIOLATIONS: frozenset[tuple[str, str]] = frozenset()

IMPORT = re.compile(
    r"""(?:^|\s|;)(?:import|export)\s+(?:type\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?['"](\.{1,2}/[^'"]+)['"]"""
    r"""|\bimport\(\s*['"](\.{1,2}/[^'"]+)['"]\s*\)""",
    re.MULTILINE,
)


def imports_of(text: str) -> list[str]:
    """The relative module specifiers ``text`` imports (comments are not code)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
    text = re.sub(r"(?m)//.*$", "", text)
    return [a or b for a, b in IMPORT.findall(text)]


def resolve(source: str, spec: str, files: set[str]) -> str | None:
    """The file (relative to ``src``) that ``spec`` in ``source`` names; ``None``: outside ``src``."""
    parts: list[str] = source.split("/")[:-1]
    for piece in spec.split("/"):
        if piece == "..":
            if not parts:
                return None
            parts.pop()
        elif piece != ".":
            parts.append(piece)
    base = "/".join(parts)
    for candidate in (base, f"{base}.ts", f"{base}/index.ts"):
        if candidate in files:
            return candidate
    return None


def graph() -> dict[str, set[str]]:
    files = {p.relative_to(SRC).as_posix() for p in SRC.rglob("*.ts")}
    edges: dict[str, set[str]] = {f: set() for f in files}
    for f in files:
        for spec in imports_of((SRC / f).read_text(encoding="utf-8")):
            target = resolve(f, spec, files)
            if target is not None and target != f:
                edges[f].add(target)
    return edges


def place(path: str) -> tuple[int, str]:
    """(layer, room) of a file: the room is the :data:`LAYERS` entry it falls under."""
    for i, entries in enumerate(LAYERS):
        for e in entries:
            if path == e or (e.endswith("/") and path.startswith(e)):
                return i, e
    raise AssertionError(f"{path} is in no layer: add its folder to LAYERS (and ARCHITECTURE.md)")


def level(path: str) -> int:
    return place(path)[0]


def room(path: str) -> str:
    return place(path)[1]


def layer_violations(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(s, t) for s, targets in edges.items() for t in targets if level(t) > level(s)}


def without_known(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    return {s: {t for t in ts if (s, t) not in KNOWN_VIOLATIONS} for s, ts in edges.items()}


def test_the_graph_is_parsed() -> None:
    edges = graph()
    assert len(edges) > 60
    assert "ctx.ts" in edges["extension.ts"]  # import { Ctx } from './ctx'
    assert "client/protocol.ts" in edges["ctx.ts"]  # a multi-line import { … } from
    assert "commands/index.ts" in edges["extension.ts"]  # './commands/index'
    assert "ctx.ts" in edges["commands/index.ts"]  # import type


def test_no_file_cycle() -> None:
    assert find_cycles(graph()) == []


def test_no_room_cycle() -> None:
    rooms: dict[str, set[str]] = {}
    for source, targets in without_known(graph()).items():
        rooms.setdefault(room(source), set()).update(room(t) for t in targets if room(t) != room(source))
    assert find_cycles(rooms) == []


def test_layers_only_point_down() -> None:
    found = sorted(layer_violations(without_known(graph())))
    assert found == [], "upward imports:\n" + "\n".join(f"{s} -> {t}" for s, t in found)


def stale_violations(known: frozenset[tuple[str, str]], edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((s, t) for s, t in known if t not in edges.get(s, set()))


def test_known_violations_are_still_real() -> None:
    """Empty today; the check itself is proven on a planted entry below."""
    assert stale_violations(KNOWN_VIOLATIONS, graph()) == [], "remove from KNOWN_VIOLATIONS"


def test_a_stale_known_violation_is_found() -> None:
    planted = frozenset({("extension.ts", "ctx.ts"), ("logging.ts", "extension.ts")})
    assert stale_violations(planted, graph()) == [("logging.ts", "extension.ts")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("import { a } from './a';", ["./a"]),
        ("import type { A } from '../x/a';", ["../x/a"]),
        ("import {\n  a,\n  b,\n} from './multi';", ["./multi"]),
        ("export { a } from './re';\nexport * from './all';", ["./re", "./all"]),
        ("import './side';", ["./side"]),
        ("const m = await import('./lazy');", ["./lazy"]),
        ("import * as vscode from 'vscode';\nimport { x } from 'node:path';", []),
        ("// import { a } from './commented';\n/* import './block'; */", []),
    ],
)
def test_import_parser(text: str, expected: list[str]) -> None:
    assert imports_of(text) == expected


def test_the_rules_catch_a_planted_violation() -> None:
    """An upward import and a two-file circle, planted in a copy of the real graph, are found."""
    edges = graph()
    edges["client/supervisor.ts"].add("views/providers/statusItem.ts")  # client → views: upward
    assert ("client/supervisor.ts", "views/providers/statusItem.ts") in layer_violations(edges)
    edges["logging.ts"].add("constants.ts")
    edges["constants.ts"].add("logging.ts")
    assert ["constants.ts", "logging.ts"] in find_cycles(edges)
    assert ("diff/hunks.ts", "views/models/timelineLook.ts") in layer_violations(
        {"diff/hunks.ts": {"views/models/timelineLook.ts"}}
    )


def test_a_model_importing_a_provider_is_caught() -> None:
    """``views/models`` sits below ``views/providers``: a model leaning on a provider is upward."""
    edges = graph()
    models = [s for s in edges if s.startswith("views/models/")]
    assert not any(t.startswith("views/providers/") for s in models for t in edges[s])
    edges["views/models/remoteModel.ts"].add("views/providers/statusItem.ts")
    assert ("views/models/remoteModel.ts", "views/providers/statusItem.ts") in layer_violations(edges)
    # and the other way round is the rule's intended direction
    assert ("views/providers/statusItem.ts", "views/models/statusModel.ts") not in layer_violations(edges)


# What a view model may use of ``vscode``: the translator (its types are the providers' business).
VSCODE_USE = re.compile(r"\bvscode\.([A-Za-z_]\w*)")
VSCODE_ALLOWED_IN_MODELS = frozenset({"l10n"})


def vscode_calls(text: str) -> set[str]:
    """The ``vscode.<name>`` a file names outside comments."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
    text = re.sub(r"(?m)//.*$", "", text)
    return {m.group(1) for m in VSCODE_USE.finditer(text)}


def impure_models(src: Path = SRC) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted((src / "views" / "models").rglob("*.ts")):
        bad = vscode_calls(path.read_text(encoding="utf-8")) - VSCODE_ALLOWED_IN_MODELS
        if bad:
            found[path.relative_to(src).as_posix()] = bad
    return found


def test_view_models_use_only_the_translator_of_vscode() -> None:
    """Every model passes; a planted use of the workbench is caught by the same check."""
    assert len(list((SRC / "views" / "models").glob("*.ts"))) > 10
    assert impure_models() == {}, "a view model reaches for VS Code: move that part to views/providers/"


def test_a_planted_impure_model_is_caught(tmp_path: Path) -> None:
    models = tmp_path / "views" / "models"
    models.mkdir(parents=True)
    head = "import * as vscode from 'vscode';\n"
    (models / "pure.ts").write_text(head + "export const a = vscode.l10n.t('a');\n")
    (models / "planted.ts").write_text(head + "void vscode.commands.executeCommand('x');\n")
    assert impure_models(tmp_path) == {"views/models/planted.ts": {"commands"}}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("const a = vscode.l10n.t('x');", set()),
        ("function f(e: vscode.TreeItem): void {}", {"TreeItem"}),
        ("const s = ok ? vscode.l10n.t('a') : vscode.window.activeTextEditor;", {"window"}),
        ("void vscode.commands.executeCommand('x');", {"commands"}),
        ("const i = new vscode.TreeItem('x');", {"TreeItem"}),
        ("// vscode.window.showInformationMessage('x')", set()),
    ],
)
def test_vscode_use_parser(text: str, expected: set[str]) -> None:
    assert vscode_calls(text) - VSCODE_ALLOWED_IN_MODELS == expected
