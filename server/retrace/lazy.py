"""Package names that load their module on first use (PEP 562), so that importing a package
(``retrace.engine`` for a store path, ``retrace.sync`` for a type) does not import every room in
it: the command line's start-up is part of every agent tool call."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_attributes(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``homes`` maps each public name to the module
    that defines it; the value is imported on first access and kept in the package's namespace."""
    namespace = import_module(package).__dict__

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(home), name)
        namespace[name] = value
        return value

    return getattr_
