"""An OpenAI-compatible chat-completions endpoint (Ollama, vLLM, LM Studio, ...) as the agent's
:class:`~retrace.agent.model.interface.ModelClient`, through the official ``openai`` SDK.

The request and reply mapping is :mod:`retrace.agent.model.openai_mapping` (pure); this module
is the I/O edge: the SDK client (``AsyncOpenAI(base_url=retrace.model.openaiCompatible.baseUrl,
max_retries=0)``: retries are the agent's own), streaming with ``stream_options.include_usage``,
and the one classification of the SDK's failures into :class:`ModelError`: 408, 409, 429 and
5xx are retryable with the wait the response asks for (``retry-after-ms`` / ``retry-after``), a
connection failure is retryable and names the setting and the URL, anything else is one line.

What such an endpoint lacks is declared: no prompt caching (``caching`` is false: no breakpoint
is sent) and no known price (``cost_usd`` is ``None``: the cost line says "unknown").

The key is optional (a local server needs none): ``OPENAI_API_KEY`` as handed off like the
Anthropic key (:mod:`retrace.credentials`), else a placeholder the SDK requires.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit, urlunsplit

from retrace import credentials
from retrace.agent.model.interface import ModelError, ModelReply, ModelRequest, ReplyUsage, TextSink
from retrace.agent.model.openai_mapping import ReplyAssembler, chat_body, reply_of_completion, tool_use_ids
from retrace.agent.model.sdk_http import openai_sdk
from retrace.agent.retry import asked_wait_s

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from retrace.agent.model.settings import ModelSettings

PROVIDER = "openai-compatible"
ENV_API_KEY = "OPENAI_API_KEY"
"""The credential name the endpoint's key is held under (handed off on a pipe, never a setting)."""
NO_KEY = "retrace-offline"
"""The key sent to an endpoint configured without one (the SDK requires some key)."""
BASE_URL_SETTING = "retrace.model.openaiCompatible.baseUrl"
_RETRY_STATUS = {408, 409, 429}
_HINTS = {
    401: "the endpoint refused the key (set or clear the OpenAI-compatible key)",
    403: "the endpoint refused the key (set or clear the OpenAI-compatible key)",
    404: f"check retrace.model.id and {BASE_URL_SETTING} (it usually ends in /v1)",
}


