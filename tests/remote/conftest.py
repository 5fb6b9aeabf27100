"""Fixtures of the remote tests: a real S3 server (:class:`S3Server`) per test, and a fault proxy
in front of it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.remote.fault_proxy import FaultProxy
from tests.remote.s3server import S3Server, serving


@pytest.fixture
def s3(tmp_path: Path) -> Iterator[S3Server]:
    """A running ``rclone serve s3`` on a free loopback port, bucket ``bucket``; stopped after."""
    with serving(tmp_path / "s3data") as server:
        yield server


@pytest.fixture
def proxy(s3: S3Server) -> Iterator[FaultProxy]:
    """A :class:`FaultProxy` in front of ``s3`` (forwards everything until told otherwise)."""
    p = FaultProxy(s3.port).start()
    try:
        yield p
    finally:
        p.stop()
