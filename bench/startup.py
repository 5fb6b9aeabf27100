"""``python -m bench.startup``: server start-up with hundreds of sessions in the store.

Builds (once, cached under ``bench/.work/startup-<shape>/``) a workspace of a few hundred files
and a store holding ``--sessions`` agent sessions of ``--calls`` tool calls each (turn, prompt,
assistant message with a ``tool_use``, intent, result, checkpoint, tool results — the journal
lines a real turn writes), written through the engine's own API. ``--big N`` adds one session of
``N`` checkpoints (the 10,000-checkpoint case).

``--long`` uses instead the 10,000-checkpoint session of ``tests/e2e/seed_long.py`` (500 turns of
20 tool calls, generated once and cached).

Then it times a REAL server process (``python -m retrace serve`` over stdio JSON-RPC): spawn →
``initialize`` → first ``retrace/timeline/tree`` answer (as the extension asks it: an outline
with the newest 500 rows of the focused story), and then ``retrace/session/list``. Each is run
``--runs`` times in three states, side by side: cold (every cache in ``<store>/cache/`` removed
first: history index, session index, timeline cache), warm (all present) and warm without the
timeline cache (only ``timeline.json`` removed: what the persisted timeline saves). Reports p50
per phase: wall clock, and the server process's own CPU time (user + system, from ``/proc``:
steadier than wall clock on a shared machine). ``--server DIR`` runs another checkout's server
(``DIR/server``) on the same store, for a before/after ratio. Timings are from a shared machine:
compare ratios, not ms.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work"
SERVER_DIR = ROOT / "server"


# --------------------------------------------------------------------------- building the store


def _ws_files(ws: Path, count: int, rng: random.Random) -> list[str]:
    paths = []
    for i in range(count):
        rel = f"src/pkg{i % 12}/mod{i}.py"
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(f"def f{j}(x):\n    return x + {rng.randint(0, 999)}\n\n" for j in range(20)))
        paths.append(rel)
    return paths


def _session(engine: Any, ws: Path, files: list[str], calls: int, rng: random.Random, n: int) -> None:
    from retrace.engine.store.events import (
        MessageEvent,
        ToolCallIntentEvent,
        ToolCallResultEvent,
        TurnEvent,
    )

    sid = engine.new_session(f"ses_bench{n:05d}")
    turn = f"turn_{n:05d}"
    now = "2026-12-01T10:00:00+00:00"
    engine.append_event(
        TurnEvent(turn_id=turn, text=f"task {n}: refactor module {n % 97}", created_at=now), durable=False
    )
    prev = f"msg_{n:05d}_p"
    engine.append_event(
        MessageEvent(
            id=prev,
            parent=None,
            role="user",
            content=[{"type": "text", "text": f"task {n}"}],
            turn_id=turn,
            kind="prompt",
            created_at=now,
        ),
        durable=False,
    )
    for c in range(calls):
        rel = rng.choice(files)
        call = f"toolu_{n:05d}_{c:05d}"
        aid = f"msg_{n:05d}_{c:05d}a"
        inp = {"path": rel, "old_string": "x + 1", "new_string": "x + 2"}
        engine.append_event(
            MessageEvent(
                id=aid,
                parent=prev,
                role="assistant",
                turn_id=turn,
                kind="assistant",
                created_at=now,
                content=[
                    {"type": "text", "text": "Editing."},
                    {"type": "tool_use", "id": call, "name": "edit_file", "input": inp},
                ],
            ),
            durable=False,
        )
        engine.append_event(
            ToolCallIntentEvent(
                id=call, tool="edit_file", input=inp, turn_id=turn, message_id=aid, created_at=now
            ),
            durable=False,
        )
        path = ws / rel
        with path.open("a") as f:
            f.write(f"# edit {n}.{c}\n")
        engine.append_event(
            ToolCallResultEvent(
                id=call,
                tool="edit_file",
                status="ok",
                output=f"Edited {rel}.",
                changed_paths=[rel],
                turn_id=turn,
            ),
            durable=False,
        )
        engine.checkpoint(
            f"edit_file: {rel}",
            [rel],
            kind="tool",
            session_id=sid,
            turn_id=turn,
            tool="edit_file",
            tool_call_id=call,
            conversation=aid,
        )
        prev = f"msg_{n:05d}_{c:05d}r"
        engine.append_event(
            MessageEvent(
                id=prev,
                parent=aid,
                role="user",
                turn_id=turn,
                kind="toolResults",
                created_at=now,
                content=[{"type": "tool_result", "tool_use_id": call, "content": f"Edited {rel}."}],
            ),
            durable=False,
        )
    engine.append_event(
        MessageEvent(
            id=f"msg_{n:05d}_end",
            parent=prev,
            role="assistant",
            turn_id=turn,
            kind="assistant",
            created_at=now,
            content=[{"type": "text", "text": "Done."}],
        ),
        durable=True,
    )


def build_long() -> tuple[Path, Path]:
    """The 10,000-checkpoint session of ``tests/e2e/seed_long.py``, copied once under ``WORK``."""
    base = WORK / "startup-long-500x20"
    ws, store = base / "ws", base / "store"
    if (base / "done").exists():
        return ws, store
    shutil.rmtree(base, ignore_errors=True)
    ws.mkdir(parents=True)
    sys.path[:0] = [str(SERVER_DIR), str(ROOT / "tests" / "e2e")]
    from seed_long import cached, copy_to  # type: ignore[import-not-found]

    copy_to(cached(), ws, store)
    (base / "done").write_text("ok\n")
    return ws, store


def build(sessions: int, calls_lo: int, calls_hi: int, files: int, big: int) -> tuple[Path, Path]:
    """The cached workspace and store (built when missing)."""
    shape = f"s{sessions}-c{calls_lo}_{calls_hi}-f{files}-b{big}"
    base = WORK / f"startup-{shape}"
    ws, store = base / "ws", base / "store"
    if (base / "done").exists():
        return ws, store
    shutil.rmtree(base, ignore_errors=True)
    ws.mkdir(parents=True)
    sys.path.insert(0, str(SERVER_DIR))
    from retrace.engine.engine import Engine

    rng = random.Random(12)
    paths = _ws_files(ws, files, rng)
    t0 = time.perf_counter()
    with Engine.open(ws, store) as engine:
        for n in range(sessions):
            _session(engine, ws, paths, rng.randint(calls_lo, calls_hi), rng, n)
        if big:
            _session(engine, ws, paths, big, rng, sessions)
    (base / "done").write_text("ok\n")
    print(f"built {base} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return ws, store


# --------------------------------------------------------------------------- a raw stdio client


class Rpc:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.next_id = 0

    def send(self, method: str, params: Any, *, notify: bool = False) -> int | None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        rid = None
        if not notify:
            self.next_id += 1
            rid = msg["id"] = self.next_id
        body = json.dumps(msg).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return rid

    def _read(self) -> dict[str, Any]:
        out = self.proc.stdout
        assert out is not None
        length = 0
        while True:
            line = out.readline()
            if not line:
                raise RuntimeError("server closed its output")
            if line in (b"\r\n", b"\n"):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        result: dict[str, Any] = json.loads(out.read(length))
        return result

    def call(self, method: str, params: Any) -> Any:
        rid = self.send(method, params)
        while True:
            msg = self._read()
            if msg.get("id") == rid and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result")
            if "method" in msg and "id" in msg:  # a server request (configuration…): answer empty
                self._answer(msg)

    def _answer(self, msg: dict[str, Any]) -> None:
        result: Any = [None] if msg["method"] == "workspace/configuration" else None
        body = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()


def _cpu_ms(pid: int) -> float:
    """User + system CPU time of a live process so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _hwm_mib(pid: int) -> float:
    """Peak resident set size of a live process so far (``VmHWM``, Linux ``/proc``; 0 elsewhere)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    line = next((ln for ln in status.splitlines() if ln.startswith("VmHWM:")), "VmHWM: 0 kB")
    return int(line.split()[1]) / 1024


def one_run(ws: Path, store: Path, server: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(server), "ANTHROPIC_API_KEY": "", "RETRACE_FAKE_MODEL": ""}
    # As an editor starts it: the server's bytecode cached (a shell that sets
    # PYTHONDONTWRITEBYTECODE would have every start compile ~200 modules, ≈ 0.4 s of CPU).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "retrace", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=str(ws),
    )
    rpc = Rpc(proc)
    try:
        rpc.call(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": ws.as_uri(),
                "capabilities": {},
                "initializationOptions": {"storeDir": str(store)},
            },
        )
        t_init = time.perf_counter()
        c_init = _cpu_ms(proc.pid)
        rpc.send("initialized", {}, notify=True)
        tree = rpc.call("retrace/timeline/tree", TREE)
        t_tree = time.perf_counter()
        c_tree = _cpu_ms(proc.pid)
        listed = rpc.call("retrace/session/list", {})
        t_list = time.perf_counter()
        c_list = _cpu_ms(proc.pid)
        hwm_tree = _hwm_mib(proc.pid)
        rpc.call("shutdown", None)
        rpc.send("exit", None, notify=True)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return {
        "initialize": (t_init - t0) * 1000,
        "first_tree": (t_tree - t0) * 1000,
        "tree_after_initialize": (t_tree - t_init) * 1000,
        "session_list": (t_list - t_tree) * 1000,
        "cpu_initialize": c_init,
        "cpu_first_tree": c_tree,
        "cpu_after_initialize": c_tree - c_init,
        "cpu_session_list": c_list - c_tree,
        "peak_rss_mib": hwm_tree,
        "sessions_in_tree": float(len(tree["sessions"])),
        "sessions_listed": float(len(listed["sessions"])),
    }


TREE = {"outline": True, "maxRows": 500, "focus": None}
"""The first timeline request the extension sends."""
CACHES = ("history-index.json", "agent-sessions.json", "timeline.json")
STATES: dict[str, tuple[str, ...]] = {
    # label: the cache files removed before each run
    "cold (no cache)": CACHES,
    "warm, no timeline cache": ("timeline.json",),
    "warm (caches present)": (),
}


def index_paths(store: Path, names: tuple[str, ...] = CACHES) -> list[Path]:
    return [store / "cache" / name for name in names]


def measure(ws: Path, store: Path, server: Path, runs: int, removed: tuple[str, ...]) -> dict[str, float]:
    rows = []
    for _ in range(runs):
        for p in index_paths(store, removed):
            p.unlink(missing_ok=True)
        rows.append(one_run(ws, store, server))
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def timeline_only(ws: Path, store: Path, server: Path) -> dict[str, float]:
    """CPU ms of the first timeline answer alone (in this process, the engine already open):
    folding every journal vs from the persisted timeline cache."""
    sys.path.insert(0, str(server))
    from retrace.app.timeline import TimelineCache, select
    from retrace.engine.engine import Engine
    from retrace.protocol.timeline import TimelineTreeParams

    params = TimelineTreeParams.model_validate(TREE)
    out: dict[str, float] = {}
    with Engine.open(ws, store, readonly=True) as engine:
        for label, path in (("cold", None), ("warm", store / "cache" / "timeline.json")):
            t0 = time.process_time()
            pages = TimelineCache(path).stories(engine)
            select(list(pages.values()), params)
            out[label] = (time.process_time() - t0) * 1000
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=300)
    ap.add_argument("--calls", default="20-40", help="tool calls per session (lo-hi)")
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--big", type=int, default=0, help="also one session of this many checkpoints")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--server", type=Path, default=ROOT, help="checkout whose server/ to run")
    ap.add_argument(
        "--only", choices=("cold", "warm"), help="only the states starting with this (warm: both warm ones)"
    )
    ap.add_argument("--cached", action="store_true", help="only the warm state with every cache present")
    ap.add_argument("--long", action="store_true", help="the 10,000-checkpoint seed_long session instead")
    args = ap.parse_args(argv)
    server = args.server.resolve() / "server"
    lo, _, hi = args.calls.partition("-")
    if args.long:
        ws, store = build_long()
        print(f"store: {store} (one session of 10,000 checkpoints); server: {server}")
    else:
        ws, store = build(args.sessions, int(lo), int(hi or lo), args.files, args.big)
        shape = f"{args.sessions} sessions, calls {args.calls}, big {args.big}"
        print(f"store: {store} ({shape}); server: {server}")
    for label, removed in STATES.items():
        if args.only is not None and not label.startswith(args.only):
            continue
        if args.cached and removed:
            continue
        if removed != CACHES:
            one_run(ws, store, server)  # make sure the caches exist
        r = measure(ws, store, server, args.runs, removed)
        print(
            f"{label:24} p50 of {args.runs}: wall: initialize {r['initialize']:.0f} ms, "
            f"spawn→first timeline/tree {r['first_tree']:.0f} ms "
            f"(initialize→tree {r['tree_after_initialize']:.0f} ms), then session/list "
            f"{r['session_list']:.0f} ms ({r['sessions_listed']:.0f} sessions)\n"
            f"{'':24} server CPU: up to initialize {r['cpu_initialize']:.0f} ms, initialize→first tree "
            f"{r['cpu_after_initialize']:.0f} ms, session/list {r['cpu_session_list']:.0f} ms\n"
            f"{'':24} server peak RSS (VmHWM) after the first tree and session/list: "
            f"{r['peak_rss_mib']:.0f} MiB; load average {os.getloadavg()[0]:.1f}"
        )
    if args.only is None:
        t = timeline_only(ws, store, server)
        print(
            f"{'timeline build alone':24} CPU in process (engine open): from journals {t['cold']:.0f} ms, "
            f"from the timeline cache {t['warm']:.0f} ms ({t['cold'] / max(t['warm'], 1e-3):.1f}x)"
        )


if __name__ == "__main__":
    main()
