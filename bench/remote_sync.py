"""Remote sync figures against a real S3 server on loopback (``rclone serve s3``).

Machine A records ``--checkpoints`` checkpoints of ``--files`` fresh random files of ``--size``
bytes each, then pushes; machine B opens the session and restores the last checkpoint. Reports
push throughput (MB/s of objects sent, requests/s, blobs/s), an idempotent second push, the time
to open the session, and the first restore on B (blobs fetched lazily). Loopback to a local
rclone: the network is ~free here, so these are CPU/request-overhead figures, not WAN ones.

    .venv/bin/python -m bench.remote_sync --files 200 --size 20000 --checkpoints 10
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from tests.remote.s3server import S3Server

from retrace.engine import Engine
from retrace.sync import RemoteService
from retrace.sync.fetch import RemoteBlobs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100, help="new files per checkpoint")
    ap.add_argument("--size", type=int, default=20000, help="bytes per file")
    ap.add_argument("--checkpoints", type=int, default=10)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        s3 = S3Server(root / "s3")
        s3.start()
        try:
            run(root, s3, args)
        finally:
            s3.stop()


def run(root: Path, s3: S3Server, args: argparse.Namespace) -> None:
    env = {**s3.env(), "HOME": str(root)}
    a_ws, a_store = root / "a" / "ws", root / "a" / "store"
    a_ws.mkdir(parents=True)
    with Engine.open(a_ws, a_store, session_id="bench") as eng:
        for c in range(args.checkpoints):
            for f in range(args.files):
                (a_ws / f"c{c}-f{f}.bin").write_bytes(os.urandom(args.size))
            eng.checkpoint(f"step {c}")
    svc = RemoteService(a_store, a_ws, env=env)
    svc.add("origin", s3.url(), endpoint=s3.endpoint, workspace_name="bench")
    t0 = time.perf_counter()
    report = svc.push()
    push_s = time.perf_counter() - t0
    objects = len(s3.objects())
    t0 = time.perf_counter()
    again = svc.push()
    again_s = time.perf_counter() - t0

    b_ws, b_store = root / "b" / "ws", root / "b" / "store"
    b_ws.mkdir(parents=True)
    svc_b = RemoteService(b_store, b_ws, env=env)
    svc_b.add("origin", s3.url(), endpoint=s3.endpoint, workspace_name="bench")
    t0 = time.perf_counter()
    opened = svc_b.open("bench")
    open_s = time.perf_counter() - t0
    source = svc_b.blob_source()
    assert isinstance(source, RemoteBlobs)
    t0 = time.perf_counter()
    with Engine.open(b_ws, b_store, blob_source=source) as eng:
        eng.restore(eng.timeline("bench")[-1].id, force=True)
    restore_s = time.perf_counter() - t0

    mb = report.bytes / 1e6
    print(f"workload: {args.checkpoints} checkpoints x {args.files} files x {args.size} B (random)")
    print(
        f"push: {report.blobs} blobs in {report.packs} packs + {report.segments} segments, "
        f"{mb:.1f} MB in {push_s:.2f} s = {mb / push_s:.1f} MB/s, {report.blobs / push_s:.0f} blobs/s, "
        f"{objects} objects in the bucket ({objects / push_s:.1f} objects/s)"
    )
    print(f"second push (nothing new): {again_s * 1000:.0f} ms, up to date: {again.up_to_date}")
    print(f"open on machine B: {open_s * 1000:.0f} ms ({opened.checkpoints} checkpoints, {opened.bytes} B)")
    ranges = "yes" if source.ranges_supported() else "no, whole packs"
    print(
        f"first restore on B (lazy): {restore_s:.2f} s, {source.fetched} blobs fetched "
        f"of {len(source.ids())} in the remote (range reads: {ranges})"
    )


if __name__ == "__main__":
    main()
