"""The hash-pinned server lock (``server/requirements.lock``) matches ``pyproject.toml``: every
dependency is pinned to a version its specifier admits, with hashes; nothing stale is pinned as a
direct dependency; and the environment these tests run in holds exactly the locked versions (so
CI tests the set a user's managed environment installs). Regenerate with ``scripts/lock.sh``."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "server" / "requirements.lock"
PIN = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)==(?P<version>[^\s;\\]+)\s*(?:;\s*(?P<marker>[^\\]+?))?\s*\\?$")


@dataclass
class Pin:
    version: Version
    marker: Marker | None
    hashes: int = 0
    via: list[str] = field(default_factory=list)


def read_lock(text: str) -> dict[str, Pin]:
    pins: dict[str, Pin] = {}
    current: Pin | None = None
    for raw in text.splitlines():
        line = raw.strip()
        match = PIN.match(raw)
        if match:
            marker = match["marker"]
            current = Pin(Version(match["version"]), Marker(marker) if marker else None)
            pins[canonicalize_name(match["name"])] = current
        elif line.startswith("--hash=sha256:") and current is not None:
            current.hashes += 1
        elif line.startswith("#") and current is not None:
            via = line.lstrip("#").strip()
            if via and via != "via":
                current.via.append(via.removeprefix("via ").strip())
    return pins


def direct_via() -> str:
    """How uv names a direct dependency in the lock: ``<distribution name> (pyproject.toml)``."""
    name = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]
    return f"{name} (pyproject.toml)"


def project_requirements() -> list[Requirement]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return [Requirement(r) for r in data["project"]["dependencies"]]


def test_every_pin_has_hashes_and_the_parser_sees_the_whole_file() -> None:
    text = LOCK.read_text(encoding="utf-8")
    pins = read_lock(text)
    pinned_lines = sum(1 for line in text.splitlines() if "==" in line and not line.lstrip().startswith("#"))
    assert len(pins) == pinned_lines > 10
    assert all(pin.hashes >= 1 for pin in pins.values()), [n for n, p in pins.items() if not p.hashes]


def test_every_dependency_is_pinned_within_its_specifier() -> None:
    pins = read_lock(LOCK.read_text(encoding="utf-8"))
    for req in project_requirements():
        pin = pins.get(canonicalize_name(req.name))
        assert pin is not None, f"{req.name} is in pyproject.toml but not in the lock: run scripts/lock.sh"
        assert req.specifier.contains(pin.version, prereleases=True), f"{req} vs locked {pin.version}"
        assert direct_via() in pin.via, f"{req.name} is not locked as a direct dependency"


def test_nothing_stale_is_locked_as_a_direct_dependency() -> None:
    pins = read_lock(LOCK.read_text(encoding="utf-8"))
    wanted = {canonicalize_name(r.name) for r in project_requirements()}
    direct = {name for name, pin in pins.items() if direct_via() in pin.via}
    assert direct == wanted


def test_the_test_environment_holds_the_locked_versions() -> None:
    for name, pin in read_lock(LOCK.read_text(encoding="utf-8")).items():
        if pin.marker is not None and not pin.marker.evaluate():
            continue
        installed = Version(metadata.version(name))
        assert installed == pin.version, f"{name}: installed {installed}, locked {pin.version}"


def test_the_parser_catches_a_missing_hash_and_a_stale_pin() -> None:
    broken = (
        "foo==1.0 \\\n    # via retrace (pyproject.toml)\n"
        "bar==2.0 ; sys_platform == 'win32' \\\n    --hash=sha256:ab\n"
    )
    pins = read_lock(broken)
    assert pins["foo"].hashes == 0 and pins["foo"].via == ["retrace (pyproject.toml)"]
    assert pins["bar"].hashes == 1 and pins["bar"].marker is not None
