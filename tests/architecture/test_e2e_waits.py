"""The browser scenarios never wait out a default timeout on purpose.

A Playwright action whose failure the scenario ignores (``.click().catch(() => {})``) waits its
default 30 s whenever the element is gone: a toast that closed by itself, "the second toast" after
the first one closed. Such waits cost the suite minutes without failing anything (four of them in
one run of the workbench pool). An ignored action names a short ``timeout`` of its own.

Shown failing on planted violations below, so it can fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "tests" / "e2e"
ACTIONS = "click|dblclick|hover|fill|press|check|waitFor|scrollIntoViewIfNeeded|focus|type|selectOption"
IGNORED_DEFAULT_WAIT = re.compile(rf"\.(?:{ACTIONS})\((?P<args>[^()]*)\)\s*\.(?:catch\(|then\([^,]*,)")


def ignored_default_waits(source: str) -> list[str]:
    """The lines of ``source`` that ignore an action's failure without a timeout of their own."""
    found = []
    for number, line in enumerate(source.splitlines(), start=1):
        for match in IGNORED_DEFAULT_WAIT.finditer(line):
            if "timeout" not in match.group("args"):
                found.append(f"{number}: {line.strip()}")
    return found


@pytest.mark.parametrize(
    ("line", "flagged"),
    [
        ("await close.click().catch(() => {});", True),
        ("await el.hover().catch(() => {});", True),
        ("await el.waitFor({ state: 'hidden' }).catch(() => {});", True),
        ("await close.click({ timeout: 2000 }).catch(() => {});", False),
        ("await el.waitFor({ state: 'hidden', timeout: 2000 }).catch(() => {});", False),
        ("await page.screenshot({ path }).catch(() => {});", False),
        ("await el.click();", False),
        ("if (await el.waitFor().then(() => true, () => false)) go();", True),
        ("if (await el.waitFor({ timeout: 500 }).then(() => true, () => false)) go();", False),
    ],
)
def test_the_rule_flags_an_ignored_action_without_a_timeout(line: str, flagged: bool) -> None:
    assert bool(ignored_default_waits(line)) is flagged


def test_no_scenario_ignores_an_action_that_waits_its_default_timeout() -> None:
    offenders = {
        path.name: found
        for path in sorted(SCENARIOS.glob("*.mjs"))
        if (found := ignored_default_waits(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}
