"""How to write a checkpoint's blobs into git: one ``git fast-import`` stream (what
``retrace.app.handoff.tree`` does) against ``hash-object -w --stdin-paths`` over files written to
a temporary directory, and one ``hash-object -w --stdin`` per file. Reports per-file cost and
ratios (timings are noisy: compare ratios, not absolute numbers).

``python bench/git_blob_write.py [--files N] [--size BYTES]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@b",
}


def repo(root: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True, env=ENV)
    return root


def blobs(n: int, size: int, salt: str) -> list[bytes]:
    return [(f"{salt} file {i}\n" * (size // 16 + 1)).encode()[:size] for i in range(n)]


def fast_import(root: Path, data: list[bytes]) -> float:
    t = time.perf_counter()
    stream = bytearray()
    for d in data:
        stream += b"blob\ndata %d\n" % len(d) + d + b"\n"
    stream += b"done\n"
    subprocess.run(
        ["git", "fast-import", "--quiet", "--done"], cwd=root, input=bytes(stream), check=True, env=ENV
    )
    return time.perf_counter() - t


def stdin_paths(root: Path, data: list[bytes]) -> float:
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, d in enumerate(data):
            p = Path(tmp) / str(i)
            p.write_bytes(d)
            paths.append(str(p))
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin-paths", "--no-filters"],
            cwd=root,
            input="\n".join(paths).encode(),
            capture_output=True,
            check=True,
            env=ENV,
        )
    return time.perf_counter() - t


def per_file(root: Path, data: list[bytes]) -> float:
    t = time.perf_counter()
    for d in data:
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin"],
            cwd=root,
            input=d,
            capture_output=True,
            check=True,
            env=ENV,
        )
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--size", type=int, default=2048)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        fi = fast_import(repo(base / "a"), blobs(args.files, args.size, "a"))
        sp = stdin_paths(repo(base / "b"), blobs(args.files, args.size, "b"))
        few = min(args.files, 200)
        pf = per_file(repo(base / "c"), blobs(few, args.size, "c")) * args.files / few
    n = args.files
    print(f"{n} blobs of {args.size} bytes")
    print(f"fast-import:              {fi * 1e3:8.1f} ms  ({fi / n * 1e6:7.1f} us/blob)  1.00x")
    print(f"hash-object --stdin-paths:{sp * 1e3:8.1f} ms  ({sp / n * 1e6:7.1f} us/blob)  {sp / fi:5.2f}x")
    per = f"{pf * 1e3:8.1f} ms  ({pf / n * 1e6:7.1f} us/blob)  {pf / fi:5.2f}x"
    print(f"hash-object per file:     {per} (extrapolated from {few})")


if __name__ == "__main__":
    main()
