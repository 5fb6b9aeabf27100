"""A server start does not import the model SDK: importing it costs seconds of CPU, all before
the first timeline answer. It is imported on first use (a turn makes its client) and, in a
server, in the background some time after start-up. Checked in a fresh interpreter (this test
process has imported the SDK long ago): the server's modules imported, the services opened
on a store with settled sessions, the first timeline tree answered."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    import retrace.lsp.main  # everything the server imports on start
    from retrace.agent.notifications import AgentHost
    from retrace.agent.settings import AgentSettings
    from retrace.bootstrap import ModelEndpoint, open_services
    from retrace.engine.store.events import TurnEvent
    from retrace.lsp.services import timeline
    from retrace.protocol.timeline import TimelineTreeParams

    class Host(AgentHost):
        async def emit(self, event): pass

    async def start(ws, store):
        services = await open_services(ws, store, Host(), AgentSettings(), endpoint=ModelEndpoint())
        try:
            params = TimelineTreeParams.model_validate({"outline": True, "maxRows": 500})
            await timeline.tree(services, params)
            if sys.argv[3] == "session":
                services.engine.new_session("ses_a")
                services.engine.append_event(TurnEvent(turn_id="t1", text="task"), session_id="ses_a")
        finally:
            services.close()

    asyncio.run(start(Path(sys.argv[1]), Path(sys.argv[2])))
    print("anthropic" in sys.modules)
    """
)


def _start(ws: Path, store: Path, what: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(ws), str(store), what],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip()


def test_a_server_start_does_not_import_the_model_sdk(tmp_path: Path) -> None:
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    assert _start(ws, store, "session") == "False"  # a new store, a session written
    assert _start(ws, store, "") == "False"  # a start that folds that session
    assert _start(ws, store, "") == "False"  # a start with every session settled
