"""``HookService.apply`` on a real engine and a real workspace: sessions, turns, the external
checkpoint before a tool, exactly one tool checkpoint after it, and what is refused or dropped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.app.hook_samples import SESSION, claude, claude_tool, gemini, gemini_tool

from retrace.app.hooks.model import HookRefused, session_id_for
from retrace.app.hooks.registry import adapter_for
from retrace.app.hooks.service import HookService, Recorded, TurnBegan, TurnClosed
from retrace.engine import Engine
from retrace.engine.store.events import AgentSessionEvent, CheckpointEvent, TurnEndEvent, TurnEvent

SID = session_id_for("claude-code", SESSION)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\n", "utf-8")
    (root / "old.txt").write_text("old\n", "utf-8")
    return root


@pytest.fixture
def engine(ws: Path, tmp_path: Path) -> Iterator[Engine]:
    eng = Engine.open(ws, tmp_path / "store", catch_up=False)
    yield eng
    eng.close()


def apply(service: HookService, engine: Engine, raw: dict[str, Any], agent: str = "claude-code") -> Any:
    return service.apply(engine, adapter_for(agent).parse(raw))


def files(cp: Any) -> set[str]:
    """Every path a checkpoint changed (a rename: both its names)."""
    return {f.path for f in cp.files} | {f.old_path for f in cp.files if f.old_path}


def test_a_claude_session_end_to_end(engine: Engine, ws: Path) -> None:
    svc, cwd = HookService(), str(ws)
    start = apply(svc, engine, claude("UserPromptSubmit", cwd, prompt="refactor"))
    assert start.session_id == SID
    (turn,) = [s for s in start.steps if isinstance(s, TurnBegan)]
    assert turn.text == "refactor"

    (ws / "user.txt").write_text("the user's edit\n", "utf-8")  # between two calls
    pre = apply(svc, engine, claude_tool("PreToolUse", cwd, "Write", {"file_path": f"{cwd}/src/b.py"}, "t1"))
    (ext,) = pre.checkpoints
    assert (ext.kind, ext.session_id, ext.turn_id, files(ext)) == (
        "external",
        SID,
        turn.turn_id,
        {"user.txt"},
    )
    (ws / "src" / "b.py").write_text("b = 2\n", "utf-8")
    post = apply(
        svc,
        engine,
        claude_tool(
            "PostToolUse", cwd, "Write", {"file_path": f"{cwd}/src/b.py", "content": "b = 2\n"}, "t1"
        ),
    )
    (cp,) = post.checkpoints
    assert (cp.kind, cp.tool, cp.tool_call_id, cp.label) == ("tool", "Write", "t1", "src/b.py")
    assert (cp.session_id, cp.turn_id, cp.meta) == (SID, turn.turn_id, {"agent": "claude-code"})
    assert files(cp) == {"src/b.py"}

    # Bash creating, deleting and renaming files: detected, exactly those.
    apply(svc, engine, claude_tool("PreToolUse", cwd, "Bash", {"command": "..."}, "t2"))
    (ws / "new.txt").write_text("n\n", "utf-8")
    (ws / "old.txt").unlink()
    (ws / "src" / "a.py").rename(ws / "src" / "moved.py")
    (bash,) = apply(
        svc,
        engine,
        claude_tool(
            "PostToolUse",
            cwd,
            "Bash",
            {"command": "touch new.txt && rm old.txt && mv src/a.py src/moved.py"},
            "t2",
        ),
    ).checkpoints
    assert files(bash) == {"new.txt", "old.txt", "src/a.py", "src/moved.py"}
    assert bash.label.startswith("touch new.txt")

    (read,) = apply(
        svc, engine, claude_tool("PostToolUse", cwd, "Read", {"file_path": f"{cwd}/src/b.py"}, "t3")
    ).checkpoints
    assert (read.tool, files(read)) == ("Read", set())

    stop = apply(svc, engine, claude("Stop", cwd))
    assert stop.steps == [TurnClosed(turn.turn_id, "stop")]
    events = list(engine.events(SID, skip={CheckpointEvent}))
    assert isinstance(events[0], AgentSessionEvent)
    assert (events[0].agent, events[0].external_session_id, events[0].cwd) == ("claude-code", SESSION, cwd)
    assert [type(e) for e in events] == [AgentSessionEvent, TurnEvent, TurnEndEvent]


def test_state_survives_a_new_service_and_engine(ws: Path, tmp_path: Path) -> None:
    # The command line opens the store once per hook: the running turn is read back from the journal.
    cwd = str(ws)
    with Engine.open(ws, tmp_path / "store", catch_up=False) as eng:
        began = apply(HookService(), eng, claude("UserPromptSubmit", cwd, prompt="p")).steps[0]
    with Engine.open(ws, tmp_path / "store", catch_up=False) as eng:
        (ws / "x.txt").write_text("x\n", "utf-8")
        (cp,) = apply(
            HookService(), eng, claude_tool("PostToolUse", cwd, "Write", {"file_path": "x.txt"}, "t9")
        ).checkpoints
        assert cp.turn_id == began.turn_id and files(cp) == {"x.txt"}
        again = apply(
            HookService(), eng, claude_tool("PostToolUse", cwd, "Write", {"file_path": "x.txt"}, "t9")
        )
        assert again.checkpoints == [] and "recorded already" in again.notes[0]
    with Engine.open(ws, tmp_path / "store", catch_up=False) as eng:
        assert apply(HookService(), eng, claude("Stop", cwd)).steps == [TurnClosed(began.turn_id, "stop")]
        types = [type(e) for e in eng.events(SID, skip={CheckpointEvent})]
        assert types == [AgentSessionEvent, TurnEvent, TurnEndEvent]


def test_a_tool_outside_any_turn_opens_one_and_a_new_prompt_closes_a_running_one(
    engine: Engine, ws: Path
) -> None:
    svc, cwd = HookService(), str(ws)
    first = apply(svc, engine, claude_tool("PostToolUse", cwd, "Bash", {"command": "ls"}, "t1"))
    assert isinstance(first.steps[0], TurnBegan) and first.steps[0].text == ""
    assert isinstance(first.steps[1], Recorded) and first.steps[1].turn_id == first.steps[0].turn_id
    nxt = apply(svc, engine, claude("UserPromptSubmit", cwd, prompt="next"))
    assert nxt.steps[0] == TurnClosed(first.steps[0].turn_id, "interrupted")
    assert isinstance(nxt.steps[-1], TurnBegan)
    assert apply(svc, engine, claude("Stop", cwd)).steps[0].turn_id == nxt.steps[-1].turn_id
    assert apply(svc, engine, claude("Stop", cwd)).steps == []  # no running turn: nothing to end


def test_paths_outside_are_dropped_and_a_foreign_cwd_is_refused(
    engine: Engine, ws: Path, tmp_path: Path
) -> None:
    svc, cwd = HookService(), str(ws)
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("x\n", "utf-8")
    out = apply(svc, engine, claude_tool("PostToolUse", cwd, "Write", {"file_path": str(outside)}, "t1"))
    (cp,) = out.checkpoints
    assert files(cp) == set()
    assert any("outside the workspace" in n for n in out.notes)
    escape = apply(
        svc,
        engine,
        claude_tool("PostToolUse", str(ws / "src"), "Edit", {"file_path": "../../elsewhere.txt"}, "t2"),
    )
    assert files(escape.checkpoints[0]) == set()
    with pytest.raises(HookRefused, match="not inside the workspace"):
        apply(svc, engine, claude("UserPromptSubmit", str(tmp_path), prompt="p"))
    with pytest.raises(HookRefused, match="not an absolute path"):
        apply(svc, engine, claude("UserPromptSubmit", "relative/dir", prompt="p"))


def test_a_relative_path_is_relative_to_the_events_cwd(engine: Engine, ws: Path) -> None:
    (ws / "src" / "c.py").write_text("c\n", "utf-8")
    (ws / "other.txt").write_text("not this one\n", "utf-8")
    out = apply(
        HookService(),
        engine,
        claude_tool("PostToolUse", str(ws / "src"), "Write", {"file_path": "c.py"}, "t"),
    )
    assert files(out.checkpoints[0]) == {"src/c.py"}


def test_gemini_session(engine: Engine, ws: Path) -> None:
    svc, cwd = HookService(), str(ws)
    apply(svc, engine, gemini("BeforeAgent", cwd, prompt="go"), "gemini-cli")
    apply(
        svc, engine, gemini_tool("BeforeTool", cwd, "replace", {"file_path": f"{cwd}/src/a.py"}), "gemini-cli"
    )
    (ws / "src" / "a.py").write_text("a = 3\n", "utf-8")
    (ws / "unrelated.txt").write_text("made meanwhile by someone\n", "utf-8")
    out = apply(
        svc, engine, gemini_tool("AfterTool", cwd, "replace", {"file_path": f"{cwd}/src/a.py"}), "gemini-cli"
    )
    (cp,) = out.checkpoints
    assert files(cp) == {"src/a.py"} and cp.meta == {"agent": "gemini-cli"}
    assert cp.session_id == session_id_for("gemini-cli", "g-" + SESSION)
    assert cp.tool_call_id and cp.tool_call_id.startswith("gemini-cli_")
    retry = apply(
        svc, engine, gemini_tool("AfterTool", cwd, "replace", {"file_path": f"{cwd}/src/a.py"}), "gemini-cli"
    )
    assert retry.checkpoints == [] and "recorded already" in retry.notes[0]  # the same event again
    end = apply(svc, engine, gemini("AfterAgent", cwd, prompt="go", prompt_response="ok"), "gemini-cli")
    assert isinstance(end.steps[0], TurnClosed)


def test_ignored_events_touch_nothing(engine: Engine, ws: Path) -> None:
    out = apply(HookService(), engine, claude("Notification", str(ws), message="m"))
    assert out.session_id is None and out.steps == []
    assert SID not in engine.sessions()


@pytest.mark.parametrize("tail", [64, 1 << 16])
def test_the_running_turn_is_read_from_the_journals_tail(
    engine: Engine, ws: Path, monkeypatch: pytest.MonkeyPatch, tail: int
) -> None:
    # A fresh service (the command line's cold path) finds the running turn however far back
    # its prompt is: the tail window grows until it holds a turn line.
    from retrace.app.hooks import service as service_module

    monkeypatch.setattr(service_module, "TAIL_BYTES", tail)
    cwd = str(ws)
    turn = apply(HookService(), engine, claude("UserPromptSubmit", cwd, prompt="long")).steps[-1].turn_id
    for n in range(12):
        (ws / f"f{n}.txt").write_text(f"{n}\n" * 50, "utf-8")
        (cp,) = apply(
            HookService(),
            engine,
            claude_tool("PostToolUse", cwd, "Write", {"file_path": f"f{n}.txt"}, f"t{n}"),
        ).checkpoints
        assert cp.turn_id == turn
    assert apply(HookService(), engine, claude("Stop", cwd)).steps == [TurnClosed(turn, "stop")]
    out = apply(HookService(), engine, claude_tool("PostToolUse", cwd, "Bash", {"command": "true"}, "tb"))
    assert isinstance(out.steps[0], TurnBegan)  # ended: a new (implicit) turn


def test_session_end_closes_a_running_turn_and_labels_are_redacted(engine: Engine, ws: Path) -> None:
    svc, cwd = HookService(), str(ws)
    turn = apply(svc, engine, claude("UserPromptSubmit", cwd, prompt="deploy with ghp_" + "a1B2" * 9)).steps[
        -1
    ]
    assert isinstance(turn, TurnBegan) and "ghp_" in turn.text  # the user's own words: never redacted
    secret = "sk-ant-api03-" + "x" * 40
    (cp,) = apply(
        svc, engine, claude_tool("PostToolUse", cwd, "Bash", {"command": f"API_KEY={secret} ./go"}, "t")
    ).checkpoints
    assert secret not in cp.label and "[redacted" in cp.label
    assert apply(svc, engine, claude("SessionEnd", cwd, reason="logout")).steps == [
        TurnClosed(turn.turn_id, "logout")
    ]


@pytest.mark.parametrize(
    ("agent", "tool", "command", "kinds"),
    [
        ("claude-code", "Bash", "sudo apt-get install -y jq", ["installs packages outside the workspace"]),
        ("claude-code", "Bash", "git add . && git push origin main", ["git push"]),
        ("claude-code", "Bash", "npm test", []),
        ("gemini-cli", "run_shell_command", "docker compose up -d", ["containers"]),
    ],
)
def test_another_agents_shell_side_effects_are_stamped(
    engine: Engine, ws: Path, agent: str, tool: str, command: str, kinds: list[str]
) -> None:
    svc, cwd = HookService(), str(ws)
    tool_input = {"command": command}
    if agent == "claude-code":
        post = claude_tool("PostToolUse", cwd, tool, tool_input, "t9")
    else:
        post = gemini_tool("AfterTool", cwd, tool, tool_input)
    (cp,) = apply(svc, engine, post, agent).checkpoints
    assert cp.meta.get("sideEffects", []) == kinds
