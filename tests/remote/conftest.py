"""Fixtures of the remote tests: a real S3 server (:class:`S3Server`) per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.remote.s3server import S3Server


@pytest.fixture
def s3(tmp_path: Path) -> Iterator[S3Server]:
    """A running ``rclone serve s3`` on a free loopback port, bucket ``bucket``; stopped after."""
    server = S3Server(tmp_path / "s3data")
    server.start()
    try:
        yield server
    finally:
        server.stop()
