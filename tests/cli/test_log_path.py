"""``retrace log --path FILE`` as a real subprocess: the file's checkpoints newest first, as
lines and as JSON, and one clear error line for a path outside the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.cli_support import RETRACE, Cli

pytestmark = pytest.mark.slow


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    assert RETRACE.exists(), f"console script missing: {RETRACE} (run scripts/setup-python.sh)"
    ws = tmp_path / "wörk space"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("def main():\n    return 1\n")
    (ws / "other.txt").write_text("other\n")
    cli = Cli(ws, tmp_path / "store")
    cli("init")
    return cli


def test_log_path_lists_the_checkpoints_that_changed_the_file(cli: Cli) -> None:
    app = cli.workspace / "src" / "app.py"
    app.write_text("def main():\n    return 2\n")
    cli("checkpoint", "--label", "two")
    (cli.workspace / "other.txt").write_text("changed\n")
    cli("checkpoint", "--label", "other only")
    app.write_text("def main():\n    return 3\n    # three\n")
    cli("checkpoint", "--label", "three")

    versions = cli.json("log", "--path", "src/app.py")
    assert [(v["title"], v["change"], v["summary"]) for v in versions] == [
        ("three", "modified", "+2 −1"),
        ("two", "modified", "+1 −1"),
        ("Starting point", "created", "created"),
    ]
    lines = cli("log", "--path", "src/app.py").stdout.splitlines()
    assert (
        len(lines) == 3 and lines[0].strip().startswith(versions[0]["checkpointId"]) and "three" in lines[0]
    )
    assert "no checkpoint changed never.txt" in cli("log", "--path", "never.txt").stdout


def test_log_path_outside_the_workspace_is_one_error_line(cli: Cli) -> None:
    proc = cli("log", "--path", "../escape.txt", code=None)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("retrace: error: ") and "outside the workspace" in lines[0]