def shown_url(url: str) -> str:
    """``url`` as said to the user: without any user name or password it carries."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def url_problem(base_url: str) -> str | None:
    """Why ``base_url`` cannot be an endpoint (one line naming the setting), else ``None``."""
    try:
        parts = urlsplit(base_url.strip())
        _ = parts.port  # raises on a port that is not a number
    except ValueError:
        return f"{BASE_URL_SETTING} is not a URL: {base_url!r}"
    if any(c.isspace() for c in base_url.strip()):
        return f"{BASE_URL_SETTING} is not a URL (it holds a space): {base_url!r}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        example = "http://localhost:11434/v1"
        return f"{BASE_URL_SETTING} must be an http:// or https:// URL (e.g. {example}), not {base_url!r}"
    return None


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else ""


def status_error(error: Any) -> ModelError:
    """An ``openai.APIStatusError`` as a :class:`ModelError`: the status, the endpoint's own
    message, a hint naming the setting where one is at fault; retryable: 408, 409, 429, 5xx."""
    body = error.body
    inner = body.get("error", body) if isinstance(body, dict) else None
    message = inner.get("message") if isinstance(inner, dict) else None
    status = int(error.status_code)
    text = f"{status} {message if isinstance(message, str) and message else type(error).__name__}"
    hint = _HINTS.get(status)
    return ModelError(
        f"{text}; {hint}"[:400] if hint else text[:400],
        retryable=status in _RETRY_STATUS or status >= 500,
        wait_s=asked_wait_s(error.response.headers),
        detail=str(error),
    )


class OpenAiCompatibleClient:
    """A :class:`~retrace.agent.model.interface.ModelClient` over one ``AsyncOpenAI`` client."""

    def __init__(self, sdk: AsyncOpenAI, *, where: str) -> None:
        self._sdk = sdk
        self._where = where
        self._limit = "max_tokens"
        """The output limit's name; ``max_completion_tokens`` once the endpoint asked for it."""

    @property
    def provider(self) -> str:
        return PROVIDER

    @property
    def caching(self) -> bool:
        return False

    @property
    def sdk(self) -> AsyncOpenAI:
        """The SDK client (tests inspect how it was configured)."""
        return self._sdk

    def cost_usd(self, model: str, usage: ReplyUsage) -> float | None:
        return None

    async def _create(self, request: ModelRequest, *, stream: bool) -> Any:
        """Send ``request``; an endpoint that refuses ``max_tokens`` for ``max_completion_tokens``
        (OpenAI's newer models) is asked again at once with that name, and from then on."""
        import openai  # imported on first use: a turn has made its client by now

        completions = self._sdk.chat.completions
        try:
            return await completions.create(**cast(Any, chat_body(request, stream=stream, limit=self._limit)))
        except openai.BadRequestError as e:
            if self._limit != "max_tokens" or "max_completion_tokens" not in str(e):
                raise
        self._limit = "max_completion_tokens"
        return await completions.create(**cast(Any, chat_body(request, stream=stream, limit=self._limit)))

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelReply:
        assembler = ReplyAssembler(taken=tool_use_ids(request.messages))
        try:
            stream = await self._create(request, stream=True)
        except Exception as e:
            raise self._error(e) from e
        try:
            async with stream:
                async for chunk in stream:
                    text = assembler.add(chunk)
                    if text:
                        await on_text(text)
        except Exception as e:  # the reply had begun: a failure now is a reply cut off
            raise self._error(e, streaming=True) from e
        return assembler.reply()

    async def complete(self, request: ModelRequest) -> ModelReply:
        try:
            completion = await self._create(request, stream=False)
        except Exception as e:
            raise self._error(e) from e
        return reply_of_completion(completion, tool_use_ids(request.messages))

    def _error(self, error: Exception, *, streaming: bool = False) -> ModelError:
        """``error`` as a :class:`ModelError`; ``streaming``: it came while the reply streamed in
        (a broken connection then cut the reply off: not retried, as text was already shown)."""
        import openai  # imported on first use: a turn has made its client by now

        if isinstance(error, ModelError):
            return error
        if isinstance(error, openai.APIStatusError):
            return status_error(error)
        if isinstance(error, openai.APIConnectionError) and streaming:
            cause = error.__cause__ or error
            return ModelError(
                f"the model's reply stream was cut off ({type(cause).__name__}: {_first_line(cause)}); "
                "nothing was kept",
                detail=str(error),
            )
        if isinstance(error, openai.APIConnectionError):
            cause = error.__cause__ or error
            return ModelError(
                f"cannot reach the OpenAI-compatible endpoint at {self._where} "
                f"({type(cause).__name__}: {_first_line(cause)}); "
                f"check {BASE_URL_SETTING} and that the server is running",
                retryable=True,
                detail=str(error),
            )
        if isinstance(error, openai.APIError):  # an error event in the middle of the stream
            return ModelError(
                f"the endpoint reported an error: {_first_line(error)}"[:400], detail=str(error)
            )
        return ModelError(
            f"the model's reply could not be read: {type(error).__name__}: {_first_line(error)}"[:400],
            detail=str(error),
        )


def openai_compatible_client(access: ModelSettings, api_key: str | None = None) -> OpenAiCompatibleClient:
    """The client for ``access`` (``api_key``: ``None`` takes the handed-off
    :data:`ENV_API_KEY`). :class:`ModelError` when it cannot be made (a base URL that is no
    URL, the ``openai`` package missing): the caller reports that line at the first call."""
    base_url = access.openai_compatible.base_url.strip()
    problem = url_problem(base_url)
    if problem is not None:
        raise ModelError(problem)
    try:
        import openai  # noqa: F401  (imported on first use: it takes a few tenths of a second)
    except ImportError as e:
        raise ModelError(f"the openai package is not installed ({e}); reinstall the Retrace server") from e
    key = credentials.get(ENV_API_KEY) if api_key is None else api_key
    try:
        sdk = openai_sdk(base_url, key or NO_KEY)
    except Exception as e:  # the SDK's own check of the URL or options
        raise ModelError(f"{BASE_URL_SETTING} cannot be used ({type(e).__name__}: {_first_line(e)})") from e
    return OpenAiCompatibleClient(sdk, where=shown_url(base_url))
