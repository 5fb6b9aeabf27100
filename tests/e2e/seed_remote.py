"""Seed an S3 bucket with one agent session pushed from "another machine" (its own workspace and
store under ``ROOT``), for the extension-host test of "Open a remote session…".

``python tests/e2e/seed_remote.py ROOT ENDPOINT s3://bucket/prefix`` (credentials from the
``AWS_*`` environment) prints ``{"sessionId": …}``. The workspace name in the bucket is ``proj``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from seed_story import seed

from retrace.engine import Engine
from retrace.sync import RemoteService


def main(argv: list[str]) -> int:
    root, endpoint, url = Path(argv[0]), argv[1], argv[2]
    workspace = root / "proj"
    workspace.mkdir(parents=True, exist_ok=True)
    store = root / "store"
    engine = Engine.open(workspace, store)
    try:
        session_id, _checkpoints = seed(engine, workspace, 1, 3)
    finally:
        engine.close()
    service = RemoteService(store, workspace)
    service.add("origin", url, endpoint=endpoint, workspace_name="proj")
    service.push("origin")
    print(json.dumps({"sessionId": session_id}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
