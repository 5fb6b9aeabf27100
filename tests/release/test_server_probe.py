"""The extension's probe (serverEnv.ts ``PROBE_SCRIPT``) runs before every server start, with the
interpreter the server will run on. It must answer "can this Python run this server, and which
version is it?" without importing the server: that import (pygls, lsprotocol, pydantic, …) cost
about 1.3 CPU-seconds and a second of wall time on every window's start, and the server then
did it all again. Real interpreters, real package metadata on a real file system."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from tests.release.probe_support import ROOT, probe_script

import retrace

HEAVY = ("pygls", "lsprotocol", "pydantic", "anthropic", "openai", "mcp", "cryptography")


def run(driver_prefix: str) -> dict[str, object]:
    driver = f"{driver_prefix}\nexec({probe_script()!r}, {{}})\n"
    out = subprocess.run(
        [sys.executable, "-I", "-c", driver], capture_output=True, text=True, timeout=120, check=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_in_the_servers_own_environment_the_probe_says_its_version_and_imports_none_of_it() -> None:
    result = run("import sys")
    assert result.get("retrace") == retrace.__version__ and "error" not in result, result
    report = f"print(json.dumps({{'loaded': [m for m in {HEAVY!r} if m in sys.modules]}}))"
    loaded = run(f"import atexit, json, sys\natexit.register(lambda: {report})")
    assert loaded == {"loaded": []}, "the probe imported the server's dependencies"


def dist_info(name: str) -> Path:
    files = metadata.distribution(name).files or []
    record = next(f for f in files if f.name == "METADATA")
    return Path(str(record.locate())).parent


def test_a_missing_dependency_is_named_and_no_version_is_claimed(tmp_path: Path) -> None:
    """A site folder holding the server's source and the metadata of all its dependencies but two:
    the probe names both (not only the first an import would hit) and reports no version, so the
    extension refuses that Python instead of starting a server that cannot import."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "retrace").symlink_to(ROOT / "server" / "retrace", target_is_directory=True)
    own = dist_info("retrace-checkpoints")
    shutil.copytree(own, site / own.name)
    absent = {"pydantic", "anthropic"}
    for requirement in metadata.requires("retrace-checkpoints") or []:
        name = requirement.split(";")[0].split("[")[0]
        for sep in "<>=!~ ":
            name = name.split(sep)[0]
        if ";" in requirement or name in absent:
            continue
        info = dist_info(name)
        shutil.copytree(info, site / info.name)
    result = run(
        f"import sys\nsys.path = [p for p in sys.path if 'site-packages' not in p] + [{str(site)!r}]"
    )
    assert "retrace" not in result, result
    error = str(result.get("error"))
    assert "pydantic" in error and "anthropic" in error, error
    assert "pygls" not in error, error
