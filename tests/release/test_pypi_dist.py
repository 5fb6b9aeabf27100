"""The server as a normal Python package for PyPI: a distribution name that is not the unrelated
``retrace`` project's, user-facing metadata (classifiers, project URLs, a long description written
for PyPI: ``server/README.md``), the ``retrace`` command; ``uv build`` makes an sdist and a wheel
that ``twine check --strict`` accepts, and the wheel installed into a fresh virtual environment
(with the locked dependencies) answers ``retrace --version``."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

import retrace

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
DIST = "retrace-checkpoints"


def test_the_distribution_name_is_not_the_unrelated_retrace_project() -> None:
    assert canonicalize_name(PROJECT["name"]) == DIST
    assert PROJECT["scripts"] == {"retrace": "retrace.cli.main:main"}


def test_metadata_a_pypi_page_needs() -> None:
    classifiers = PROJECT["classifiers"]
    for minor in ("3.11", "3.12", "3.13"):
        assert f"Programming Language :: Python :: {minor}" in classifiers
    assert PROJECT["requires-python"] == ">=3.11"
    assert "Intended Audience :: Developers" in classifiers
    assert not any(c.startswith("License ::") for c in classifiers), "PEP 639: the license is the SPDX field"
    assert PROJECT["license"] == "MIT"
    urls = PROJECT["urls"]
    assert {"Homepage", "Repository", "Issues", "Changelog"} <= set(urls)
    assert all(u.startswith("https://") for u in urls.values())
    assert PROJECT["description"] and PROJECT["keywords"]


def test_the_long_description_is_written_for_pypi() -> None:
    assert PROJECT["readme"] == "server/README.md"
    text = (ROOT / PROJECT["readme"]).read_text("utf-8")
    assert f"install {DIST}" in text
    assert "retrace --version" in text
    # PyPI shows the README on its own: a relative link or image would be broken there.
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    assert all(t.startswith("https://") for t in targets), targets
    assert "](" not in text or targets


def _source_copy(dest: Path) -> Path:
    """What the sdist is built from, copied (a build writes egg-info and build/ beside its input)."""
    for item in ("pyproject.toml", "LICENSE", "server/README.md"):
        (dest / item).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / item, dest / item)
    shutil.copytree(
        ROOT / "server" / "retrace", dest / "server" / "retrace", ignore=shutil.ignore_patterns("__pycache__")
    )
    return dest


def _uv() -> str:
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "fetch-uv.sh")], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.mark.slow
def test_uv_build_makes_an_sdist_and_a_wheel_twine_accepts_and_the_wheel_runs(tmp_path: Path) -> None:
    uv = _uv()
    src = _source_copy(tmp_path / "src")
    out = tmp_path / "dist"
    subprocess.run([uv, "build", "--no-config", "--quiet", "--out-dir", str(out), str(src)], check=True)
    version = retrace.__version__
    wheel = out / f"retrace_checkpoints-{version}-py3-none-any.whl"
    sdist = out / f"retrace_checkpoints-{version}.tar.gz"
    built = sorted(p.name for p in out.iterdir() if p.name.endswith((".whl", ".tar.gz")))
    assert built == sorted([wheel.name, sdist.name])

    twine = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
        check=False,
        capture_output=True,
        text=True,
    )
    assert twine.returncode == 0, twine.stdout + twine.stderr

    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        info = f"retrace_checkpoints-{version}.dist-info"
        meta = Parser().parsestr(z.read(f"{info}/METADATA").decode())
        entry_points = z.read(f"{info}/entry_points.txt").decode()
    assert meta["Name"] == DIST and meta["Version"] == version
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta["License-Expression"] == "MIT"
    assert f"install {DIST}" in str(meta.get_payload())
    assert any(u.startswith("Repository, https://") for u in meta.get_all("Project-URL") or [])
    assert "retrace = retrace.cli.main:main" in entry_points
    assert "retrace/py.typed" in names and any(n.startswith("retrace/offline/scenarios/") for n in names)
    assert not [n for n in names if n.startswith(("tests/", "bench/")) or n.endswith(".pyc")]

    # A fresh environment: the locked dependencies (hash-checked), then the wheel itself.
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "--no-config", "--quiet", "--python", sys.executable, str(venv)], check=True)
    py = venv / "bin" / "python"
    lock = ROOT / "server" / "requirements.lock"
    pip = [uv, "pip", "install", "--no-config", "--quiet", "--python", str(py)]
    subprocess.run([*pip, "--require-hashes", "-r", str(lock)], check=True)
    subprocess.run([*pip, "--no-deps", str(wheel)], check=True)
    subprocess.run([uv, "pip", "check", "--python", str(py)], check=True, capture_output=True)
    ran = subprocess.run(
        [str(venv / "bin" / "retrace"), "--version"],
        check=False,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == f"retrace {version}"

    # A cloud provider's lock on top (what the extension installs for Bedrock / Vertex): it changes
    # nothing already installed, and the server then has the provider's packages.
    missing = "from retrace.agent.model.cloud import missing_extra as m; print(m('bedrock'), m('vertex'))"
    before = subprocess.run([str(py), "-I", "-c", missing], check=True, capture_output=True, text=True)
    assert before.stdout.split() == ["bedrock", "vertex"]
    subprocess.run(
        [*pip, "--require-hashes", "-r", str(ROOT / "server" / "requirements-bedrock.lock")], check=True
    )
    subprocess.run([uv, "pip", "check", "--python", str(py)], check=True, capture_output=True)
    after = subprocess.run([str(py), "-I", "-c", missing], check=True, capture_output=True, text=True)
    assert after.stdout.split() == ["None", "vertex"]
