"""The Marketplace page's privacy section tells the truth about what leaves the machine.

The page (``extension/marketplace/README.md``, shipped as the .vsix's README) carries a table of
every setting that decides what is sent where, with its default, between
``<!-- privacy-settings`` and ``<!-- /privacy-settings -->``. Each default must equal package.json's
and, for a setting the server reads, the server's own (``ServerSettings``): changing a default that
sends data without changing the page fails here. Every setting of the data-sending families must
be in the table, and the statements the page once got wrong must not come back.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.settings.test_defaults_match_manifest import CLIENT_ONLY, manifest_defaults, server_defaults

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "extension" / "marketplace" / "README.md"

SENDS_DATA = re.compile(
    r"^(baseUrl|model\.(provider|openaiCompatible\.baseUrl|bedrock\.region|vertex\.(projectId|region))"
    r"|context\..+|mcp\.servers|remote\.(url|endpoint|encrypt)|metrics\.port)$"
)
"""Settings that decide what leaves the machine or where it goes (the families the page lists)."""


def page_table() -> dict[str, Any]:
    text = PAGE.read_text("utf-8")
    block = re.search(r"<!-- privacy-settings(.*?)<!-- /privacy-settings -->", text, re.DOTALL)
    assert block is not None, "the privacy table's markers are missing from the Marketplace page"
    rows: dict[str, Any] = {}
    for line in block.group(1).splitlines():
        m = re.match(r"^\|\s*`retrace\.([\w.]+)`\s*\|\s*`(.*?)`\s*\|", line)
        if m:
            rows[m.group(1)] = json.loads(m.group(2))
    return rows


def test_the_table_is_found_and_not_empty() -> None:
    assert len(page_table()) >= 6


def test_every_data_sending_setting_is_on_the_page() -> None:
    wanted = {k for k in manifest_defaults() if SENDS_DATA.match(k)}
    assert wanted, "the pattern finds nothing: it is out of date"
    missing = wanted - set(page_table())
    assert not missing, f"missing from the privacy table: {sorted(missing)}"


@pytest.mark.parametrize("key", sorted(page_table()))
def test_page_default_equals_the_code(key: str) -> None:
    shown = page_table()[key]
    manifest = manifest_defaults()
    assert key in manifest, f"the privacy table names retrace.{key}, which package.json does not contribute"
    assert shown == manifest[key], f"retrace.{key}: page says {shown!r}, package.json {manifest[key]!r}"
    if key not in CLIENT_ONLY:
        server = server_defaults()[key]
        expected = (None, "") if shown == "" else (shown,)
        assert server in expected, f"retrace.{key}: page {shown!r}, server {server!r}"


@pytest.mark.parametrize(
    "claim",
    [
        "talks to **one** service",
        "not your open\neditors",
        "never\nuploaded",
        "are never uploaded",
        "Network access to PyPI once",
    ],
)
def test_statements_that_were_wrong_stay_gone(claim: str) -> None:
    flat = " ".join(PAGE.read_text("utf-8").split())
    assert " ".join(claim.split()) not in flat


def test_the_page_names_every_place_data_can_go() -> None:
    flat = " ".join(PAGE.read_text("utf-8").split())
    for needle in ("selections", "MCP", "uploaded", "python-build-standalone", "GitHub", "PyPI"):
        assert needle in flat, needle
