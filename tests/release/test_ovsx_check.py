"""``scripts/ovsx-check.mjs``: the real ``ovsx publish`` client uploads each package to a loopback
stand-in of the Open VSX publish API that checks what the registry checks. A package Open VSX would
take is accepted; each kind of package it would refuse (no license, no repository, no or a bad
``engines.vscode``, an unknown target platform, a bad name) is refused, naming the reason."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "ovsx-check.mjs"


def _ovsx_available() -> bool:
    """ovsx resolves from the repository (npm install puts it in node_modules)."""
    if shutil.which("node") is None:
        return False
    probe = ["node", "-e", "require.resolve('ovsx/package.json')"]
    return subprocess.run(probe, check=False, cwd=ROOT, capture_output=True).returncode == 0


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not _ovsx_available() and os.environ.get("CI") != "true",
        reason="ovsx is not installed (npm install); CI always runs this",
    ),
]

GOOD: dict[str, Any] = json.loads((ROOT / "package.json").read_text("utf-8"))


def _vsix(
    path: Path, manifest: dict[str, Any], *, target: str | None = "linux-x64", license_file: bool = True
) -> Path:
    platform = f' TargetPlatform="{target}"' if target else ""
    vsixmanifest = (
        '<?xml version="1.0" encoding="utf-8"?><PackageManifest Version="2.0.0"><Metadata>'
        f'<Identity Language="en-US" Id="{manifest.get("name")}" Version="{manifest.get("version")}"'
        f' Publisher="{manifest.get("publisher")}"{platform}/></Metadata></PackageManifest>'
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("extension.vsixmanifest", vsixmanifest)
        z.writestr("extension/package.json", json.dumps(manifest))
        if license_file:
            z.writestr("extension/LICENSE.txt", "MIT License\n")
    return path


def _check(*files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", str(SCRIPT), *map(str, files)],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _without(key: str) -> dict[str, Any]:
    return {k: v for k, v in GOOD.items() if k != key}


def test_the_project_manifest_is_accepted_and_each_refusal_names_its_reason(tmp_path: Path) -> None:
    good = _vsix(tmp_path / "good.vsix", GOOD)
    done = _check(good)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "good.vsix (linux-x64, " in done.stdout and "accepted" in done.stdout

    cases = {
        "no-license": (
            _vsix(tmp_path / "no-license.vsix", _without("license"), license_file=False),
            "no license",
        ),
        "no-repo": (_vsix(tmp_path / "no-repo.vsix", _without("repository")), "Missing field 'repository'"),
        "no-engines": (_vsix(tmp_path / "no-engines.vsix", _without("engines")), "invalid engines.vscode"),
        "bad-engines": (
            _vsix(tmp_path / "bad-engines.vsix", {**GOOD, "engines": {"vscode": "soon"}}),
            "invalid engines.vscode: soon",
        ),
        "bad-target": (_vsix(tmp_path / "bad-target.vsix", GOOD, target="solaris-sparc"), "'solaris-sparc'"),
        "bad-name": (
            _vsix(tmp_path / "bad-name.vsix", {**GOOD, "name": "re trace"}),
            "Invalid name: re trace",
        ),
        "bad-version": (
            _vsix(tmp_path / "bad-version.vsix", {**GOOD, "version": "latest"}),
            "Invalid semantic version",
        ),
    }
    done = _check(*(path for path, _ in cases.values()))
    assert done.returncode == 1, done.stdout + done.stderr
    for name, (_, reason) in cases.items():
        line = next(line for line in done.stdout.splitlines() if line.startswith(f"[ovsx-check] {name}.vsix"))
        assert "REFUSED" in line, line
        assert reason in done.stdout, (name, done.stdout)
    # The license in package.json alone is enough (no LICENSE file in the package).
    only_field = _vsix(tmp_path / "field-only.vsix", GOOD, license_file=False)
    assert _check(only_field).returncode == 0
