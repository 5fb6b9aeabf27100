"""Agent settings (the server fills them from the client's configuration) and model pricing."""

from __future__ import annotations

from pydantic import Field

from retrace.agent.mcp.config import McpSettings
from retrace.agent.permissions import PermissionSettings
from retrace.camel import CamelModel

DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_MAX_TOKENS = 8192
DEFAULT_COMMAND_TIMEOUT_S = 120.0

# USD per million tokens (input, output), by model-name prefix; the first match wins.
_PRICES: tuple[tuple[str, float, float], ...] = (
    ("claude-opus-4-1", 15.0, 75.0),
    ("claude-opus-4-0", 15.0, 75.0),
    ("claude-opus-4", 5.0, 25.0),
    ("claude-haiku", 1.0, 5.0),
    ("claude-3-5-haiku", 0.8, 4.0),
    ("claude", 3.0, 15.0),
)


class AgentSettings(CamelModel):
    model: str = DEFAULT_MODEL
    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, ge=1)
    base_url: str | None = None
    """Messages API endpoint; ``None``: the one the process was configured with (see
    :class:`retrace.bootstrap.ModelEndpoint`), else the SDK default."""
    permissions: PermissionSettings = Field(default_factory=PermissionSettings)
    command_timeout_s: float = Field(default=DEFAULT_COMMAND_TIMEOUT_S, gt=0)
    output_cap_bytes: int = Field(default=30_000, ge=1000)
    max_iterations: int = Field(default=50, ge=1)
    """Model calls per turn before the turn stops with ``max_iterations``."""
    max_retries: int = Field(default=4, ge=0)
    """Retries of a rate-limited / overloaded / failed model call (exponential backoff)."""
    retry_base_delay_s: float = Field(default=1.0, ge=0)
    """First backoff delay; doubled on every retry."""
    mcp: McpSettings = Field(default_factory=McpSettings)
    """MCP servers whose tools the agent offers (none from an untrusted workspace's settings)."""
    max_parallel_tasks: int = Field(default=3, ge=1, le=16)
    """Subagents (``task`` calls of one reply) that work at the same time; the rest wait."""


def cost_usd(model: str, input_tokens: int, output_tokens: int) -> float:
    for prefix, price_in, price_out in _PRICES:
        if model.startswith(prefix):
            return (input_tokens * price_in + output_tokens * price_out) / 1_000_000
    return (input_tokens * 3.0 + output_tokens * 15.0) / 1_000_000
