"""``retrace restore`` prints what it printed before the one restore sequence: every mode × outcome
(preview, conflict, nothing to restore, applied; a conversation moved, not moved on a dry run, not
moved for a session with no messages, not moved when the code half did not apply), ``--reason``,
``--json`` and the words, the exit codes, compared with a golden file recorded from the command
line as it was before the sequence moved to ``app/restore_sequence.py``.

Real CLI processes on a real store (a headless run against the local fake model makes the
conversation). What differs between runs is normalised: checkpoint and session ids become
``CP<n>``/``S<n>`` in the log's order, message and tool-call ids ``M<n>``/``T<n>`` in order of
first appearance, hashes, times and durations placeholders. An intentional change of the output
regenerates the file (``python -m tests.cli.test_cli_restore_golden``).
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from tests.cli.cli_support import RETRACE, Cli
from tests.workspaces import project

pytestmark = pytest.mark.slow

GOLDEN = Path(__file__).with_name("data") / "restore_outputs.json"


class Normaliser:
    def __init__(self, cli: Cli) -> None:
        self.cli = cli
        self.names: dict[str, str] = {}

    def learn(self) -> None:
        """Name every checkpoint and session in the log's order (oldest first)."""
        for cp in self.cli.json("log"):
            self.names.setdefault(cp["id"], f"CP{len(self.names)}")
            self.names.setdefault(cp["sessionId"], f"S{len(self.names)}")

    def _ordered(self, text: str, pattern: str, prefix: str) -> str:
        def name(match: re.Match[str]) -> str:
            return self.names.setdefault(match.group(0), f"{prefix}{len(self.names)}")

        return re.sub(pattern, name, text)

    def __call__(self, text: str) -> str:
        for real in sorted(self.names, key=len, reverse=True):
            text = text.replace(real, self.names[real])
        text = self._ordered(text, r"msg_[0-9a-f]{8,}", "M")
        text = self._ordered(text, r"toolu_[0-9a-f]{8,}", "T")
        text = re.sub(r"\d{4}-\d\d-\d\dT[0-9:.]+(Z|[+-]\d\d:\d\d)?", "<ts>", text)
        text = re.sub(r'"(\w*Ms|ts)": [0-9.e+-]+', r'"\1": <n>', text)
        text = re.sub(r"\b[0-9a-f]{12,64}\b", "<hex>", text)
        return text.replace(str(self.cli.workspace.parent), "<root>")


STEPS: list[tuple[str, list[str]]] = [
    ("dry json", ["restore", "{base}", "--dry-run", "--json"]),
    ("dry text", ["restore", "{base}", "--dry-run"]),
    ("conversation, no messages, json", ["restore", "{base}", "--mode", "conversation", "--json"]),
    ("conversation, no messages, text", ["restore", "{base}", "--mode", "conversation", "--reason", "other"]),
    ("conversation dry run json", ["restore", "{base}", "--mode", "conversation", "--dry-run", "--json"]),
    ("both dry run text", ["restore", "{base}", "--mode", "both", "--dry-run"]),
    ("@edit", []),
    ("conflict json", ["restore", "{base}", "--json"]),
    ("conflict text", ["restore", "{base}"]),
    (
        "both conflict json, reason",
        ["restore", "{base}", "--mode", "both", "--json", "--reason", "wrongApproach"],
    ),
    ("both conflict text", ["restore", "{base}", "--mode", "both"]),
    ("forced, reason, json", ["restore", "{base}", "--force", "--json", "--reason", "wrongApproach"]),
    ("head: nothing, reason, json", ["restore", "head", "--json", "--reason", "wrongApproach"]),
    ("head text", ["restore", "head"]),
    ("@run", []),
    ("both, reason, json", ["restore", "{first}", "--mode", "both", "--json", "--reason", "wrongApproach"]),
    ("conversation, reason, text", ["restore", "{last}", "--mode", "conversation", "--reason", "brokeTests"]),
    ("conversation json", ["restore", "{first}", "--mode", "conversation", "--json"]),
    ("code, reason, text", ["restore", "{last}", "--reason", "offTrack"]),
    ("code json", ["restore", "{first}", "--json"]),
    ("unknown checkpoint", ["restore", "zzzzzzzz"]),
]


def outputs(tmp: Path) -> list[dict[str, Any]]:
    """Every step's exit code, stdout and stderr, normalised."""
    ws = project(tmp, "golden ws", {"src/app.py": "def main():\n    return 1\n", "notes.txt": "n1\n"})
    cli = Cli(ws, tmp / "store")
    cli.env = {k: v for k, v in cli.env.items() if not k.startswith("ANTHROPIC_")}
    cli.env["RETRACE_FAKE_MODEL"] = "e2e"
    cli("init")
    (ws / "notes.txt").write_text("n2\n")
    cli("checkpoint", "--label", "edit")
    norm = Normaliser(cli)
    norm.learn()
    refs = {"base": cli.json("log")[0]["id"]}
    out: list[dict[str, Any]] = []
    for name, args in STEPS:
        if name == "@edit":
            (ws / "notes.txt").write_text("the user's edit\n")
            continue
        if name == "@run":
            cli("run", "make the e2e changes")
            tools = [c["id"] for c in cli.json("log") if c["kind"] == "tool"]
            refs |= {"first": tools[0], "last": tools[-1]}
            norm.learn()
            continue
        proc = cli(*[a.format(**refs) for a in args], code=None)
        norm.learn()
        out.append(
            {"step": name, "exit": proc.returncode, "stdout": norm(proc.stdout), "stderr": norm(proc.stderr)}
        )
    return out


def test_restore_prints_what_it_printed_before(tmp_path: Path) -> None:
    assert RETRACE.exists(), f"console script missing: {RETRACE} (run scripts/setup-python.sh)"
    golden = json.loads(GOLDEN.read_text("utf-8"))
    now = outputs(tmp_path)
    assert [s["step"] for s in now] == [s["step"] for s in golden]
    for got, want in zip(now, golden, strict=True):
        assert got == want, got["step"]


if __name__ == "__main__":  # regenerate the golden file (an intentional change of the output)
    with tempfile.TemporaryDirectory() as tmp:
        GOLDEN.write_text(json.dumps(outputs(Path(tmp)), indent=1, ensure_ascii=False) + "\n", "utf-8")
    sys.stdout.write(f"wrote {GOLDEN}\n")
