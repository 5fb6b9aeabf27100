"""Build the JSON-RPC server with every handler and every feature, and serve it over stdio.

``python -m retrace`` and ``retrace serve`` (what the VS Code extension starts) run :func:`main`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from retrace import credentials
from retrace.lsp.feature_lifecycle import Feature, FeatureSet
from retrace.lsp.features.cli_relay import CliRelayFeature
from retrace.lsp.features.engine_rules import EngineRulesFeature
from retrace.lsp.features.folder_features import FolderCleanupFeature, FolderRelayFeature, FolderRemoteFeature
from retrace.lsp.features.housekeeping import (
    AutoCleanupFeature,
    HookRefreshFeature,
    StoreCheckFeature,
    WarmSdkFeature,
)
from retrace.lsp.features.remote_sync import RemoteSyncFeature
from retrace.lsp.features.storage_metrics import StorageMetricsFeature
from retrace.lsp.features.timeline_events import TimelineEventsFeature
from retrace.lsp.features.turn_mirror import TurnMirrorFeature
from retrace.lsp.folders import Folders
from retrace.lsp.handlers import CLIENT_METHOD_HANDLERS, register_lifecycle
from retrace.lsp.log import setup_logging
from retrace.lsp.rpc import register
from retrace.lsp.server import VERSION, RetraceServer
from retrace.lsp.startup import shutdown
from retrace.lsp.transport import serve_stdio

if TYPE_CHECKING:
    from retrace.lsp.services.remote import ServerRemote

log = logging.getLogger(__name__)


def features(server: RetraceServer) -> list[Feature]:
    """THE registry of the server's features, in the order every hook runs them
    (:mod:`retrace.lsp.feature_lifecycle`). The order is today's and these depend on it:

    * ``remote`` first: at shutdown its last push starts (and gets the whole wait) before anything
      else stops; a new ``retrace.remote.*`` reaches the remotes before the engines' settings.
    * ``relay`` before anything that closes: the CLI's socket stops before the engine is let go
      (every feature stops before :func:`retrace.lsp.startup.shutdown` closes the engines).
    * ``git_mirror`` before ``metrics``: as the host's old ladder ran them (the turn's mirror
      commit is awaited before the turn-end storage measure is scheduled; neither needs the other).
    * the start-up chores (``integrations`` … ``auto_gc``) in the order their cost is worth
      paying: hook repair, the store's quick check, the storage measure (``metrics``), the SDK
      import, the cleanup (which waits for the idle watch forever after).
    * ``timeline`` last: the client hears ``timeline/didChange`` of a checkpoint once every
      other feature took note of it (the remote's push scheduled, the metrics' check).
    """
    return [
        RemoteSyncFeature(server),
        CliRelayFeature(server),
        TurnMirrorFeature(server),
        EngineRulesFeature(server),
        HookRefreshFeature(server),
        StoreCheckFeature(server),
        StorageMetricsFeature(server),
        WarmSdkFeature(),
        AutoCleanupFeature(server),
        TimelineEventsFeature(server),
    ]


def folder_features(server: RetraceServer, root: str, remote: ServerRemote) -> list[Feature]:
    """THE registry of a further folder's features (multi-root; one set per folder, built when it
    opens, :mod:`retrace.lsp.folders`), in the order every hook runs them:

    * ``relay`` first: at stop, the folder's command-line socket closes before anything else, so
      no relayed call reaches the engine while the folder closes;
    * ``auto_gc`` next: its cleanup is cancelled before the last push;
    * ``remote`` last: it pushes what is pending within the stop's wait, the rest is done.
    """
    return [
        FolderRelayFeature(server, root),
        FolderCleanupFeature(server),
        FolderRemoteFeature(server, root, remote),
    ]


def create_server() -> RetraceServer:
    server = RetraceServer()
    server.features = FeatureSet(features(server))
    folders = Folders(folder_features)
    register(server, CLIENT_METHOD_HANDLERS, folders.scope)
    register_lifecycle(server, folders)
    return server


def main(argv: list[str] | None = None) -> int:
    """Serve over stdio until the client exits."""
    del argv
    # Before anything else runs: the model key leaves every environment a tool could read.
    credentials.secure_process_start()
    server = create_server()
    setup_logging(server)
    log.info("retrace server %s starting (stdio)", VERSION)
    try:
        serve_stdio(server)
    finally:
        shutdown(server)
    return 0
