"""The cloud providers' locks (``server/requirements-<extra>.lock``, written by scripts/lock.sh)
match ``pyproject.toml`` and the main lock: one per extra (``dev`` aside), each extra's
requirements pinned within their specifiers as direct dependencies, every pin hashed; every pin of
``requirements.lock`` at the same version (so installing an extra into the extension's environment
changes nothing already there), both extras agreeing on what they share (one environment can hold
both); and the test environment holds the locked versions. Regenerate with ``scripts/lock.sh``."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from tests.serverlock.test_lock import LOCK, ROOT, direct_via, read_lock


def extras() -> dict[str, list[Requirement]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    return {name: [Requirement(r) for r in reqs] for name, reqs in data.items() if name != "dev"}


def lock_of(extra: str) -> Path:
    return ROOT / "server" / f"requirements-{extra}.lock"


EXTRAS = sorted(extras())


def test_one_lock_per_extra_and_none_stale() -> None:
    assert EXTRAS == ["bedrock", "vertex"]
    assert sorted(p.name for p in (ROOT / "server").glob("requirements-*.lock")) == [
        lock_of(e).name for e in EXTRAS
    ], "run scripts/lock.sh"


@pytest.mark.parametrize("extra", EXTRAS)
def test_the_extra_is_pinned_within_its_specifiers_with_hashes(extra: str) -> None:
    text = lock_of(extra).read_text(encoding="utf-8")
    pins = read_lock(text)
    assert len(pins) == sum(
        1 for line in text.splitlines() if "==" in line and not line.lstrip().startswith("#")
    )
    assert all(pin.hashes >= 1 for pin in pins.values()), [n for n, p in pins.items() if not p.hashes]
    for req in extras()[extra]:
        pin = pins.get(canonicalize_name(req.name))
        assert pin is not None, f"{req.name} ([{extra}]) is not in {lock_of(extra).name}: run scripts/lock.sh"
        assert req.specifier.contains(pin.version, prereleases=True), f"{req} vs locked {pin.version}"
        assert direct_via() in pin.via, f"{req.name} is not locked as a direct dependency of [{extra}]"
    direct = {name for name, pin in pins.items() if direct_via() in pin.via}
    main = read_lock(LOCK.read_text(encoding="utf-8"))
    main_direct = {name for name, pin in main.items() if direct_via() in pin.via}
    assert direct - main_direct == {canonicalize_name(r.name) for r in extras()[extra]}, "stale direct pins"


@pytest.mark.parametrize("extra", EXTRAS)
def test_the_extra_lock_holds_the_main_lock_unchanged(extra: str) -> None:
    main = read_lock(LOCK.read_text(encoding="utf-8"))
    pins = read_lock(lock_of(extra).read_text(encoding="utf-8"))
    changed = {
        n: (str(p.version), str(pins[n].version))
        for n, p in main.items()
        if n in pins and pins[n].version != p.version
    }
    assert not changed, f"installing [{extra}] would change {changed}: run scripts/lock.sh"
    assert set(main) <= set(pins), f"missing from [{extra}]: {set(main) - set(pins)}"


def test_both_extras_agree_on_what_they_share() -> None:
    a, b = (read_lock(lock_of(e).read_text(encoding="utf-8")) for e in EXTRAS)
    assert {n for n in a.keys() & b.keys() if a[n].version != b[n].version} == set()


@pytest.mark.parametrize("extra", EXTRAS)
def test_the_test_environment_holds_the_extras_locked_versions(extra: str) -> None:
    for name, pin in read_lock(lock_of(extra).read_text(encoding="utf-8")).items():
        if pin.marker is not None and not pin.marker.evaluate():
            continue
        installed = Version(metadata.version(name))
        assert installed == pin.version, f"{name}: installed {installed}, locked {pin.version} ([{extra}])"
