"""The model SDKs' clients share one TLS context per process (retrace.agent.model.sdk_http), and a
request's tool list is built from schemas made once (retrace.agent.tools.base.input_schema_of).

Both are caches: these tests check that what is cached is what was built before (a verifying
context from the SDKs' own rule; pydantic's schema without title and description), that it is
built once, and that it follows what it depends on (the CA variables; a caller's changes to its
copy do not reach the next caller)."""

from __future__ import annotations

import copy
import ssl
from pathlib import Path
from typing import Any

import httpcore2
import pytest
from pydantic import BaseModel

from retrace.agent.model import sdk_http
from retrace.agent.runtime import warm_sdk
from retrace.agent.tools import TOOLS, tool_schemas
from retrace.agent.tools.base import input_schema_of


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[ssl.SSLContext]:
    """Every context the SDKs' rule builds from now on. The CA variables get values no other
    test uses (an empty certificate folder), so the process's cache holds nothing for them yet."""
    made: list[ssl.SSLContext] = []
    real = httpcore2.default_ssl_context

    def counting() -> ssl.SSLContext:
        made.append(real())
        return made[-1]

    monkeypatch.setattr(httpcore2, "default_ssl_context", counting)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    return made


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The SSL context of every connection pool a client makes from now on (what its
    connections would be opened with)."""
    seen: list[object] = []
    real = httpcore2.AsyncConnectionPool.__init__

    def recording(self: httpcore2.AsyncConnectionPool, *args: Any, **kwargs: Any) -> None:
        seen.append(kwargs.get("ssl_context"))
        real(self, *args, **kwargs)

    monkeypatch.setattr(httpcore2.AsyncConnectionPool, "__init__", recording)
    return seen


def test_every_client_of_a_process_shares_one_verifying_context(
    built: list[ssl.SSLContext], pools: list[object]
) -> None:
    sdk_http.anthropic_sdk("https://api.example.test", "k")
    sdk_http.anthropic_sdk(None, None, "token")
    sdk_http.openai_sdk("https://llm.example.test/v1", "k")
    assert len(built) == 1
    assert pools == [built[0]] * 3
    assert built[0].verify_mode == ssl.CERT_REQUIRED
    assert built[0].check_hostname


def test_the_ca_variables_pick_their_own_context(
    built: list[ssl.SSLContext], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    first = sdk_http.tls_context()
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.setenv("SSL_CERT_DIR", str(other))
    second = sdk_http.tls_context()
    assert second is not first
    assert sdk_http.tls_context() is second
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    assert sdk_http.tls_context() is first
    assert built == [first, second]


def test_warming_the_sdk_builds_the_context_a_first_client_then_uses(
    built: list[ssl.SSLContext], pools: list[object]
) -> None:
    warm_sdk()
    assert len(built) == 1
    sdk_http.anthropic_sdk("http://127.0.0.1:9", "k")
    assert pools == built


class _Input(BaseModel):
    """A description the model must not see as the schema's own."""

    path: str
    lines: list[int] = []


def test_a_tool_schema_is_pydantics_without_title_and_description_and_each_caller_owns_its_copy() -> None:
    expected = _Input.model_json_schema()
    del expected["title"], expected["description"]
    first = input_schema_of(_Input)
    assert first == expected
    first["properties"]["path"]["type"] = "integer"
    first["required"].append("lines")
    assert input_schema_of(_Input) == expected


def test_the_tools_list_is_the_same_on_every_request() -> None:
    listed = tool_schemas()
    pristine = copy.deepcopy(listed)
    assert [t["name"] for t in listed] == list(TOOLS)
    for tool in listed:
        tool["input_schema"].clear()
        tool["name"] = "changed"
    assert tool_schemas() == pristine
