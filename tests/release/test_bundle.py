"""What a platform .vsix bundles so the first use needs no index: the locked wheels for its target
(``scripts/bundle_wheels.py``: markers judged for the target, not the build machine; every file
hash-checked against the lock) and a hash-pinned ``uv`` (``scripts/fetch-uv.sh`` against
``scripts/uv-requirements.lock``; a cached binary that no longer matches is refused)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "server" / "requirements.lock"


def _load_bundler() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bundle_wheels", ROOT / "scripts" / "bundle_wheels.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bundle_wheels"] = module
    spec.loader.exec_module(module)
    return module


bw = _load_bundler()


def _names(target: str, python: str) -> set[str]:
    return {p.name for p in bw.pins_for(bw.read_lock(LOCK.read_text("utf-8")), target, python)}


@pytest.mark.parametrize("target", ["win32-x64", "win32-arm64"])
def test_a_windows_bundle_holds_the_windows_only_pins_even_when_built_on_linux(target: str) -> None:
    assert "pywin32" in _names(target, "3.12")


@pytest.mark.parametrize("target", ["linux-x64", "linux-arm64", "alpine-x64", "darwin-arm64", "darwin-x64"])
def test_other_bundles_leave_windows_and_browser_only_pins_out(target: str) -> None:
    names = _names(target, "3.12")
    assert "pywin32" not in names
    assert "httpx2-jsfetch" not in names  # emscripten only
    assert {"pydantic-core", "zstandard", "pygls"} <= names


def test_every_lock_pin_without_a_marker_is_bundled_for_every_target_and_python() -> None:
    pins = bw.read_lock(LOCK.read_text("utf-8"))
    plain = {p.name for p in pins if p.marker is None}
    for target in bw.TARGETS:
        for python in bw.DEFAULT_PYTHONS:
            assert plain <= _names(target, python)


def test_the_lock_reader_refuses_a_pin_without_a_hash_and_keeps_every_hash() -> None:
    with pytest.raises(ValueError, match="bar has no --hash"):
        bw.read_lock("foo==1.0 \\\n    --hash=sha256:" + "a" * 64 + "\nbar==2.0\n    # via foo\n")
    pins = bw.read_lock(LOCK.read_text("utf-8"))
    text = LOCK.read_text("utf-8")
    assert sum(len(p.hashes) for p in pins) == text.count("--hash=sha256:")
    assert len(pins) == len(re.findall(r"^[a-z0-9]", text, re.M))


def test_requirements_text_carries_the_hashes_so_pip_checks_every_file() -> None:
    pin = bw.LockedPin("foo", "1.0", None, ("sha256:" + "a" * 64, "sha256:" + "b" * 64))
    assert bw.requirements_text([pin]) == f"foo==1.0 --hash=sha256:{'a' * 64} --hash=sha256:{'b' * 64}\n"


def test_bundle_targets_match_the_uv_targets() -> None:
    script = (ROOT / "scripts" / "fetch-uv.sh").read_text("utf-8")
    uv_targets = set(re.findall(r"^\s+([a-z0-9]+-[a-z0-9]+)\) plat=", script, re.M))
    assert uv_targets == set(bw.TARGETS)


def test_an_unknown_target_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no wheel platform for target 'solaris-sparc'"):
        bw.bundle("solaris-sparc", LOCK, tmp_path, ("3.12",))


def test_uv_is_pinned_by_hash_for_every_platform() -> None:
    text = (ROOT / "scripts" / "uv-requirements.lock").read_text("utf-8")
    pins = bw.read_lock(text)
    assert [p.name for p in pins] == ["uv"]
    assert len(pins[0].hashes) >= 8  # one wheel per platform fetch-uv.sh knows, at least


def _cached_uv(tmp_path: Path, content: bytes, recorded: bytes) -> tuple[Path, dict[str, str]]:
    version = bw.read_lock((ROOT / "scripts" / "uv-requirements.lock").read_text("utf-8"))[0].version
    cache = tmp_path / "uvdir"
    target = cache / version / "linux-x64"
    target.mkdir(parents=True)
    (target / "uv").write_bytes(content)
    (target / "uv").chmod(0o755)
    import hashlib

    (target / "uv.sha256").write_text(hashlib.sha256(recorded).hexdigest() + "\n")
    env = {**os.environ, "RETRACE_UV_DIR": str(cache), "PIP_INDEX_URL": "http://127.0.0.1:9/simple"}
    return target / "uv", env


def test_a_cached_uv_that_no_longer_matches_its_recorded_hash_is_refused(tmp_path: Path) -> None:
    uv, env = _cached_uv(tmp_path, b"#!/bin/sh\necho tampered\n", b"the binary that was checked")
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "fetch-uv.sh"), "linux-x64"],
        check=False,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert "does not match the sha256" in done.stderr and str(uv) in done.stderr
    assert done.stdout == ""


def test_a_cached_uv_that_matches_is_used_without_a_download(tmp_path: Path) -> None:
    body = b"#!/bin/sh\necho ok\n"
    uv, env = _cached_uv(tmp_path, body, body)
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "fetch-uv.sh"), "linux-x64"],
        check=False,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(uv)


def _host_uv() -> str:
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "fetch-uv.sh")], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.mark.parametrize("target", ["linux-x64", "win32-x64", "darwin-arm64"])
def test_an_incomplete_bundle_is_refused_at_build_time_naming_what_is_missing(
    tmp_path: Path, target: str
) -> None:
    # The build's completeness proof: uv resolves the lock for the target from the bundle alone.
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    with pytest.raises(
        SystemExit, match=rf"the {target} bundle cannot install for CPython 3\.12: .*No solution found"
    ):
        bw.verify(_host_uv(), target, wheels, LOCK, ("3.12",))


def test_every_target_names_a_platform_uv_can_resolve_for() -> None:
    uv = _host_uv()
    help_text = subprocess.run(
        [uv, "pip", "install", "--help"], check=True, capture_output=True, text=True
    ).stdout
    flat = " ".join(help_text.split())
    for target, platform in bw.TARGETS.items():
        assert f" {platform.uv_platform}," in flat, (target, platform.uv_platform)


def _fake_lock(tmp_path: Path, wheel: bytes) -> Path:
    digest = hashlib.sha256(wheel).hexdigest()
    lock = tmp_path / "requirements.lock"
    lock.write_text(f"demo==1.0 \\\n    --hash=sha256:{digest}\n", "utf-8")
    return lock


def test_a_kept_set_is_taken_again_for_the_same_lock_and_only_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = b"PK fake wheel"
    lock = _fake_lock(tmp_path, wheel)
    downloads: list[str] = []

    def download(pins: list[Any], target: str, python: str, out: Path) -> None:
        downloads.append(python)
        (out / "demo-1.0-py3-none-any.whl").write_bytes(wheel)

    monkeypatch.setattr(bw, "_download", download)
    cache = tmp_path / "cache"
    first = bw.bundle("linux-x64", lock, tmp_path / "one", ("3.12",), cache)
    assert first["reused"] is False and downloads == ["3.12"]
    bw.keep(cache, bw.cache_key("linux-x64", lock, ("3.12",)), tmp_path / "one")
    again = bw.bundle("linux-x64", lock, tmp_path / "two", ("3.12",), cache)
    assert again["reused"] is True and downloads == ["3.12"], "the kept set was downloaded again"
    assert again["files"] == first["files"]
    # Another Python, or another lock: the kept set is not theirs.
    bw.bundle("linux-x64", lock, tmp_path / "three", ("3.12", "3.13"), cache)
    assert downloads == ["3.12", "3.12", "3.13"]
    lock.write_text(lock.read_text("utf-8") + "\n", "utf-8")
    assert bw.bundle("linux-x64", lock, tmp_path / "four", ("3.12",), cache)["reused"] is False


def test_a_kept_file_the_lock_does_not_pin_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = _fake_lock(tmp_path, b"PK the pinned wheel")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "demo-1.0-py3-none-any.whl").write_bytes(b"PK something else")
    (cache / "key.json").write_text(bw.cache_key("linux-x64", lock, ("3.12",)), "utf-8")
    monkeypatch.setattr(bw, "_download", lambda *a: pytest.fail("downloaded"))
    with pytest.raises(SystemExit, match="which the lock does not pin"):
        bw.bundle("linux-x64", lock, tmp_path / "out", ("3.12",), cache)
