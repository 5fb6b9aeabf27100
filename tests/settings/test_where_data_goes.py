"""Settings that decide where data, credentials or code go can never come from a workspace.

A folder's ``.vscode/settings.json`` is written by whoever wrote the folder. Every setting in
package.json that names an endpoint, a URL, a host, a port, a region, a server, a command or an
interpreter path — found by its key and by its description, so a new one cannot be added
unnoticed — must be

* contributed with ``"scope": "machine"`` (or ``application``), so VS Code itself never applies a
  workspace value, and
* ruled ``machine`` in the extension's ``SETTING_RULES`` (``extension/src/settings.ts``): the one
  mechanism that drops a workspace or folder value if one is delivered anyway and tells the user.

Settings whose workspace value may only make things safer (``narrowOnly``: permissions, client-side
encryption) must be ruled so too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

KEY_WORDS = re.compile(
    r"(url|uri|endpoint|host|port|region|servers?|path|address|proxy|program|executable|bucket|command)$",
    re.IGNORECASE,
)
"""The last segment of a key that names where something goes or what runs."""

TEXT_WORDS = re.compile(r"\bURL\b|\bendpoint\b|https?://|\binterpreter\b", re.IGNORECASE)
"""Words of a description that say the setting names a place."""

POLICIES = {"permissions.write", "permissions.command", "permissions.mcp"}
"""Policies, not places: a workspace may only narrow them (checked below)."""

NARROW_ONLY = {*POLICIES, "remote.encrypt"}
"""A workspace value applies only when it is at least as safe as the user's."""


def properties() -> dict[str, dict[str, Any]]:
    """The settings as the user reads them: a ``%key%`` description resolved in package.nls.json."""
    manifest = json.loads((ROOT / "package.json").read_text("utf-8"))
    nls = json.loads((ROOT / "package.nls.json").read_text("utf-8"))
    props: dict[str, dict[str, Any]] = manifest["contributes"]["configuration"]["properties"]

    def resolved(value: Any) -> Any:
        is_key = isinstance(value, str) and len(value) > 2 and value[0] == value[-1] == "%"
        return nls.get(value[1:-1], value) if is_key else value

    return {
        key.removeprefix("retrace."): {k: resolved(v) for k, v in spec.items()} for key, spec in props.items()
    }


def setting_rules() -> dict[str, str]:
    """``SETTING_RULES`` as written in extension/src/settings.ts."""
    text = (ROOT / "extension" / "src" / "settings.ts").read_text("utf-8")
    body = re.search(r"SETTING_RULES[^=]*=\s*\{(.*?)\};", text, re.DOTALL)
    assert body is not None, "SETTING_RULES not found in settings.ts"
    rules = re.findall(r"['\"]?([\w.]+)['\"]?\s*:\s*'(machine|narrowOnly)'", body.group(1))
    return dict(rules)


def names_a_place(key: str, spec: dict[str, Any]) -> bool:
    if key in POLICIES:
        return False
    text = str(spec.get("markdownDescription") or spec.get("description") or "")
    return bool(KEY_WORDS.search(key.rsplit(".", 1)[-1]) or TEXT_WORDS.search(text))


PLACES = sorted(k for k, s in properties().items() if names_a_place(k, s))


def test_the_classifier_finds_the_known_places() -> None:
    """The detector is not vacuous: every setting known to name a place is found."""
    known = {"baseUrl", "pythonPath", "mcp.servers", "remote.url", "remote.endpoint", "remote.region"}
    assert known <= set(PLACES), sorted(known - set(PLACES))
    assert "metrics.port" in PLACES


@pytest.mark.parametrize("key", PLACES)
def test_a_setting_that_names_a_place_is_machine_scoped(key: str) -> None:
    spec = properties()[key]
    assert spec.get("scope") in {"machine", "application"}, (
        f'retrace.{key} names where data, credentials or code go: it needs "scope": "machine"'
    )
    assert setting_rules().get(key) == "machine", (
        f"retrace.{key}: add it to SETTING_RULES as 'machine' (extension/src/settings.ts), "
        "so a workspace value delivered anyway is ignored and reported"
    )


@pytest.mark.parametrize("key", sorted(NARROW_ONLY))
def test_a_setting_a_workspace_may_only_narrow_is_ruled_so(key: str) -> None:
    assert key in properties()
    assert setting_rules().get(key) == "narrowOnly"


def test_every_ruled_setting_is_restricted_in_untrusted_workspaces() -> None:
    manifest = json.loads((ROOT / "package.json").read_text("utf-8"))
    restricted = set(manifest["capabilities"]["untrustedWorkspaces"]["restrictedConfigurations"])
    missing = {f"retrace.{k}" for k in setting_rules()} - restricted
    assert not missing, sorted(missing)
