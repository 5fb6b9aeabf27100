"""Assemble ``tests/RELIABILITY.md`` from the last recorded campaign figures and the two report
fragments: ``python -m tests.reliability.report``.

Inputs: ``tests/reliability/results/<campaign>-<variant>.json`` (written by each campaign through
``record_figures``; a ``full`` variant wins over ``ci``) and the hand-written fragments
``report_crash.md`` (crash, storage, concurrency), ``report_inputs.md`` (hostile inputs,
protocol fuzzing, model faults, secrets) and ``report_safety.md`` (data-safety campaigns through
the CLI). A missing fragment is named in the output, never silently dropped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
OUT = HERE.parent / "RELIABILITY.md"

FRAGMENTS = (
    "report_crash.md",
    "report_inputs.md",
    "report_safety.md",
    "report_restore.md",
    "report_security.md",
    "report_store.md",
    "report_round3.md",
    "report_round3_journal.md",
    "report_round3_bucket.md",
    "report_round3_ids.md",
    "report_round3_writer.md",
    "report_round3_capture.md",
    "report_round3_procs.md",
    "report_round3_cliux.md",
    "report_speed3_open.md",
    "report_speed3_serve.md",
    "report_speed3_cli.md",
    "report_speed3_socket.md",
    "report_speed3_realcode.md",
)

HEADER = """# Retrace reliability campaigns

The promise (issue 5): a crash, a kill, a full disk, a hostile or broken input, or a second
session never loses a completed checkpoint, never leaves a half-applied restore, never overwrites
work that is not the agent's. Every campaign below runs against the real server process
(`python -m retrace serve`) and the fake Messages API over real HTTP, except the data-safety
campaigns, which run the `retrace` command line as a subprocess.

## How to run

```sh
.venv/bin/python -m pytest tests/reliability                    # bounded CI variants (part of the normal run)
RETRACE_FULL_CAMPAIGNS=1 .venv/bin/python -m pytest tests/reliability -m slow   # full variants
.venv/bin/python -m tests.reliability.report                    # regenerate this file from the last run
```

This file is generated: edit `tests/reliability/report_*.md` and rerun the last command.
"""


def _value(value: Any) -> str:
    if isinstance(value, dict | list):
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
        return f"`{text}`" if len(text) < 400 else f"`{text[:400]}…`"
    return f"{value}"


def latest_results() -> dict[str, dict[str, Any]]:
    """Per campaign, the full variant's figures when recorded, else the CI variant's."""
    chosen: dict[str, dict[str, Any]] = {}
    for path in sorted(RESULTS.glob("*.json")):
        data = json.loads(path.read_text("utf-8"))
        campaign = str(data.get("campaign", path.stem))
        if campaign not in chosen or data.get("variant") == "full":
            chosen[campaign] = data
    return chosen


def figures_section(results: dict[str, dict[str, Any]]) -> str:
    lines = ["## Figures of the last recorded run", ""]
    if not results:
        return "\n".join([*lines, "_No campaign has recorded figures yet: run the commands above._", ""])
    for campaign, data in sorted(results.items()):
        lines += [
            f"### {campaign} ({data.get('variant', '?')} variant, {data.get('at', '?')})",
            "",
            "| figure | value |",
            "|---|---|",
        ]
        for key, value in sorted(data.items()):
            if key in ("campaign", "variant", "at"):
                continue
            lines.append(f"| {key} | {_value(value)} |")
        lines.append("")
    return "\n".join(lines)


def render() -> str:
    parts = [HEADER, figures_section(latest_results())]
    for name in FRAGMENTS:
        fragment = HERE / name
        if fragment.exists():
            parts.append(fragment.read_text("utf-8").strip() + "\n")
        else:
            parts.append(f"_(fragment `tests/reliability/{name}` not written yet)_\n")
    return "\n".join(parts)


def main() -> None:
    OUT.write_text(render(), "utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
