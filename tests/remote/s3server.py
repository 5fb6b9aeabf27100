"""A real S3-compatible server for the remote tests: ``rclone serve s3`` on a loopback port.

:class:`S3Server` owns one rclone process over one data folder; ``stop()`` kills it (SIGKILL, as
a crash or a network loss would), ``start()`` brings it back on the same port and data, so tests
can cut the server mid-upload and resume. A bucket is a sub-folder of the data folder.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.net_support import free_port

RCLONE = Path(sys.executable).parent / "rclone"
ACCESS_KEY = "retrace-test-access"
SECRET_KEY = "retrace-test-secret-key-0123456789"


class S3Server:
    def __init__(
        self, data: Path, *, bucket: str = "bucket", port: int | None = None, etag_hash: str = "MD5"
    ) -> None:
        self.data = data
        self.etag_hash = etag_hash
        """The hash rclone answers as each object's ETag (its default, MD5, as S3 does); ``""``: none.
        rclone hashes a whole object to answer a LIST, HEAD or GET of it (~6 CPU-seconds for a
        1 GiB object); Retrace reads no ETag (its objects are named and checked by their own
        hashes)."""
        self.bucket = bucket
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        (data / bucket).mkdir(parents=True, exist_ok=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, prefix: str = "team") -> str:
        return f"s3://{self.bucket}/{prefix}" if prefix else f"s3://{self.bucket}"

    def env(self) -> dict[str, str]:
        """The credentials a client needs, as the standard chain's variables."""
        return {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}

    def start(self) -> None:
        if self.proc is not None:
            return
        log = open(self.data.parent / f"rclone-{self.port}.log", "ab")  # noqa: SIM115 (kept for the process)
        self.proc = subprocess.Popen(
            [
                str(RCLONE),
                "serve",
                "s3",
                "--addr",
                f"127.0.0.1:{self.port}",
                "--auth-key",
                f"{ACCESS_KEY},{SECRET_KEY}",
                "--etag-hash",
                self.etag_hash,
                str(self.data),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "RCLONE_CONFIG": os.devnull},
        )
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"rclone exited with {self.proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("rclone did not start listening")

    def stop(self) -> None:
        """Kill the server (SIGKILL): connections drop as on a crash."""
        if self.proc is None:
            return
        self.proc.kill()
        self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def objects(self) -> dict[str, int]:
        """Every object in the bucket (key → size), read from the data folder."""
        root = self.data / self.bucket
        return {str(p.relative_to(root)): p.stat().st_size for p in sorted(root.rglob("*")) if p.is_file()}


@contextmanager
def serving(data: Path, *, etag_hash: str = "MD5") -> Iterator[S3Server]:
    """A running ``rclone serve s3`` over ``data`` on a free loopback port, bucket ``bucket``;
    stopped on exit (the one fixture body of the remote and LSP tests)."""
    server = S3Server(data, etag_hash=etag_hash)
    server.start()
    try:
        yield server
    finally:
        server.stop()
