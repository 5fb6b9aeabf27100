"""Agent settings (the server fills them from the client's configuration) and context windows
(prices: :mod:`retrace.agent.model.pricing`)."""

from __future__ import annotations

from pydantic import Field

from retrace.agent.mcp.config import McpSettings
from retrace.agent.model.settings import DEFAULT_MODEL, ModelSettings
from retrace.agent.permissions import PermissionSettings
from retrace.camel import CamelModel

__all__ = ["DEFAULT_MODEL", "AgentSettings", "ContextOptions", "context_window"]
DEFAULT_MAX_TOKENS = 8192
DEFAULT_COMMAND_TIMEOUT_S = 120.0

# Context window in tokens, by model-name prefix; the first match wins, else the default.
_CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (("claude", 200_000),)
DEFAULT_CONTEXT_WINDOW = 200_000
DEFAULT_COMPACT_AT = 0.8


def context_window(model: str) -> int:
    """The model's context window in tokens (from the table; 200k for a model it does not know)."""
    return next(
        (size for prefix, size in _CONTEXT_WINDOWS if model.startswith(prefix)), DEFAULT_CONTEXT_WINDOW
    )


class ContextOptions(CamelModel):
    """The ``retrace.agent.*`` settings: automatic compaction of a long conversation."""

    auto_compact: bool = True
    compact_at: float = Field(default=DEFAULT_COMPACT_AT, ge=0.1, le=0.95)
    """Share of the model's context window past which the older part is summarized."""


class AgentSettings(CamelModel):
    model: str = DEFAULT_MODEL
    """The model id requests name (``access.model_id()`` for the configured provider)."""
    access: ModelSettings = Field(default_factory=ModelSettings)
    """How the model is reached: ``retrace.model`` (the provider and its own settings)."""
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
    """First backoff delay; doubled on every retry (when the API does not say how long to wait)."""
    max_retry_wait_s: float = Field(default=60.0, ge=0)
    """The longest wait before a retry: a ``retry-after`` asking for more ends the call (the
    user is told how long the API asked for); a backoff is cut to it."""
    prompt_caching: bool = True
    """Place prompt-cache breakpoints (:mod:`retrace.agent.caching`)."""
    mcp: McpSettings = Field(default_factory=McpSettings)
    """MCP servers whose tools the agent offers (none from an untrusted workspace's settings)."""
    max_parallel_tasks: int = Field(default=3, ge=1, le=16)
    """Subagents (``task`` calls of one reply) that work at the same time; the rest wait."""
    auto_compact: bool = True
    """Summarize the conversation's older part when it nears the context window
    (:mod:`retrace.agent.compaction`)."""
    compact_at: float = Field(default=DEFAULT_COMPACT_AT, ge=0.1, le=0.95)
    """Share of the context window past which a request triggers compaction first."""
    compact_keep: int = Field(default=3, ge=1)
    """Exchanges (a model reply and what answered it) kept verbatim after the summary."""
    context_window: int | None = Field(default=None, ge=1000)
    """The model's context window in tokens; ``None``: :func:`context_window` of the model."""

    def window(self) -> int:
        return self.context_window or context_window(self.model)
