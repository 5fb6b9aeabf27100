"""The checkpoint engine runs on (simulated) Windows: no ``dir_fd``, no ``O_NOFOLLOW``/
``O_CLOEXEC``/``O_DIRECTORY``, no ``pread``/``fchmod``, no ``fcntl``. The real ``retrace`` CLI
(``init``, ``checkpoint``, ``restore``) runs in an isolated interpreter under
:data:`~tests.portability.simulated_windows.PRELUDE`, picks the portable file-system backend by
itself, and brings files back byte for byte (line endings untouched: no text-mode descriptor).

What this cannot show: the real Windows kernel, NTFS, junctions and the ``st_file_attributes``
of a real reparse point (their rule is unit-tested in ``test_fs_backends.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.portability.simulated_windows import PRELUDE

pytestmark = pytest.mark.slow

_ROUND_TRIP = textwrap.dedent(
    """
    import contextlib, io, json, os, sys
    from retrace.cli.main import main
    from retrace.engine.fsops import choice
    ws, store = sys.argv[1], sys.argv[2]
    common = ["--workspace", ws, "--store", store]

    def put(rel, data):
        p = os.path.join(ws, *rel.split("/"))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)

    def snapshot():
        out = {}
        for d, dirs, files in os.walk(ws):
            dirs[:] = [x for x in dirs if x != ".git"]
            for name in files:
                p = os.path.join(d, name)
                with open(p, "rb") as f:
                    out[os.path.relpath(p, ws).replace(os.sep, "/")] = f.read().hex()
        return out

    def run(*args):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = main([*args, *common, "--json"])
        return code, buf.getvalue()

    def cp_id(text):
        doc = json.loads(text)
        return doc.get("id") or doc["head"]["id"]

    put("a.txt", b"one\\r\\ntwo\\n")
    code0, out0 = run("init")
    put("a.txt", b"changed\\n")
    put("src/deep/b.bin", bytes(range(256)) * 3)
    put("c.txt", b"\\n\\n")
    code1, out1 = run("checkpoint")
    second = snapshot()
    os.remove(os.path.join(ws, "c.txt"))
    put("src/deep/b.bin", b"other")
    code2, out2 = run("checkpoint")
    code3, _ = run("restore", cp_id(out1))
    after_second = snapshot()
    code4, _ = run("restore", cp_id(out0))
    print(json.dumps({
        "backend": choice(), "codes": [code0, code1, code2, code3, code4],
        "second_ok": after_second == second, "baseline": snapshot(),
        "dirs_left": sorted(os.listdir(ws)),
    }))
    """
)


def _run(tmp_path: Path, body: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-I", "-c", PRELUDE + body, str(ws), str(tmp_path / "store")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def test_checkpoint_and_restore_on_simulated_windows(tmp_path: Path) -> None:
    import os

    env = {k: v for k, v in os.environ.items() if k != "RETRACE_FS_BACKEND"}
    out = _run(tmp_path, _ROUND_TRIP, env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["backend"] == "portable", "no dir_fd: the portable backend is chosen by itself"
    assert result["codes"] == [0, 0, 0, 0, 0]
    assert result["second_ok"], "the restore to the second checkpoint is byte for byte"
    assert result["baseline"] == {"a.txt": b"one\r\ntwo\n".hex()}, "CRLF kept, later files gone"
    assert result["dirs_left"] == ["a.txt"], "directories the restore emptied are removed, no trash left"


@pytest.mark.parametrize("value", ["posix", "fast", "POSIX "])
def test_a_backend_windows_cannot_run_is_refused_in_one_line(tmp_path: Path, value: str) -> None:
    import os

    body = (
        "\nimport sys\nfrom retrace.cli.main import main\n"
        "raise SystemExit(main(['init', '--workspace', sys.argv[1], '--store', sys.argv[2]]))\n"
    )
    out = _run(tmp_path, body, {**os.environ, "RETRACE_FS_BACKEND": value})
    assert out.returncode == 1, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("retrace: error:"), out.stderr
    assert "RETRACE_FS_BACKEND" in lines[0]
    assert not (tmp_path / "store").exists(), "nothing is written before the refusal"
