"""``python -m bench.torn_guard``: what the torn-read guard costs a just-written file.

``scan.read_entry`` guards a file whose ctime is within ``SETTLE_NS`` of now (just written: every
file a shell call or a formatter run touched): it reads it under a read lease where the kernel
grants one, else reads it a second time and compares. This measures ``read_entry`` over N real
files three ways in one process, interleaved, best of ``--repeat``: ``settled`` (``SETTLE_NS =
0``: one read each), ``fresh`` (every file guarded: the shell-capture case) and, for scale, the
per-file capture work of a fresh file (``read_entry`` hashes; zstd is what a blob store put
adds). CPU time of this process (``time.process_time``), so other load on the machine does not
count; the files are in the page cache (a capture reads what was just written).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import zstandard

from retrace.engine.capture import scan
from retrace.engine.store.blobs import ZSTD_LEVEL


def _files(root: Path, count: int, size: int) -> list[str]:
    line = b"    value = compute(alpha, beta)  # a line of real-looking code\n"
    body = (line * (size // len(line) + 1))[:size]
    paths = []
    for i in range(count):
        d = root / f"d{i // 200}"
        d.mkdir(exist_ok=True)
        p = d / f"m{i}.py"
        p.write_bytes(body[:-8] + f"{i:08d}".encode())
        paths.append(str(p))
    return paths


def _cpu(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.torn_guard", description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=10_000)
    p.add_argument("--size", type=int, default=4096, help="bytes per file")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="rt-torn-"))
    try:
        paths = _files(root, args.files, args.size)
        stats = [os.lstat(x) for x in paths]
        cctx = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
        settle = scan.SETTLE_NS

        def read_all(settle_ns: int, store: bool = False) -> None:
            scan.SETTLE_NS = settle_ns
            for path, st in zip(paths, stats, strict=True):
                r = scan.read_entry(path, st, 1 << 30)
                if store and r is not None and r.data is not None:
                    cctx.compress(r.data)

        try:
            settled = _cpu(lambda: read_all(0), args.repeat)
            fresh = _cpu(lambda: read_all(1 << 62), args.repeat)
            capture = _cpu(lambda: read_all(1 << 62, store=True), args.repeat)
        finally:
            scan.SETTLE_NS = settle
    finally:
        shutil.rmtree(root, ignore_errors=True)
    n = args.files
    load = os.getloadavg()[0]
    print(f"files {n} × {args.size} B, load average {load:.1f}, CPU time, best of {args.repeat}")
    print(f"read_entry (open, read, sha256), settled: {settled * 1e6 / n:7.1f} µs/file")
    ratio = fresh / settled
    print(f"read_entry, fresh (lease or second read): {fresh * 1e6 / n:7.1f} µs/file ({ratio:.2f}×)")
    print(f"fresh read_entry + zstd (capture work):   {capture * 1e6 / n:7.1f} µs/file")
    extra = (fresh - settled) / capture
    print(f"guard / per-file capture work:            {extra:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
