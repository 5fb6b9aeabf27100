"""Downloads the locked server dependencies as wheels for one VS Code target, so a platform .vsix
installs them on first use with no index access (``uv pip install --no-index --find-links``).

    python scripts/bundle_wheels.py --target linux-x64 --out DIR [--lock server/requirements.lock]
                                    [--pythons 3.11,3.12,3.13,3.14] [--cache CACHE]

Contracts:
- The set is the lock's, with each pin's environment marker evaluated for the TARGET (not for the
  build machine: ``pip download --platform`` would judge ``sys_platform == 'win32'`` on Linux),
  once per bundled Python version; the union is downloaded.
- Every file is hash-checked against the lock (``pip download --require-hashes``, the hashes come
  from the lock), binary wheels only (``--only-binary :all:``), from the build machine's index
  (its pip configuration and ``PIP_INDEX_URL`` are honoured). Anything missing for a target and
  Python fails the build, naming it: a .vsix never ships a partial set.
- Writes ``DIR/bundle-wheels.json``: target, Python versions, file names with their sha256.
- With ``--uv UV``, the set is then proven complete the way a user's machine will use it: for each
  bundled Python, ``uv pip install --dry-run --no-index --find-links DIR --require-hashes -r LOCK``
  resolved for the target (``--python-platform``, ``--python-version``), with no index.
- With ``--cache CACHE``, a set proven complete is kept there under a key (the lock's sha256, the
  target, the Python versions); the next build with the same key takes its files from there
  instead of running pip again (each package build downloaded ~50 MB and spent ~18 CPU-seconds
  in pip; the install test builds two). The taken files pass the same hash check and, with
  ``--uv``, the same completeness proof; a reused set that fails it is downloaded again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker

DEFAULT_PYTHONS = ("3.11", "3.12", "3.13", "3.14")


@dataclass(frozen=True)
class TargetPlatform:
    """What a VS Code target is, for wheel tags and environment markers."""

    tags: tuple[str, ...]
    sys_platform: str
    platform_system: str
    os_name: str
    machine: str
    uv_platform: str  # uv's --python-platform for this target


def _manylinux(arch: str) -> tuple[str, ...]:
    modern = [f"manylinux_2_{minor}_{arch}" for minor in (28, 27, 26, 25, 24, 17)]
    legacy = [
        f"manylinux2014_{arch}",
        f"manylinux_2_12_{arch}",
        f"manylinux2010_{arch}",
        f"manylinux_2_5_{arch}",
    ]
    return (*modern, *legacy, f"manylinux1_{arch}")


def _macos(arch: str, oldest: int) -> tuple[str, ...]:
    versions = [f"{major}_0" for major in range(15, 10, -1)] + [f"10_{minor}" for minor in range(15, 8, -1)]
    out: list[str] = []
    for v in versions:
        if int(v.split("_")[0]) == 10 and int(v.split("_")[1]) < oldest:
            continue
        out += [f"macosx_{v}_{arch}", f"macosx_{v}_universal2"]
    return tuple(out)


TARGETS: dict[str, TargetPlatform] = {
    "linux-x64": TargetPlatform(
        _manylinux("x86_64"), "linux", "Linux", "posix", "x86_64", "x86_64-manylinux_2_28"
    ),
    "linux-arm64": TargetPlatform(
        _manylinux("aarch64"), "linux", "Linux", "posix", "aarch64", "aarch64-manylinux_2_28"
    ),
    "alpine-x64": TargetPlatform(
        ("musllinux_1_2_x86_64", "musllinux_1_1_x86_64"),
        "linux",
        "Linux",
        "posix",
        "x86_64",
        "x86_64-unknown-linux-musl",
    ),
    "alpine-arm64": TargetPlatform(
        ("musllinux_1_2_aarch64", "musllinux_1_1_aarch64"),
        "linux",
        "Linux",
        "posix",
        "aarch64",
        "aarch64-unknown-linux-musl",
    ),
    "darwin-x64": TargetPlatform(
        _macos("x86_64", 9), "darwin", "Darwin", "posix", "x86_64", "x86_64-apple-darwin"
    ),
    "darwin-arm64": TargetPlatform(
        _macos("arm64", 16), "darwin", "Darwin", "posix", "arm64", "aarch64-apple-darwin"
    ),
    "win32-x64": TargetPlatform(("win_amd64",), "win32", "Windows", "nt", "AMD64", "x86_64-pc-windows-msvc"),
    "win32-arm64": TargetPlatform(
        ("win_arm64",), "win32", "Windows", "nt", "ARM64", "aarch64-pc-windows-msvc"
    ),
}


@dataclass(frozen=True)
class LockedPin:
    name: str
    version: str
    marker: str | None
    hashes: tuple[str, ...]


_PIN = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)==(?P<version>[^\s;\\]+)\s*(?:;\s*(?P<marker>[^\\]+?))?\s*\\?$")
_HASH = re.compile(r"--hash=(sha256:[0-9a-f]{64})")


def read_lock(text: str) -> list[LockedPin]:
    """The pins of a ``uv pip compile --generate-hashes`` lock; a pin without a hash is an error."""
    pins: list[LockedPin] = []
    head: re.Match[str] | None = None
    hashes: list[str] = []

    def flush() -> None:
        if head is None:
            return
        if not hashes:
            raise ValueError(f"{head['name']} has no --hash in the lock")
        pins.append(LockedPin(head["name"], head["version"], head["marker"], tuple(hashes)))

    for raw in text.splitlines():
        match = _PIN.match(raw)
        if match or not raw.startswith(" "):
            flush()
            head, hashes = match, []
        else:
            hashes += _HASH.findall(raw)
    flush()
    return pins


def marker_environment(target: str, python: str) -> dict[str, str]:
    t = TARGETS[target]
    return {
        "implementation_name": "cpython",
        "implementation_version": f"{python}.0",
        "os_name": t.os_name,
        "platform_machine": t.machine,
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": t.platform_system,
        "platform_version": "",
        "python_full_version": f"{python}.0",
        "python_version": python,
        "sys_platform": t.sys_platform,
    }


def pins_for(pins: list[LockedPin], target: str, python: str) -> list[LockedPin]:
    """The pins a machine of ``target`` running CPython ``python`` installs."""
    env = marker_environment(target, python)
    return [p for p in pins if p.marker is None or Marker(p.marker).evaluate(env)]


def requirements_text(pins: list[LockedPin]) -> str:
    return "".join(f"{p.name}=={p.version} " + " ".join(f"--hash={h}" for h in p.hashes) + "\n" for p in pins)


def _download(pins: list[LockedPin], target: str, python: str, out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text(requirements_text(pins), encoding="utf-8")
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps"]
        cmd += ["--only-binary", ":all:", "--implementation", "cp", "--python-version", python]
        for tag in TARGETS[target].tags:
            cmd += ["--platform", tag]
        cmd += ["--require-hashes", "-r", str(req), "-d", str(out)]
        # The build machine's pip configuration stays (its index, proxy); a constraints file of
        # its own would fight the lock's pins.
        env = {k: v for k, v in os.environ.items() if k != "PIP_CONSTRAINT"}
        env["PIP_CONSTRAINT"] = ""
        done = subprocess.run(cmd, env=env, check=False)
        if done.returncode != 0:
            raise SystemExit(
                f"bundle_wheels: no complete wheel set for {target} / CPython {python} (see above)"
            )


def cache_key(target: str, lock: Path, pythons: tuple[str, ...]) -> str:
    """What a kept set was built from: the lock's bytes, the target and the Python versions."""
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    return json.dumps({"lock": digest, "target": target, "pythons": list(pythons)}, sort_keys=True)


