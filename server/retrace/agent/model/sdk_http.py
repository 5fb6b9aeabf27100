"""The model SDKs' clients, built one way: the SDK's own HTTP defaults and one TLS context per process.

Each SDK client (the Anthropic API's, Bedrock's, Vertex AI's, an OpenAI-compatible one, one
made again after a settings change, the headless agent's) builds its own connection pool, and
each pool built its own SSL context by loading and parsing the CA bundle: ~30 ms of CPU per
client, the largest part of making one once the SDK is imported (measured in the server tests'
profile: 4 % of a test server's CPU). The context is the same for every client of a process, so
:func:`tls_context` builds it once, with the SDKs' own rule (httpx2's default context:
``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` from the environment, else the platform's trust store),
and again only for another value of those two variables. :func:`retrace.agent.runtime.warm_sdk`
builds it in the background after a server starts, beside the SDK's imports, so a first turn
waits for neither.

Only ``verify`` is passed to the SDK's own default HTTP client class: its timeouts, connection
limits, keep-alive options, redirects and proxies from the environment stay the SDK's.
"""

from __future__ import annotations

import os
import ssl
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic, DefaultAsyncHttpxClient
    from openai import AsyncOpenAI

_lock = threading.Lock()
_contexts: dict[tuple[str | None, str | None], ssl.SSLContext] = {}


def tls_context() -> ssl.SSLContext:
    """The process's TLS context for the model endpoints (built on first use; shared: an
    ``SSLContext`` is meant to serve many connections, and nothing here changes it)."""
    key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    with _lock:
        context = _contexts.get(key)
        if context is None:
            from httpcore2 import default_ssl_context  # the SDKs' transport: imported with them

            context = _contexts[key] = default_ssl_context()
        return context


def anthropic_http_client() -> DefaultAsyncHttpxClient:
    """The HTTP client for one Anthropic SDK client (the API's, Bedrock's or Vertex AI's): the
    SDK's own defaults with the process's TLS context."""
    from anthropic import DefaultAsyncHttpxClient  # imported on first use: seconds

    return DefaultAsyncHttpxClient(verify=tls_context())


def anthropic_sdk(base_url: str | None, api_key: str | None, auth_token: str | None = None) -> AsyncAnthropic:
    """An Anthropic API client; retries are the agent's own (reported as events), so the SDK's
    are off."""
    from anthropic import AsyncAnthropic

    return AsyncAnthropic(
        base_url=base_url,
        api_key=api_key,
        auth_token=auth_token,
        max_retries=0,
        http_client=anthropic_http_client(),
    )


def openai_sdk(base_url: str, api_key: str) -> AsyncOpenAI:
    """An OpenAI SDK client (retries off, as for :func:`anthropic_sdk`). Raises the SDK's own
    errors for options it refuses."""
    from openai import AsyncOpenAI, DefaultAsyncHttpxClient  # imported on first use

    return AsyncOpenAI(
        base_url=base_url,
        api_key=api_key,
        max_retries=0,
        http_client=DefaultAsyncHttpxClient(verify=tls_context()),
    )
