"""shared-schema/ must be exactly what the server's protocol models generate (npm run schema)."""

from __future__ import annotations

import json
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


@pytest.mark.parametrize(
    "name", ["protocol.schema.json", "methods.json", "generated/protocol.ts"], ids=lambda n: n
)
def test_committed_file_matches_generated(tmp_path: Path, name: str) -> None:
    _generate(tmp_path)
    committed = (SHARED / name).read_text("utf-8")
    generated = (tmp_path / name).read_text("utf-8")
    assert committed == generated, f"shared-schema/{name} is stale; regenerate with: {REGENERATE}"


def test_generation_is_deterministic(tmp_path: Path) -> None:
    _generate(tmp_path / "a")
    _generate(tmp_path / "b")
    for name in ("protocol.schema.json", "methods.json", "generated/protocol.ts"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


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
