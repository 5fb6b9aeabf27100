"""Test client for the real Retrace server process (``python -m retrace``) over stdio.

:class:`EditorClient` plays VS Code: it advertises ``workspace.applyEdit`` with resource
operations and APPLIES every ``workspace/applyEdit`` to the files on disk the way the editor
would (UTF-16 positions, versioned identifiers checked against the documents it has open),
answers ``retrace/editor/save`` / ``retrace/editor/restoreState`` / ``retrace/permission/request``
(scripted answers), and records every agent event and timeline notification. Every response is
validated against ``shared-schema/protocol.schema.json``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import jsonschema
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient
from tests import server_forkserver

from retrace.lsp.rpc import converter_factory
from retrace.offline import FakeModel, load_scenario
from retrace.protocol.methods import BY_NAME

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "shared-schema" / "protocol.schema.json").read_text("utf-8"))
SCENARIOS = Path(__file__).resolve().parent / "scenarios"

APP_PY = 'def answer():\n    return 1\n\n\nprint("héllo 😀")\n'


async def wait_until(condition: Callable[[], bool], limit_s: float = 30.0) -> None:
    """Poll a condition on other processes or the file system (no event to wait on)."""
    for _ in range(int(limit_s / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached in time")


def fake_model(name: str) -> FakeModel:
    model = FakeModel(load_scenario(SCENARIOS / f"{name}.json"))
    model.start()
    return model


def model_env(model: FakeModel) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": model.base_url, "ANTHROPIC_API_KEY": "test-key", "RETRACE_FAKE_MODEL": ""}


AUTO = {"permissions": {"write": "auto", "command": "auto"}}


async def start_multiroot_agent(
    first: Path, second: Path, env: dict[str, str], model: FakeModel
) -> EditorClient:
    """An editor of a two-folder workspace (``first`` first) whose agent answers from ``model``,
    with writes and commands allowed: the multi-root agent tests' one way to start."""
    return await start_editor(
        first,
        None,
        env={**env, **model_env(model)},
        settings=AUTO,
        more_folders=(second,),
        init_options={"multiRoot": True},
    )


def validate(ref: str, value: Any) -> None:
    """Validate a payload against a ``#/$defs/...`` of the committed schema. A union tagged by a
    discriminator (an agent event's ``kind``) is checked against the member its tag names — the
    one member it can match — instead of against every member in turn (which made validation
    ~3 % of the server tests' CPU); a tag the union does not name fails as the union would."""
    definition = SCHEMA["$defs"][ref.removeprefix("#/$defs/")]
    tagged = definition.get("discriminator")
    if tagged is not None and isinstance(value, dict):
        member = tagged["mapping"].get(value.get(tagged["propertyName"]))
        if member is not None:
            ref = member
    _validator(ref).validate(value)


