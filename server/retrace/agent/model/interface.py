"""The contract between the agent and whatever model answers it.

The agent keeps ONE conversation form whatever the provider: Messages-API-shaped JSON blocks
(``text``, ``tool_use``, ``tool_result``), as the journal stores them. So checkpoints, restores
and the journal are identical across providers, and a restored conversation is mapped to the
provider's wire form like any other history. A provider adapter (one module per provider)
translates a :class:`ModelRequest` to its wire form and its answer back to a
:class:`ModelReply`; it raises only :class:`ModelError` (classified: retryable or not, the wait
the service asked for), so the retry loop does not know which SDK or HTTP client is underneath.

What a provider lacks is declared, not guessed: :attr:`ModelClient.caching` (prompt-cache
breakpoints are sent only where they are honoured) and :meth:`ModelClient.cost_usd` (``None``
where no price is known: the cost line then says "unknown" rather than inventing one).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

TextSink = Callable[[str], Awaitable[None]]
"""Receives each piece of the reply's text as it streams in."""

STOP_REASONS = frozenset({"end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "pause_turn"})
"""The stop reasons the agent understands (a provider maps its own to these)."""


@dataclass(frozen=True)
class ModelRequest:
    """One request in the agent's form (Messages API shapes; ``system`` a string or text blocks,
    which may carry ``cache_control`` when the client supports caching)."""

    model: str
    max_tokens: int
    system: str | list[dict[str, Any]]
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)

    def body(self) -> dict[str, Any]:
        """The Messages API body (the Anthropic family sends exactly this)."""
        out: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": self.system,
            "messages": self.messages,
        }
        if self.tools:
            out["tools"] = self.tools
        return out


@dataclass(frozen=True)
class ReplyUsage:
    """One call's tokens: ``input_tokens`` the uncached input; cache writes and reads apart.
    A provider that reports no usage gives zeros and ``reported=False``."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    reported: bool = True

    @property
    def counted_input(self) -> int:
        """All the input the request took: uncached, read from the cache and written to it."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens


@dataclass(frozen=True)
class ModelReply:
    """A whole reply: its ``text`` / ``tool_use`` blocks (plain JSON, empty text dropped), why it
    stopped (one of :data:`STOP_REASONS`) and its usage."""

    blocks: list[dict[str, Any]]
    stop_reason: str
    usage: ReplyUsage = field(default_factory=ReplyUsage)


class ModelError(Exception):
    """A model call failed. ``str(error)`` is one line for the user (it names the setting to
    check where one is at fault); ``retryable``: a transient failure (rate limit, overload,
    server error, connection) worth another try; ``wait_s``: the wait the service asked for."""

    def __init__(
        self, message: str, *, retryable: bool = False, wait_s: float | None = None, detail: str | None = None
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.wait_s = wait_s
        self.detail = detail


class ModelClient(Protocol):
    """A configured model provider, as the agent sees it."""

    @property
    def provider(self) -> str:
        """The ``retrace.model.provider`` value this client answers for."""
        ...

    @property
    def caching(self) -> bool:
        """Whether the provider honours prompt-cache breakpoints (else none are sent)."""
        ...

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelReply:
        """Stream a reply (text to ``on_text`` as it comes); the whole reply at the end. A reply
        cut off mid-stream raises :class:`ModelError` (nothing partial is returned)."""
        ...

    async def complete(self, request: ModelRequest) -> ModelReply:
        """A reply without streaming (summaries)."""
        ...

    def cost_usd(self, model: str, usage: ReplyUsage) -> float | None:
        """The call's price, or ``None`` where this provider's price is not known."""
        ...


class EditorModels(Protocol):
    """The editor's language models (VS Code's ``vscode.lm``), reached over the connection to the
    editor: ``chat`` sends one request in the bridge's form and streams text to ``on_text``;
    :mod:`retrace.agent.model.vscode_lm` owns both forms. It raises :class:`ModelError` for a
    failure of the connection itself (the editor's own failures are in the answer)."""

    async def chat(self, request: dict[str, Any], on_text: TextSink) -> dict[str, Any]: ...
