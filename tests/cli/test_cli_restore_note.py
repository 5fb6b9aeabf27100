"""``retrace restore --mode code`` tells the model which files it reverted, like an editor code
restore does (one owner: :func:`retrace.app.restore_side.tell_code_restore`).

Real CLI subprocesses on a real store: a headless run against the local fake model, a code-only
restore from the command line, then the session's next prompt (``retrace run --session``) carries
the note, journaled with the prompt; a dry run, a conversation restore and a plain (non-agent)
checkpoint leave none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.cli.cli_support import RETRACE, Cli

from retrace.engine import Engine
from retrace.engine.store.events import event_json

pytestmark = pytest.mark.slow

NOTE = "[Retrace note: the workspace files were restored to checkpoint"


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    assert RETRACE.exists(), f"console script missing: {RETRACE} (run scripts/setup-python.sh)"
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("def main():\n    return 1\n")
    c = Cli(ws, tmp_path / "store")
    c.env = {k: v for k, v in c.env.items() if not k.startswith("ANTHROPIC_")}
    c.env["RETRACE_FAKE_MODEL"] = "e2e"
    c("init")
    return c


def _prompt_texts(cli: Cli, session: str) -> list[str]:
    """Every text block of the user messages journaled in ``session``, in order."""
    with Engine.open(cli.workspace, cli.store, readonly=True) as engine:
        events = [event_json(e) for e in engine.events(session)]
    texts: list[str] = []
    for ev in events:
        if ev.get("type") != "message" or ev.get("role") != "user":
            continue
        content: Any = ev.get("content")
        if isinstance(content, list):
            texts += [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    assert texts, "no prompt read back: the journal shape changed"
    return texts


def _run_once(cli: Cli) -> tuple[str, list[dict[str, Any]]]:
    cli("run", "make the e2e changes")
    tools = [c for c in cli.json("log") if c["kind"] == "tool"]
    assert len(tools) >= 2, tools
    return tools[0]["sessionId"], tools


def test_cli_code_restore_leaves_the_note_for_the_next_prompt(cli: Cli) -> None:
    session, tools = _run_once(cli)
    first = tools[0]["id"]
    changed = {f["path"] for t in tools[1:] for f in t["files"]}
    out = cli.json("restore", first, "--mode", "code")
    assert out["kind"] == "applied", out
    assert not any(NOTE in t for t in _prompt_texts(cli, session))  # told at the next prompt only

    cli("run", "--session", session, "what now?")
    assert "what now?" in _prompt_texts(cli, session)
    notes = [t for t in _prompt_texts(cli, session) if t.startswith(NOTE)]
    assert len(notes) == 1, notes
    assert first in notes[0]
    assert any(path in notes[0] for path in changed), (notes[0], changed)


@pytest.mark.parametrize(
    ("extra", "why"),
    [(["--dry-run"], "a dry run restores nothing"), (["--mode", "both"], "the conversation moved too")],
    ids=["dry-run", "both"],
)
def test_cli_restore_leaves_no_code_note_when_nothing_to_tell(cli: Cli, extra: list[str], why: str) -> None:
    session, tools = _run_once(cli)
    args = ["restore", tools[0]["id"], *extra]
    if "--mode" not in extra:
        args += ["--mode", "code"]
    cli.json(*args)
    cli("run", "--session", session, "what now?")
    assert not any(t.startswith(NOTE) for t in _prompt_texts(cli, session)), why


def test_cli_code_restore_of_a_plain_checkpoint_tells_nobody(cli: Cli) -> None:
    """A checkpoint of no conversation (``retrace checkpoint``): nobody to tell, and no error."""
    (cli.workspace / "src" / "app.py").write_text("def main():\n    return 2\n")
    cp = cli("checkpoint").stdout.strip()
    (cli.workspace / "src" / "app.py").write_text("def main():\n    return 3\n")
    out = cli.json("restore", cp, "--mode", "code", "--force")
    assert out["kind"] == "applied", out
    assert (cli.workspace / "src" / "app.py").read_text() == "def main():\n    return 2\n"
