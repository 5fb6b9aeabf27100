"""`retrace run` with another model provider: the options map to the `retrace.model` section, a
missing one is named as the option, and a turn runs through the provider's real client."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.cli_support import RETRACE, Cli
from tests.workspaces import project

from retrace.offline import FakeModel, Scenario


@pytest.fixture
def initialised(tmp_path: Path) -> Cli:
    assert RETRACE.exists(), f"console script missing: {RETRACE} (run scripts/setup-python.sh)"
    ws = project(tmp_path, "ws", {"README.md": "# a project\n"})
    cli = Cli(ws, tmp_path / "store")
    cli("init")
    return cli


def test_headless_run_through_an_openai_compatible_endpoint(initialised: Cli) -> None:
    cli = initialised
    cli.env = {k: v for k, v in cli.env.items() if not k.startswith(("ANTHROPIC_", "RETRACE_FAKE"))}
    write = {"name": "write_file", "input": {"path": "local.txt", "content": "from a local model\n"}}
    fake = FakeModel(Scenario.model_validate({"responses": [{"toolCalls": [write]}, {"text": "written"}]}))
    fake.start()
    try:
        run = cli(
            "run",
            "--provider",
            "openai-compatible",
            "--endpoint",
            f"{fake.base_url}/v1",
            "--model",
            "local-coder",
            "write the file",
        )
    finally:
        fake.stop()
    assert "session " in run.stdout
    assert (cli.workspace / "local.txt").read_text() == "from a local model\n"
    assert fake.wires == ["chat", "chat"] and fake.statuses == [200, 200]
    assert {r["model"] for r in fake.requests} == {"local-coder"}
    (cp,) = [c for c in cli.json("log") if c.get("tool") == "write_file"]
    assert cp["kind"] == "tool" and cp["conversation"]


def test_headless_run_names_the_missing_option(initialised: Cli) -> None:
    for args, option in (
        (["--provider", "openai-compatible", "--model", "m"], "--endpoint"),
        (["--provider", "openai-compatible", "--endpoint", "http://127.0.0.1:9/v1"], "--model"),
        (["--provider", "bedrock"], "--model"),
    ):
        result = initialised("run", *args, "hello", code=1)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and option in lines[0], (args, result.stderr)
        assert "retrace.model" not in lines[0]
