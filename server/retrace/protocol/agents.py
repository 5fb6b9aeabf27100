"""Other agents on the wire (``retrace/agents/integrate``): writing or removing Retrace's hook
entries in Claude Code's or Gemini CLI's project settings. The same result is what
``retrace integrate <agent> --json`` prints; :mod:`retrace.app.hooks.settings_file` decides."""

from __future__ import annotations

from typing import Literal

from retrace.camel import CamelModel

IntegratedAgent = Literal["claude-code", "gemini-cli"]
"""The agents Retrace can install its hooks into (``app.hooks.registry.INSTALLS``)."""

IntegrateAction = Literal["added", "updated", "removed", "unchanged"]
"""``added``: the file had no Retrace entry (created when absent); ``updated``: Retrace's entries
were replaced (another interpreter, another shape) or the agent's hook switch was set;
``removed``: ``remove`` took Retrace's entries out (and deleted the file when nothing else was
left); ``unchanged``: nothing was written."""


class AgentIntegrateParams(CamelModel):
    agent: IntegratedAgent
    remove: bool = False
    """Take Retrace's entries out instead of writing them."""


class AgentIntegrateResult(CamelModel):
    agent: IntegratedAgent
    title: str
    """The agent's display name (``Claude Code``)."""
    file: str
    """Absolute path of the settings file."""
    action: IntegrateAction
    events: list[str]
    """The hook events Retrace listens to in that agent."""
    command: str
    """The hook command Retrace writes (the interpreter, ``-m retrace hook <agent>``)."""
    notes: list[str]
    """Things the user should know (the agent's hook switch is off, the hook is disabled by name)."""
