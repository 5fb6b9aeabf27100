"""Retrace: an AI coding agent whose every tool call ends in a checkpoint."""

from importlib.metadata import PackageNotFoundError, version


def _installed_version() -> str:
    """The version of the installed distribution (pyproject's ``version``, which the release
    process keeps equal to the extension's): the one number the ``initialize`` handshake compares.
    A source tree that was never installed has none, and says so."""
    try:
        return version("retrace")
    except PackageNotFoundError:
        return "0+unknown"


__version__ = _installed_version()
