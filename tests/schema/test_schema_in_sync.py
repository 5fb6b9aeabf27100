"""shared-schema/ must be exactly what the server's protocol models generate (npm run schema)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from retrace.protocol.export import build
from retrace.protocol.methods import METHODS

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT / "shared-schema"
REGENERATE = "npm run schema"


def _generate(out: Path) -> None:
    subprocess.run([sys.executable, "-m", "retrace.protocol.export", "--out", str(out)], check=True)
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    subprocess.run(["node", str(ROOT / "scripts" / "gen-ts.mjs"), "--dir", str(out)], check=True, cwd=ROOT)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One generation (a Python process and a node one) for every test of this module that only
    reads what it wrote."""
    out = tmp_path_factory.mktemp("generated")
    _generate(out)
    return out


@pytest.mark.parametrize(
    "name", ["protocol.schema.json", "methods.json", "generated/protocol.ts"], ids=lambda n: n
)
def test_committed_file_matches_generated(generated: Path, name: str) -> None:
    committed = (SHARED / name).read_text("utf-8")
    assert committed == (generated / name).read_text("utf-8"), (
        f"shared-schema/{name} is stale; regenerate with: {REGENERATE}"
    )


def test_generation_writes_exactly_the_committed_files(generated: Path) -> None:
    """No generated file left uncommitted and no committed one the generator no longer writes
    (this test is CI's drift check: scripts/check-schema.sh does the same by hand)."""

    def files(root: Path) -> set[str]:
        return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}

    assert files(generated) == files(SHARED) - {"README.md"}, f"regenerate with: {REGENERATE}"


def test_generation_is_deterministic(generated: Path, tmp_path: Path) -> None:
    _generate(tmp_path / "again")
    for name in ("protocol.schema.json", "methods.json", "generated/protocol.ts"):
        assert (generated / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name


def test_schema_is_valid_json_schema_and_every_ref_resolves() -> None:
    protocol, table = build()
    jsonschema.Draft202012Validator.check_schema(protocol)
    defs = protocol["$defs"]
    text = json.dumps(protocol)
    for ref in {part.split('"')[0] for part in text.split('"$ref": "#/$defs/')[1:]}:
        assert ref in defs, f"dangling $ref {ref}"
    for row in table:
        for key in ("params", "result"):
            if row[key] is not None:
                assert row[key].removeprefix("#/$defs/") in defs, (row["name"], key)


def test_method_names_are_unique_and_namespaced() -> None:
    names = [m.name for m in METHODS]
    keys = [m.key for m in METHODS]
    assert len(set(names)) == len(names)
    assert len(set(keys)) == len(keys)
    assert all(name.startswith("retrace/") for name in names)


def test_readme_method_table_lists_every_method() -> None:
    readme = (SHARED / "README.md").read_text("utf-8")
    rows = {
        line.split("|")[1].strip().strip("`")
        for line in readme.splitlines()
        if line.startswith("| `retrace/")
    }
    assert rows == {m.name for m in METHODS}, "shared-schema/README.md method table is out of date"


def test_tagged_unions_are_discriminated_on_kind() -> None:
    protocol, _ = build()
    for name in ("AgentEventPayload", "RestoreOutcomePayload"):
        union = protocol["$defs"][name]
        assert union["discriminator"]["propertyName"] == "kind"
        for variant in union["oneOf"]:
            target = protocol["$defs"][variant["$ref"].removeprefix("#/$defs/")]
            assert "kind" in target["required"], (name, variant)


def _exported_names(ts: str) -> list[str]:
    names = []
    for line in ts.splitlines():
        for prefix in ("export interface ", "export type "):
            if line.startswith(prefix):
                names.append(line[len(prefix) :].split(" ", 1)[0].split("<", 1)[0])
    return names


def test_generated_ts_names_each_def_once(generated: Path) -> None:
    """A property that is a ``$ref`` with its own description must reuse the named interface.

    json-schema-to-typescript turns a ``$ref`` with sibling keys into a new copy of the target
    (``Checkpoint1``, ``Checkpoint2``...); the generator must emit exactly one interface per
    ``$def`` and never a numbered duplicate of one.
    """
    protocol = json.loads((generated / "protocol.schema.json").read_text("utf-8"))
    defs = set(protocol["$defs"])
    names = _exported_names((generated / "generated" / "protocol.ts").read_text("utf-8"))
    assert len(names) == len(set(names)), "a name is exported twice"
    copies = [n for n in names if n not in defs and n.rstrip("0123456789") in defs]
    assert copies == [], f"numbered copies of $defs: {copies}"


def test_generator_keeps_one_interface_for_a_described_ref(tmp_path: Path) -> None:
    """The class, not the example: any ``$ref`` with siblings (description, title, default)."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    thing = {
        "type": "object",
        "title": "Thing",
        "additionalProperties": False,
        "properties": {"id": {"type": "string", "title": "Id"}},
        "required": ["id"],
    }
    holder = {
        "type": "object",
        "title": "Holder",
        "additionalProperties": False,
        "properties": {
            "a": {"$ref": "#/$defs/Thing", "description": "The first."},
            "b": {"$ref": "#/$defs/Thing", "title": "B", "default": None},
            "c": {"anyOf": [{"$ref": "#/$defs/Thing", "description": "Maybe."}, {"type": "null"}]},
        },
        "required": ["a", "b", "c"],
    }
    (tmp_path / "generated").mkdir()
    (tmp_path / "protocol.schema.json").write_text(
        json.dumps({"$defs": {"Thing": thing, "Holder": holder}}), "utf-8"
    )
    (tmp_path / "methods.json").write_text(json.dumps({"methods": []}), "utf-8")
    subprocess.run(
        ["node", str(ROOT / "scripts" / "gen-ts.mjs"), "--dir", str(tmp_path)], check=True, cwd=ROOT
    )
    ts = (tmp_path / "generated" / "protocol.ts").read_text("utf-8")
    names = _exported_names(ts)
    assert names.count("Thing") == 1 and names.count("Holder") == 1, ts
    assert not [n for n in names if re.fullmatch(r"Thing\d+", n)], ts
    assert "a: Thing;" in ts and "b: Thing;" in ts and "c: Thing | null;" in ts, ts
    assert "The first." in ts, "the property's own description is kept"
