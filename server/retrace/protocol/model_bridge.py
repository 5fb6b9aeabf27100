"""The editor's language models on the wire (the ``vscode-lm`` provider): the server asks the
extension with ``retrace/model/chat``; the extension answers through ``vscode.lm`` and streams the
reply's text with ``retrace/model/chatDelta``. A turn cancelled while it waits sends
``$/cancelRequest`` for the chat request (the extension cancels ``vscode.lm``'s request).

The shapes map one to one onto ``vscode.lm``'s classes (``LanguageModelChatMessage.User`` /
``.Assistant``, ``LanguageModelTextPart``, ``LanguageModelToolCallPart``,
``LanguageModelToolResultPart``); :mod:`retrace.agent.model.vscode_lm` owns the mapping from and
to the agent's conversation form."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from retrace.camel import CamelModel


class ChatModelRef(CamelModel):
    vendor: str
    """``vscode.lm.selectChatModels``' vendor (``copilot``)."""
    id: str = ""
    """The model's id; empty: the vendor's first model."""


class ChatTextPart(CamelModel):
    kind: Literal["text"]
    text: str


class ChatToolCallPart(CamelModel):
    kind: Literal["toolCall"]
    call_id: str
    name: str
    input: dict[str, Any]


class ChatToolResultPart(CamelModel):
    kind: Literal["toolResult"]
    call_id: str
    content: list[str]
    """The result's text pieces (``LanguageModelTextPart`` each)."""


ChatPart = Annotated[ChatTextPart | ChatToolCallPart | ChatToolResultPart, Field(discriminator="kind")]
ReplyPart = Annotated[ChatTextPart | ChatToolCallPart, Field(discriminator="kind")]


class ChatMessage(CamelModel):
    role: Literal["user", "assistant"]
    parts: list[ChatPart]


class ChatTool(CamelModel):
    name: str
    description: str
    input_schema: dict[str, Any]


class ModelChatParams(CamelModel):
    request_id: str
    """Names this request's ``retrace/model/chatDelta`` notifications."""
    model: ChatModelRef
    messages: list[ChatMessage]
    tools: list[ChatTool] = Field(default_factory=list)
    max_tokens: int
    """The agent's limit (``vscode.lm`` has no standard option for it; the vendor's own applies)."""


class ModelChatError(CamelModel):
    code: str
    """``vscode.LanguageModelError.code`` (``NoPermissions``, ``Blocked``, ``NotFound``), or
    ``NoModel`` (nothing matched), ``Cancelled``, ``Failed`` (anything else)."""
    message: str


class ModelChatResult(CamelModel):
    parts: list[ReplyPart] = Field(default_factory=list)
    """The whole reply (its text was also streamed as chatDelta notifications)."""
    stop_reason: str | None = None
    model: str | None = None
    """The id of the model that answered."""
    error: ModelChatError | None = None
    """Set when the editor could not answer (``parts`` then empty)."""


class ModelChatDelta(CamelModel):
    request_id: str
    text: str
