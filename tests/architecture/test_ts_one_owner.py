"""One owner per concept in the extension (``extension/src``), as on the server.

* Wire names: every JSON-RPC method the extension sends, answers or listens to is named through
  the generated table (``METHODS`` in ``client/protocol.ts``, generated into
  ``shared-schema/generated/protocol.ts``), never as a string literal of its own: a renamed method
  then fails to compile instead of failing at run time.
* Workspace paths: "this file relative to that folder" is ``paths.ts`` (``relativeTo``,
  ``fileInFolders``); VS Code's ``asRelativePath`` and Node's ``path.relative`` are not used
  beside it (they differ from the server's rule on case, separators and ``..``).

Comments are not code: a docstring naming ``retrace/stats`` is fine.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "extension" / "src"
GENERATED = ROOT / "shared-schema" / "generated" / "protocol.ts"

PATH_OWNER = "paths.ts"
WIRE_OWNER = "client/protocol.ts"
OTHER_PATH_RULES = re.compile(r"\basRelativePath\s*\(|\b(?:path|posix|win32)\.relative\s*\(")


def code_of(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
    return re.sub(r"(?m)(^|[^:'\"`])//.*$", r"\1", text)


def wire_methods(generated: str) -> set[str]:
    """The method strings of the generated ``METHODS`` table."""
    table = re.search(r"export const METHODS = \{(.*?)\n\}", generated, flags=re.DOTALL)
    assert table is not None, "no METHODS table in the generated protocol"
    return set(re.findall(r":\s*'([^']+)'", table.group(1)))


def wire_literals(text: str, methods: set[str]) -> set[str]:
    """The wire method names ``text`` spells as string literals."""
    quoted = set(re.findall(r"""['"`]([^'"`\n]+)['"`]""", code_of(text)))
    return quoted & methods


def sources(src: Path) -> dict[str, str]:
    return {p.relative_to(src).as_posix(): p.read_text(encoding="utf-8") for p in sorted(src.rglob("*.ts"))}


def raw_wire_names(src: Path, methods: set[str]) -> dict[str, set[str]]:
    return {
        f: found
        for f, text in sources(src).items()
        if f != WIRE_OWNER and (found := wire_literals(text, methods))
    }


def other_path_rules(src: Path) -> list[str]:
    return [
        f for f, text in sources(src).items() if f != PATH_OWNER and OTHER_PATH_RULES.search(code_of(text))
    ]


def test_the_generated_table_is_read() -> None:
    methods = wire_methods(GENERATED.read_text(encoding="utf-8"))
    assert {"retrace/stats", "retrace/timeline/tree", "retrace/agent/event"} <= methods
    assert len(methods) > 40


def test_every_wire_name_comes_from_the_generated_table() -> None:
    methods = wire_methods(GENERATED.read_text(encoding="utf-8"))
    assert raw_wire_names(SRC, methods) == {}, "use METHODS.<name> from client/protocol.ts"


def test_one_path_rule() -> None:
    assert other_path_rules(SRC) == [], "use relativeTo / fileInFolders from paths.ts"


def test_planted_violations_are_found(tmp_path: Path) -> None:
    (tmp_path / "views").mkdir()
    (tmp_path / "client").mkdir()
    (tmp_path / "client" / "protocol.ts").write_text("export const X = 'retrace/stats';\n")
    (tmp_path / "paths.ts").write_text("export const r = (a: string, b: string) => path.relative(a, b);\n")
    (tmp_path / "views" / "ok.ts").write_text(
        "// asks retrace/stats: comments are fine\nconst a = rpc.request(METHODS.stats, {});\n"
    )
    (tmp_path / "views" / "raw.ts").write_text("const a = rpc.request('retrace/stats', {});\n")
    (tmp_path / "views" / "rel.ts").write_text("const p = vscode.workspace.asRelativePath(uri, false);\n")
    (tmp_path / "views" / "node.ts").write_text("const p = path.relative(root, file);\n")
    assert raw_wire_names(tmp_path, {"retrace/stats"}) == {"views/raw.ts": {"retrace/stats"}}
    assert other_path_rules(tmp_path) == ["views/node.ts", "views/rel.ts"]
