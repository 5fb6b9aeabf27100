"""The Anthropic family: the Anthropic API, Amazon Bedrock and Google Vertex AI, all through the
Anthropic SDK's own clients (``AsyncAnthropic``, ``AsyncAnthropicBedrock``,
``AsyncAnthropicVertex``), which share one Messages interface; only the client differs (endpoint,
authentication, where the model id goes). The request body is the agent's own form as it is.

Every failure leaves as :class:`ModelError`, classified here (the one place that knows the SDK's
exception types): rate limits, overload, server errors and connection failures are retryable,
with the wait the response asks for (``retry-after-ms`` / ``retry-after``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from retrace.agent.model.interface import ModelError, ModelReply, ModelRequest, ReplyUsage, TextSink
from retrace.agent.model.pricing import cost_usd
from retrace.agent.retry import asked_wait_s

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic, AsyncAnthropicBedrock, AsyncAnthropicVertex
    from anthropic.types import Message

    AnthropicSdk = AsyncAnthropic | AsyncAnthropicBedrock | AsyncAnthropicVertex

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}
_RETRY_ERROR_TYPES = {"overloaded_error", "rate_limit_error", "api_error"}


def pricing_id(model: str) -> str:
    """The Anthropic model name inside a provider's id: Bedrock's ``us.anthropic.claude-x-v1:0``
    and Vertex's ``claude-x@20250929`` are priced as ``claude-x``."""
    name = model.split("anthropic.", 1)[1] if "anthropic." in model else model
    return name.split("@", 1)[0]


def _status_error(error: Any) -> ModelError:
    body = error.body
    inner = body.get("error") if isinstance(body, dict) else None
    message = inner.get("message") if isinstance(inner, dict) else None
    if message is None and isinstance(body, dict):  # Bedrock's own errors: {"message": ...}
        message = body.get("message")
    kind = inner.get("type") if isinstance(inner, dict) else None
    retryable = error.status_code in _RETRY_STATUS or kind in _RETRY_ERROR_TYPES
    return ModelError(
        f"{error.status_code} {message or type(error).__name__}",
        retryable=retryable,
        wait_s=asked_wait_s(error.response.headers),
        detail=str(error),
    )


class AnthropicFamilyClient:
    """A :class:`~retrace.agent.model.interface.ModelClient` over one Anthropic SDK client.
    ``where``: the endpoint, and ``check``: the settings to look at, named when it cannot be reached."""

    def __init__(self, sdk: AnthropicSdk, provider: str, *, where: str, check: str) -> None:
        self._sdk = sdk
        self._provider = provider
        self._where = where
        self._check = check

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def caching(self) -> bool:
        return True

    @property
    def sdk(self) -> AnthropicSdk:
        """The SDK client (tests inspect how it was configured)."""
        return self._sdk

    def cost_usd(self, model: str, usage: ReplyUsage) -> float | None:
        return cost_usd(
            pricing_id(model),
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_creation_input_tokens,
            usage.cache_read_input_tokens,
        )

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelReply:
        body = request.body()
        try:
            async with self._sdk.messages.stream(**cast(Any, body)) as stream:
                async for event in stream:
                    if event.type == "text" and event.text:
                        await on_text(event.text)
                message = await stream.get_final_message()
        except Exception as e:
            raise self._error(e) from e
        return _reply(message)

    async def complete(self, request: ModelRequest) -> ModelReply:
        try:
            message = await self._sdk.messages.create(**cast(Any, request.body()))
        except Exception as e:
            raise self._error(e) from e
        return _reply(message)

    def _error(self, error: Exception) -> ModelError:
        import anthropic  # imported on first use: it takes seconds (a turn has made its client by now)

        if isinstance(error, anthropic.APIStatusError):
            return _status_error(error)
        if isinstance(error, anthropic.APIConnectionError):
            return ModelError(
                f"cannot reach the model API at {self._where} ({error}); check {self._check} and the network",
                retryable=True,
                detail=str(error),
            )
        if isinstance(error, anthropic.APIError | ValueError | OSError):
            first = str(error).strip().splitlines()
            return ModelError(f"{type(error).__name__}: {first[0] if first else ''}"[:300], detail=str(error))
        first = str(error).strip().splitlines()
        return ModelError(
            f"the model's reply could not be read: {type(error).__name__}: {first[0] if first else ''}"[:300],
            detail=str(error),
        )


def _reply(message: Message) -> ModelReply:
    """The SDK's message as the agent's reply (empty text dropped: the API rejects it on the way back)."""
    if message.stop_reason is None:
        raise ModelError("the model's reply stream ended early (no stop reason); nothing was kept")
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if block.type == "text":
            if block.text:
                blocks.append({"type": "text", "text": block.text})
        elif block.type == "tool_use":
            tool_input = block.input if isinstance(block.input, dict) else {}
            blocks.append({"type": "tool_use", "id": block.id, "name": block.name, "input": tool_input})
    usage = message.usage
    return ModelReply(
        blocks=blocks,
        stop_reason=str(message.stop_reason),
        usage=ReplyUsage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
            cache_read_input_tokens=usage.cache_read_input_tokens or 0,
        ),
    )