def _reuse(cache: Path | None, key: str, out: Path) -> bool:
    """Copy the kept set for ``key`` into ``out``; ``False`` (nothing copied) when none is kept."""
    if cache is None or not (cache / "key.json").is_file():
        return False
    if (cache / "key.json").read_text(encoding="utf-8") != key:
        return False
    for wheel in sorted(cache.glob("*.whl")):
        shutil.copyfile(wheel, out / wheel.name)
    return True


def keep(cache: Path, key: str, out: Path) -> None:
    """Keep the (proven) set in ``out`` for the next build with ``key``; the key is written last,
    so an interrupted copy is never taken for a whole one."""
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    for wheel in sorted(out.glob("*.whl")):
        shutil.copyfile(wheel, cache / wheel.name)
    (cache / "key.json").write_text(key, encoding="utf-8")


def bundle(
    target: str, lock: Path, out: Path, pythons: tuple[str, ...], cache: Path | None = None
) -> dict[str, object]:
    """Download (or, from ``cache``, take) the set into ``out``, hash-check every file against
    the lock and write the manifest; the manifest says whether the set was ``reused``."""
    if target not in TARGETS:
        raise SystemExit(
            f"bundle_wheels: no wheel platform for target {target!r}; known: {', '.join(TARGETS)}"
        )
    pins = read_lock(lock.read_text(encoding="utf-8"))
    out.mkdir(parents=True, exist_ok=True)
    reused = _reuse(cache, cache_key(target, lock, pythons), out)
    if not reused:
        for python in pythons:
            _download(pins_for(pins, target, python), target, python, out)
    allowed = {h.removeprefix("sha256:") for p in pins for h in p.hashes}
    files = {}
    for wheel in sorted(out.glob("*.whl")):
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest not in allowed:
            raise SystemExit(f"bundle_wheels: {wheel.name} has sha256 {digest}, which the lock does not pin")
        files[wheel.name] = digest
    manifest: dict[str, object] = {"target": target, "pythons": list(pythons), "files": files}
    (out / "bundle-wheels.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return {**manifest, "reused": reused}


def verify(uv: str, target: str, wheels: Path, lock: Path, pythons: tuple[str, ...]) -> None:
    """Every bundled Python of ``target`` installs the lock from ``wheels`` alone, or SystemExit naming
    what is missing (uv resolves for the target platform; nothing is installed or downloaded)."""
    for python in pythons:
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [uv, "pip", "install", "--dry-run", "--quiet", "--no-config", "--target", tmp]
            cmd += ["--python-platform", TARGETS[target].uv_platform, "--python-version", python]
            cmd += ["--no-index", "--find-links", str(wheels), "--require-hashes", "-r", str(lock)]
            done = subprocess.run(cmd, check=False, capture_output=True, text=True)
        if done.returncode != 0:
            reason = (done.stderr or done.stdout).strip()
            raise SystemExit(
                f"bundle_wheels: the {target} bundle cannot install for CPython {python}: {reason}"
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument(
        "--lock", type=Path, default=Path(__file__).resolve().parents[1] / "server/requirements.lock"
    )
    parser.add_argument("--pythons", default=",".join(DEFAULT_PYTHONS))
    parser.add_argument("--uv", help="prove the bundle complete with this uv (offline dry-run install)")
    parser.add_argument("--cache", type=Path, help="keep a proven set here and take it from here next time")
    args = parser.parse_args(argv)
    pythons = tuple(v.strip() for v in args.pythons.split(",") if v.strip())
    manifest = bundle(args.target, args.lock, args.out, pythons, args.cache)
    if args.uv:
        try:
            verify(args.uv, args.target, args.out, args.lock, pythons)
        except SystemExit:
            if not manifest["reused"]:
                raise
            print("bundle_wheels: the kept set is not complete; downloading it again", file=sys.stderr)
            shutil.rmtree(args.out)
            manifest = bundle(args.target, args.lock, args.out, pythons)
            verify(args.uv, args.target, args.out, args.lock, pythons)
        if args.cache and not manifest["reused"]:
            keep(args.cache, cache_key(args.target, args.lock, pythons), args.out)
    files = manifest["files"]
    assert isinstance(files, dict)
    size = sum((args.out / name).stat().st_size for name in files)
    print(f"{len(files)} wheels for {args.target}, CPython {', '.join(pythons)}: {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
