"""How long finding the last restore takes on a cold server (``app/restore_undo.last_restore``:
every journal read once, restore lines only validated), against reading every event typed.

Usage: ``.venv/bin/python -m bench.undo_last [EVENTS]`` (default 20,000 assistant messages over
four session journals, one ``restoreRecord``). Prints both timings and the load average."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from retrace.app.restore_undo import last_restore
from retrace.engine import Engine
from retrace.engine.config import EngineConfig
from retrace.engine.store.events import MessageEvent, RestoreRecordEvent


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d) / "ws"
        ws.mkdir()
        (ws / "a.txt").write_text("x")
        with Engine.open(ws, Path(d) / "store", config=EngineConfig(watcher=False)) as e:
            for s in range(4):
                for i in range(n // 4):
                    text = [{"type": "text", "text": "word " * 60}]
                    message = MessageEvent(id=f"m{i}", parent=None, role="assistant", content=text)
                    e.append_event(message, session_id=f"s{s}", durable=False)
            e.append_event(RestoreRecordEvent(mode="code", target_id="t", code_before="c"), session_id="s1")
            size = sum(p.stat().st_size for p in (Path(d) / "store").rglob("journal.jsonl"))
            t = time.perf_counter()
            assert last_restore(e) is not None
            ours = time.perf_counter() - t
            t = time.perf_counter()
            for sid in e.sessions():
                for _ in e.events(sid):
                    pass
            typed = time.perf_counter() - t
    print(
        f"events={n} journals={size / 1e6:.1f} MB last_restore={ours * 1000:.0f} ms "
        f"typed_read={typed * 1000:.0f} ms load={os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
