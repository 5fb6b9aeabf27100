"""Retrace: an AI coding agent whose every tool call ends in a checkpoint."""

__version__ = "0.1.0"
"""The one version number the ``initialize`` handshake compares: pyproject's ``version`` (which
the release process keeps equal to the extension's). A constant, not a package-metadata look-up:
``importlib.metadata`` costs tens of milliseconds on every ``retrace`` call, and every agent tool
call may run one. ``tests/lsp/test_version_handshake.py`` pins it to pyproject, package.json and
the installed distribution's metadata."""
