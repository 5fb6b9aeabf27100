"""The opt-in scrape endpoint: ``GET /metrics`` in the Prometheus text format, served by
``prometheus_client``'s own WSGI server on a daemon thread.

It binds 127.0.0.1 and nothing else: the address is not a parameter (a store's history is not
for the network; a team scrapes through its own agent or tunnel). Each scrape collects afresh
through ``provider`` (files only, no engine, no lock); the client library's process collector
adds the serving process's own ``process_*`` metrics (resident memory, CPU; Linux). Port 0 never
starts anything.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from retrace.app.metrics.exposition import StoreCollector

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from prometheus_client.metrics_core import Metric

    from retrace.app.metrics.collected import Collected

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"


class _FreshCollector:
    def __init__(self, provider: Callable[[], Collected]) -> None:
        self.provider = provider

    def collect(self) -> Iterator[Metric]:
        yield from StoreCollector(self.provider()).collect()


class MetricsEndpoint:
    """One running endpoint; :meth:`close` stops it (idempotent)."""

    def __init__(self, server: WSGIServer) -> None:
        self._server: WSGIServer | None = server

    @property
    def address(self) -> tuple[str, int]:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()


def serve(port: int, provider: Callable[[], Collected]) -> MetricsEndpoint | None:
    """Serve ``/metrics`` on 127.0.0.1:``port`` (``None`` when ``port`` is 0). ``OSError`` when
    the port cannot be bound."""
    if port == 0:
        return None
    from prometheus_client import CollectorRegistry, ProcessCollector, start_http_server

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_FreshCollector(provider))
    ProcessCollector(registry=registry)  # the serving process's memory and CPU (where /proc exists)
    server, _thread = start_http_server(port, addr=LOOPBACK, registry=registry)
    log.info("metrics served on http://%s:%d/metrics", LOOPBACK, port)
    return MetricsEndpoint(server)
