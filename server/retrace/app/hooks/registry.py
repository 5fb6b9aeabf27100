"""The external agents Retrace records through their hooks: one line per adapter."""

from __future__ import annotations

from retrace.app.hooks import claude_code, gemini_cli
from retrace.app.hooks.adapter import AgentAdapter
from retrace.app.hooks.install import AgentInstall, SettingsShapeError
from retrace.app.hooks.model import HookInputError

ADAPTERS: dict[str, AgentAdapter] = {
    claude_code.ADAPTER.name: claude_code.ADAPTER,
    gemini_cli.ADAPTER.name: gemini_cli.ADAPTER,
}


def adapter_for(name: str) -> AgentAdapter:
    """The adapter of agent ``name``; :class:`HookInputError` naming the known ones otherwise."""
    adapter = ADAPTERS.get(name)
    if adapter is None:
        known = ", ".join(sorted(ADAPTERS))
        raise HookInputError(f"unknown agent {name[:64]!r} (known: {known})")
    return adapter


INSTALLS: dict[str, AgentInstall] = {name: adapter.install for name, adapter in ADAPTERS.items()}
"""Every agent ``retrace integrate`` can install Retrace's hooks into, by adapter name."""


def install_for(agent: str) -> AgentInstall:
    """Agent ``agent``'s install row; :class:`SettingsShapeError` naming the known ones otherwise."""
    spec = INSTALLS.get(agent)
    if spec is None:
        raise SettingsShapeError(f"unknown agent {agent!r} (expected one of {', '.join(INSTALLS)})")
    return spec
