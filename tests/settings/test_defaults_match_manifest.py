"""package.json's `contributes.configuration` is the only place defaults are written for users;
the server's settings model must agree with it, key by key (a drift here means the extension and
a headless server would behave differently out of the box)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retrace.protocol.models import ServerSettings

ROOT = Path(__file__).resolve().parents[2]
CLIENT_ONLY = {"pythonPath", "notifications", "context.editor", "context.openEditors", "terminal.addToPath"}
"""Settings only the extension reads (what it attaches to a prompt is sent with the prompt)."""


def manifest_defaults() -> dict[str, Any]:
    manifest = json.loads((ROOT / "package.json").read_text("utf-8"))
    properties: dict[str, Any] = manifest["contributes"]["configuration"]["properties"]
    return {key.removeprefix("retrace."): spec["default"] for key, spec in properties.items()}


def server_defaults() -> dict[str, Any]:
    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and value:  # an empty map (e.g. ``mcp.servers``) is one setting
            for key, inner in value.items():
                walk(f"{prefix}{key}.", inner)
        else:
            flat[prefix.rstrip(".")] = value

    walk("", ServerSettings().model_dump(mode="json", by_alias=True))
    return flat


@pytest.mark.parametrize("key", sorted(set(manifest_defaults()) - CLIENT_ONLY))
def test_manifest_default_equals_server_default(key: str) -> None:
    server = server_defaults()
    assert key in server, f"package.json setting retrace.{key} is unknown to ServerSettings"
    manifest = manifest_defaults()[key]
    # package.json cannot say null: an empty string stands for "not set" (the server's default is
    # None, or "" where the server reads an empty string as unset: the ``retrace.model`` section).
    expected = (None, "") if manifest == "" else (manifest,)
    assert server[key] in expected, f"retrace.{key}: package.json {manifest!r} != server {server[key]!r}"


def test_every_server_setting_is_in_the_manifest() -> None:
    missing = set(server_defaults()) - set(manifest_defaults())
    assert not missing, f"settings the user cannot see in package.json: {sorted(missing)}"