@functools.cache
def _validator(ref: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({"$ref": ref, "$defs": SCHEMA["$defs"]})


def path_of(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


# --------------------------------------------------------------------------- the editor's applier


def _split_lines(text: str) -> list[str]:
    """Lines with their terminators (``\\r\\n``, ``\\n``, ``\\r``), like an editor's model."""
    lines: list[str] = []
    start = 0
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\r" and index + 1 < len(text) and text[index + 1] == "\n":
            lines.append(text[start : index + 2])
            index += 2
            start = index
            continue
        if char in "\r\n":
            lines.append(text[start : index + 1])
            start = index + 1
        index += 1
    lines.append(text[start:])
    return lines


def _offset(text: str, lines: list[str], position: lsp.Position) -> int:
    """Character offset of an LSP position whose ``character`` counts UTF-16 code units."""
    if position.line >= len(lines):
        return len(text)
    base = sum(len(line) for line in lines[: position.line])
    content = lines[position.line].rstrip("\r\n")
    units = 0
    for index, char in enumerate(content):
        if units >= position.character:
            return base + index
        units += 2 if ord(char) > 0xFFFF else 1
    return base + len(content)  # at or beyond the end of the line: clamp like VS Code


def apply_utf16_edits(text: str, edits: list[lsp.TextEdit]) -> str:
    lines = _split_lines(text)
    spans = sorted(
        (_offset(text, lines, e.range.start), _offset(text, lines, e.range.end), e.new_text) for e in edits
    )
    out = []
    cursor = 0
    for start, end, new_text in spans:
        assert start >= cursor, "overlapping edits"
        out.append(text[cursor:start])
        out.append(new_text)
        cursor = end
    out.append(text[cursor:])
    return "".join(out)


@dataclass
class OpenDocument:
    version: int
    text: str


@dataclass
class EditorClient:
    """A VS Code stand-in around a pytest-lsp client."""

    client: LanguageClient
    workspace: Path
    events: list[dict[str, Any]] = field(default_factory=list)
    timeline_changes: list[dict[str, Any]] = field(default_factory=list)
    remote_progress: list[dict[str, Any]] = field(default_factory=list)
    """Every ``retrace/remote/progress`` notification (the sync scheduler's states)."""
    storage_alerts: list[dict[str, Any]] = field(default_factory=list)
    """Every ``retrace/storage/alert`` notification."""
    applied_edits: list[lsp.ApplyWorkspaceEditParams] = field(default_factory=list)
    saved: list[list[str]] = field(default_factory=list)
    restored_states: list[dict[str, Any]] = field(default_factory=list)
    permission_requests: list[dict[str, Any]] = field(default_factory=list)
    permission_answers: deque[str] = field(default_factory=deque)
    default_permission: str = "allow"
    refuse_edits: str | None = None
    """When set, ``workspace/applyEdit`` answers ``applied: false`` with this reason."""
    hold_edits: asyncio.Event | None = None
    """When set, ``workspace/applyEdit`` waits until the event is set (a slow editor); an edit
    that waits sets :attr:`edit_held`."""
    edit_held: asyncio.Event = field(default_factory=asyncio.Event)
    documents: dict[str, OpenDocument] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    """What the client answers to ``workspace/configuration`` for the ``retrace`` section."""
    event_signal: asyncio.Event = field(default_factory=asyncio.Event)

    # ------------------------------------------------------------------ requests
    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a Retrace request; the result is plain JSON, validated against the schema."""
        result = await self.client.protocol.send_request_async(method, params if params is not None else {})
        spec = BY_NAME.get(method)
        if spec is not None and spec.result is not None:
            validate(f"#/$defs/{spec.result.__name__}", result)
        return result

    async def request_error(self, method: str, params: Any) -> JsonRpcException:
        """Send a request that must fail; returns the JSON-RPC error."""
        try:
            result = await self.client.protocol.send_request_async(method, params)
        except JsonRpcException as exc:
            return exc
        raise AssertionError(f"{method} unexpectedly succeeded: {result!r}")

    def notify(self, method: str, params: Any) -> None:
        self.client.protocol.notify(method, params)

    def change_settings(self, settings: dict[str, Any]) -> None:
        """Like VS Code after a settings edit: the server is told, then pulls the section."""
        self.settings = settings
        self.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))

    # ------------------------------------------------------------------ documents
    def open_document(self, rel: str) -> str:
        path = self.workspace / rel
        uri = path.as_uri()
        text = path.read_bytes().decode("utf-8")
        self.documents[uri] = OpenDocument(version=1, text=text)
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(uri=uri, language_id="plaintext", version=1, text=text)
            )
        )
        return uri

    def type_in_document(self, uri: str, new_text: str) -> None:
        """An unsaved edit in the editor buffer (disk unchanged)."""
        document = self.documents[uri]
        document.version += 1
        document.text = new_text
        self.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=document.version),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=new_text)],
            )
        )

    # ------------------------------------------------------------------ agent helpers
    async def wait_for_event(self, predicate: Any, limit_s: float = 30.0) -> dict[str, Any]:
        async def scan() -> dict[str, Any]:
            seen = 0
            while True:
                for event in self.events[seen:]:
                    if predicate(event):
                        return event
                seen = len(self.events)
                self.event_signal.clear()
                await self.event_signal.wait()

        return await asyncio.wait_for(scan(), limit_s)

    async def run_turn(
        self, text: str, session_id: str | None = None, limit_s: float = 60.0
    ) -> dict[str, Any]:
        """Prompt and wait for the turn to finish; returns the prompt result."""
        params: dict[str, Any] = {"text": text}
        if session_id is not None:
            params["sessionId"] = session_id
        result = await self.request("retrace/agent/prompt", params)
        turn_id = result["turnId"]
        await self.wait_for_event(
            lambda e: e["kind"] == "turnFinished" and e.get("turnId") == turn_id, limit_s=limit_s
        )
        return dict(result)

    def events_of(self, kind: str, turn_id: str | None = None) -> list[dict[str, Any]]:
        return [
            e for e in self.events if e["kind"] == kind and (turn_id is None or e.get("turnId") == turn_id)
        ]


def capabilities(apply_edit: bool = True) -> lsp.ClientCapabilities:
    workspace = lsp.WorkspaceClientCapabilities(
        apply_edit=apply_edit,
        configuration=True,
        workspace_edit=lsp.WorkspaceEditClientCapabilities(
            document_changes=True,
            resource_operations=[
                lsp.ResourceOperationKind.Create,
                lsp.ResourceOperationKind.Rename,
                lsp.ResourceOperationKind.Delete,
            ],
        ),
    )
    return lsp.ClientCapabilities(
        workspace=workspace,
        general=lsp.GeneralClientCapabilities(position_encodings=[lsp.PositionEncodingKind.Utf16]),
    )


def _apply_workspace_edit(
    editor: EditorClient, params: lsp.ApplyWorkspaceEditParams
) -> lsp.ApplyWorkspaceEditResult:
    editor.applied_edits.append(params)
    if editor.refuse_edits is not None:
        return lsp.ApplyWorkspaceEditResult(applied=False, failure_reason=editor.refuse_edits)
    changes = params.edit.document_changes or []
    # Like VS Code: check every versioned document first, apply nothing when one is stale.
    for change in changes:
        if isinstance(change, lsp.TextDocumentEdit) and change.text_document.version is not None:
            open_doc = editor.documents.get(change.text_document.uri)
            if open_doc is None or open_doc.version != change.text_document.version:
                return lsp.ApplyWorkspaceEditResult(
                    applied=False, failure_reason=f"stale version for {change.text_document.uri}"
                )
    for change in changes:
        if isinstance(change, lsp.CreateFile):
            target = path_of(change.uri)
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists() or (change.options and change.options.overwrite):
                target.write_bytes(b"")
        elif isinstance(change, lsp.DeleteFile):
            target = path_of(change.uri)
            if target.exists() or target.is_symlink():
                target.unlink()
            editor.documents.pop(change.uri, None)
        elif isinstance(change, lsp.RenameFile):
            new = path_of(change.new_uri)
            new.parent.mkdir(parents=True, exist_ok=True)
            path_of(change.old_uri).rename(new)
        else:
            uri = change.text_document.uri
            target = path_of(uri)
            open_doc = editor.documents.get(uri)
            old = open_doc.text if open_doc else target.read_bytes().decode("utf-8")
            edits = [e for e in change.edits if isinstance(e, lsp.TextEdit)]
            new_text = apply_utf16_edits(old, edits)
            if open_doc is not None:
                open_doc.text = new_text
                open_doc.version += 1
            # The "save" step: this stand-in writes at once (retrace/editor/save is then a no-op).
            target.write_bytes(new_text.encode("utf-8"))
    return lsp.ApplyWorkspaceEditResult(applied=True)


async def start_editor(
    workspace: Path,
    store: Path | None,
    *,
    env: dict[str, str] | None = None,
    apply_edit: bool = True,
    settings: dict[str, Any] | None = None,
    server_args: tuple[str, ...] = ("serve",),
    open_folder: bool = True,
    init_options: dict[str, Any] | None = None,
    more_folders: tuple[Path, ...] = (),
) -> EditorClient:
    """Start ``python -m retrace serve`` (the extension's command) for ``workspace`` and initialize
    it like VS Code would. ``store`` ``None``: the folder's own store (no ``storeDir``);
    ``more_folders``: the further folders of a multi-root workspace (after ``workspace``)."""
    client = LanguageClient(converter_factory=converter_factory, configuration={"retrace": settings or {}})
    editor = EditorClient(client=client, workspace=workspace, settings=dict(settings or {}))

    @client.feature(lsp.WORKSPACE_APPLY_EDIT)
    async def apply_edit_handler(params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
        if editor.hold_edits is not None:
            editor.edit_held.set()
            await editor.hold_edits.wait()
        return _apply_workspace_edit(editor, params)

    @client.feature(lsp.WORKSPACE_CONFIGURATION)
    def configuration(params: lsp.ConfigurationParams) -> list[Any]:
        return [editor.settings for _ in params.items]

    @client.feature("retrace/agent/event")
    def on_event(params: dict[str, Any]) -> None:
        validate("#/$defs/AgentEventPayload", params)
        editor.events.append(params)
        editor.event_signal.set()

    @client.feature("retrace/timeline/didChange")
    def on_timeline(params: dict[str, Any]) -> None:
        validate("#/$defs/TimelineDidChange", params)
        editor.timeline_changes.append(params)

    @client.feature("retrace/remote/progress")
    def on_remote_progress(params: dict[str, Any]) -> None:
        validate("#/$defs/RemoteSyncView", params)
        editor.remote_progress.append(params)

    @client.feature("retrace/storage/alert")
    def on_storage_alert(params: dict[str, Any]) -> None:
        validate("#/$defs/StorageAlert", params)
        editor.storage_alerts.append(params)

    @client.feature("retrace/editor/save")
    def on_save(params: dict[str, Any]) -> dict[str, Any]:
        validate("#/$defs/EditorSaveParams", params)
        editor.saved.append(list(params["uris"]))
        return {"saved": list(params["uris"]), "failed": []}

    @client.feature("retrace/editor/restoreState")
    def on_restore_state(params: dict[str, Any]) -> dict[str, Any]:
        validate("#/$defs/EditorState", params)
        editor.restored_states.append(params)
        return {"restored": True}

    @client.feature("retrace/permission/request")
    def on_permission(params: dict[str, Any]) -> dict[str, Any]:
        validate("#/$defs/PermissionRequest", params)
        editor.permission_requests.append(params)
        answer = (
            editor.permission_answers.popleft() if editor.permission_answers else editor.default_permission
        )
        return {"decision": answer}

    @client.feature(lsp.WINDOW_LOG_MESSAGE)
    def on_log(params: lsp.LogMessageParams) -> None:
        client.log_messages.append(params)

    @client.feature(lsp.WINDOW_SHOW_MESSAGE)
    def on_show(params: lsp.ShowMessageParams) -> None:
        client.messages.append(params)

    server_env = {**os.environ, **(env or {})}
    server_env.setdefault("RETRACE_LOG_LEVEL", "INFO")
    if server_forkserver.usable(server_args):
        await server_forkserver.start_forked_io(client, server_args, server_env)
    else:
        await client.start_io(sys.executable, "-m", "retrace", *server_args, env=server_env)
    options: dict[str, Any] = {"storeDir": str(store)} if store is not None else {}
    if settings is not None:
        options["settings"] = settings
    options.update(init_options or {})
    await client.initialize_session(
        lsp.InitializeParams(
            capabilities=capabilities(apply_edit),
            root_uri=workspace.as_uri() if open_folder else None,
            workspace_folders=[
                lsp.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)
                for folder in (workspace, *more_folders)
            ]
            if open_folder
            else None,
            initialization_options=options,
        )
    )
    return editor


async def stop_editor(editor: EditorClient) -> None:
    try:
        await asyncio.wait_for(editor.client.shutdown_session(), 20)
    finally:
        await editor.client.stop()
