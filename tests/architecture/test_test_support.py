"""The tests' own support has one owner per concept, and imports by package path.

* **One definition of each shared oracle** (``tests/oracles.py``: what is on disk under a
  folder), of the sample-workspace factory (``tests/workspaces.py``'s ``project``) and of the CLI
  helper class (``tests/cli/cli_support.py``'s ``Cli``; the campaigns'
  ``CampaignCli`` extends it). A second top-level ``def file_bytes`` (or ``class Cli``) anywhere
  under ``tests/`` or ``bench/`` fails: import the shared one, or add a variant to
  ``tests/oracles.py`` named for what it observes.
* **No ``sys.path`` edits.** pytest puts the repository root on the path (``pythonpath`` in
  pyproject) and ``bench`` runs as ``python -m bench.<name>`` from the root, so support modules
  are imported as ``tests.lsp.lsp_support``, ``tests.e2e.seed_long``: one module object per file.
  A script run directly (``python tests/e2e/seed_health.py``) already has its own folder first.
  ``bench/startup.py`` is the one exception (it runs ANOTHER checkout's server, ``--server DIR``).

Both checks are shown failing on planted violations below, so they can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED: dict[str, str] = {
    "file_bytes": "tests/oracles.py",
    "entries": "tests/oracles.py",
    "entry_hashes": "tests/oracles.py",
    "entries_and_modes": "tests/oracles.py",
    "inodes": "tests/oracles.py",
    "Cli": "tests/cli/cli_support.py",
    "project": "tests/workspaces.py",
}
"""Each shared test helper name → the one file that may define it at module level."""

PATH_EDITS_ALLOWED: dict[str, str] = {
    "bench/startup.py": "measures another checkout's server (--server DIR): its folder goes first",
}


def _sources(root: Path) -> list[Path]:
    return sorted(
        p for top in ("tests", "bench") for p in (root / top).rglob("*.py") if ".venv" not in p.parts
    )


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def second_definitions(root: Path) -> list[str]:
    """``file: name`` for every module-level definition of a shared name outside its owner."""
    found = []
    for path in _sources(root):
        rel = _rel(path, root)
        for node in ast.parse(path.read_text("utf-8"), rel).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                owner = SHARED.get(node.name)
                if owner is not None and owner != rel:
                    found.append(f"{rel}: {node.name} (the shared one lives in {owner})")
    return found


def _is_sys_path(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "path"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


def sys_path_edits(root: Path) -> list[str]:
    """``file:line`` of every ``sys.path.<method>(...)`` call or ``sys.path[...] =`` / ``sys.path =``."""
    found = []
    for path in _sources(root):
        rel = _rel(path, root)
        if rel in PATH_EDITS_ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"), rel)):
            edit = (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and _is_sys_path(node.func.value)
            ) or (
                isinstance(node, ast.Assign | ast.AugAssign)
                and any(
                    _is_sys_path(t) or (isinstance(t, ast.Subscript) and _is_sys_path(t.value))
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                )
            )
            if edit:
                found.append(f"{rel}:{getattr(node, 'lineno', 0)}")
    return found


def test_each_shared_test_helper_is_defined_once() -> None:
    assert second_definitions(ROOT) == []


def test_no_test_or_benchmark_edits_sys_path() -> None:
    assert sys_path_edits(ROOT) == []


def test_every_allowed_path_edit_is_still_there() -> None:
    for rel in PATH_EDITS_ALLOWED:
        text = (ROOT / rel).read_text("utf-8")
        assert "sys.path" in text, f"{rel} no longer edits sys.path: drop it from PATH_EDITS_ALLOWED"


def _plant(tmp_path: Path, rel: str, text: str) -> Path:
    for top in ("tests", "bench"):
        (tmp_path / top).mkdir(parents=True, exist_ok=True)
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")
    return tmp_path


@pytest.mark.parametrize(
    "text",
    [
        "def file_bytes(root):\n    return {}\n",
        "async def entries(root):\n    return {}\n",
        "class Cli:\n    pass\n",
    ],
)
def test_a_planted_second_definition_fails(tmp_path: Path, text: str) -> None:
    root = _plant(tmp_path, "tests/lsp/test_planted.py", text)
    assert len(second_definitions(root)) == 1
    # The owner itself may define it; a method of that name in a class is not a second oracle.
    owner = _plant(tmp_path / "owner", "tests/oracles.py", "def file_bytes(root):\n    return {}\n")
    assert second_definitions(owner) == []
    method = _plant(
        tmp_path / "method", "tests/x.py", "class A:\n    def entries(self):\n        return {}\n"
    )
    assert second_definitions(method) == []


@pytest.mark.parametrize(
    "text",
    [
        "import sys\nsys.path.insert(0, 'x')\n",
        "import sys\nsys.path.append('x')\n",
        "import sys\nsys.path[:0] = ['x']\n",
        "import sys\nsys.path += ['x']\n",
        "import sys\ndef f():\n    sys.path.insert(0, 'x')\n",
    ],
)
def test_a_planted_sys_path_edit_fails(tmp_path: Path, text: str) -> None:
    assert len(sys_path_edits(_plant(tmp_path, "tests/relay/conftest.py", text))) == 1
    assert len(sys_path_edits(_plant(tmp_path / "b", "bench/new_bench.py", text))) == 1
    assert sys_path_edits(_plant(tmp_path / "ok", "tests/x.py", "import sys\nprint(sys.path[0])\n")) == []
