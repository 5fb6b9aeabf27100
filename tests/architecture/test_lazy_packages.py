"""Packages whose names load on first use (``retrace/lazy.py``, PEP 562) give the same objects as
their home modules, whatever was imported before: a submodule named like one of the package's
names (``app/timeline/describe.py`` and its ``describe``) takes that name in the package once it
is imported, so such a name must be bound eagerly. Every name of every lazy package is checked
after all of the package's modules are imported."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

import retrace

SERVER = Path(retrace.__file__).parent


def lazy_packages() -> list[str]:
    return sorted(
        ".".join(init.relative_to(SERVER.parent).parent.parts)
        for init in SERVER.rglob("__init__.py")
        if "lazy_attributes(" in init.read_text("utf-8")
    )


def test_the_lazy_packages_are_found() -> None:
    assert {"retrace.engine", "retrace.sync", "retrace.app.timeline"} <= set(lazy_packages())


@pytest.mark.parametrize("name", lazy_packages())
def test_every_name_of_a_lazy_package_is_its_home_modules_object(name: str) -> None:
    package = importlib.import_module(name)
    modules = [
        importlib.import_module(info.name) for info in pkgutil.iter_modules(package.__path__, f"{name}.")
    ]
    for public in package.__all__:
        value = getattr(package, public)
        assert not isinstance(value, type(package)), f"{name}.{public} is a module, not the name it exports"
        homes = [m for m in modules if getattr(m, public, None) is value]
        assert homes, f"{name}.{public} is no module's {public}"
