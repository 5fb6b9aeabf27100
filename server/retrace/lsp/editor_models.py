"""The editor's language models as the agent's :class:`~retrace.agent.model.interface.EditorModels`
(the ``vscode-lm`` provider), over the server's JSON-RPC connection.

``chat`` sends ``retrace/model/chat`` (its own JSON-RPC id, so it can be cancelled) and hands the
``retrace/model/chatDelta`` notifications naming its ``requestId`` to the turn's text sink, in
order, all of them before it returns the answer (the extension sends every delta before its
answer, and each is queued synchronously on arrival). The turn being cancelled while it waits
sends ``$/cancelRequest`` for that id (vscode-languageclient cancels the handler's token, which
cancels ``vscode.lm``'s request); the late answer is dropped. A failure of the connection itself
(the extension lacks the method, an error response, an unreadable answer) is a
:class:`~retrace.agent.model.interface.ModelError`; the editor's own failures travel in the answer.
One instance per server (:func:`of`), shared by its workspace folders.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
import weakref
from typing import Any

from lsprotocol import types as lsp
from pydantic import ValidationError
from pygls.exceptions import JsonRpcException, JsonRpcMethodNotFound
from pygls.lsp.server import LanguageServer

from retrace.agent.model.interface import ModelError, TextSink
from retrace.camel import dump
from retrace.protocol.model_bridge import ModelChatParams, ModelChatResult

log = logging.getLogger(__name__)

CHAT = "retrace/model/chat"
UPDATE_EXTENSION = (
    "this editor does not answer model requests (retrace/model/chat): update the Retrace extension, "
    "or choose another retrace.model.provider"
)


class LspEditorModels:
    def __init__(self, server: LanguageServer) -> None:
        self._server = server
        self._streams: dict[str, asyncio.Queue[str]] = {}

    def delta(self, request_id: str, text: str) -> None:
        """A ``retrace/model/chatDelta``: queued for the request it names (else ignored)."""
        queue = self._streams.get(request_id)
        if queue is None:
            log.debug("model text for an unknown or finished request %s ignored", request_id)
            return
        queue.put_nowait(text)

    async def chat(self, request: dict[str, Any], on_text: TextSink) -> dict[str, Any]:
        request_id = uuid.uuid4().hex
        params = ModelChatParams.model_validate({**request, "requestId": request_id})
        queue: asyncio.Queue[str] = asyncio.Queue()
        self._streams[request_id] = queue
        msg_id = f"retrace-model-{request_id}"
        connection = self._server.protocol
        answer = asyncio.wrap_future(connection.send_request(CHAT, dump(params), msg_id=msg_id))
        try:
            await _pump(queue, answer, on_text)
            raw = answer.result()
        except asyncio.CancelledError:
            connection.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=msg_id))
            answer.add_done_callback(lambda late: late.cancelled() or late.exception())  # dropped
            raise
        except JsonRpcMethodNotFound as e:
            raise ModelError(UPDATE_EXTENSION, detail=str(e)) from e
        except JsonRpcException as e:
            raise ModelError(f"the editor's model request failed: {e.message}", detail=str(e)) from e
        finally:
            del self._streams[request_id]
        try:
            return dump(ModelChatResult.model_validate(raw))
        except ValidationError as e:
            first = (str(e).splitlines() or [""])[0]
            raise ModelError(f"the editor's model answer could not be read: {first}", detail=str(e)) from e


async def _pump(queue: asyncio.Queue[str], answer: asyncio.Future[Any], on_text: TextSink) -> None:
    """Hand queued text to ``on_text`` until ``answer`` is in, then what is left. ``answer`` is
    never cancelled from here: a late answer must find its future pending."""
    while not answer.done():
        getter = asyncio.ensure_future(queue.get())
        try:
            await asyncio.wait({getter, answer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not getter.done():
                getter.cancel()
        if getter.done() and not getter.cancelled():
            await on_text(getter.result())
    while not queue.empty():
        await on_text(queue.get_nowait())


_instances: weakref.WeakKeyDictionary[LanguageServer, LspEditorModels] = weakref.WeakKeyDictionary()


def of(server: LanguageServer) -> LspEditorModels:
    """The server's one :class:`LspEditorModels`."""
    found = _instances.get(server)
    if found is None:
        found = _instances[server] = LspEditorModels(server)
    return found
