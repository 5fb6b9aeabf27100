"""Tests reach the product through its public interfaces.

A test that reads ``eng._head`` or calls ``service._edit_plan`` pins an internal layout: every
move of that internal breaks tests that say nothing about behaviour. Every test module is parsed
(``ast``, so comments and strings do not count) and every read of a private attribute (a leading
underscore, dunders excepted) off anything but ``self``/``cls`` is found, whatever the receiver is
called. Each one must be in :data:`ALLOWED` with the reason no public interface serves; an entry no
test uses any more fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

ALLOWED: dict[str, str] = {
    # Libraries with no public way to do what the test needs.
    "os._exit": "a forked child ends without clean-up, as a crash does",
    "argparse._SubParsersAction": "argparse has no public API to walk a parser (the CLI's golden file)",
    "parser._actions": "argparse has no public API to walk a parser (the CLI's golden file)",
    "parser._defaults": "argparse has no public API to walk a parser (the CLI's golden file)",
    "p._defaults": "argparse has no public API to walk a parser (the CLI's golden file)",
    "client._server": "the JSON-RPC client library keeps the server process there; crash tests kill it",
    "client._stop_event": "start_io takes a command, never pipes: a forked server's start repeats its steps",
    "client._async_tasks": "start_io takes a command, never pipes: a forked server's start repeats its steps",
    "client._server_exit": "start_io takes a command, never pipes: a forked server's start repeats its steps",
    "_auth._get_session": "the Anthropic SDK keeps one boto3 session a process; the AWS chain tests clear it",
    # The tests' own support modules (not the product).
    "lsp_support._apply_workspace_edit": "a test wraps the test editor's own applier to slow it",
    "model._script": "the fake model's scenario script, read back by the crash campaign",
    "cli_support._forked_as": "the fork server's own test: which way a command line was run",
    # Fault injection and lifetime checks at a seam the product does not expose.
    "credentials._deny_dumping": "the process-hardening call, switched off so pytest can dump",
    "portable._READ": "the portable backend's open flags without O_NOFOLLOW, as on Windows",
    "crashed._fd": "a store lock's descriptor closed as a killed process would leave it",
    "watch_module._libc": "the inotify binding, wrapped to fail as a full watch table does",
    "w._wd": "the watcher's watch list: what it must not watch (node_modules) has no public view",
    "restore_undo._last": "the undo memory's lifetime (it must not keep a closed engine alive)",
    "service._edit_plan": "the editor restore's plan for a link, checked without a workbench",
    "table._bridge": "the relay's request bridge, driven with a method that raises",
    "timeline._decode": "the File History view's text rule, checked against the one text rule",
    "cli_parser._resolution": "table test of the --resolution value parser",
}


def private_accesses(source: str) -> list[tuple[int, str]]:
    """``(line, "receiver._attr")`` for each private attribute read off anything but self/cls."""
    hits: list[tuple[int, int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        attr = node.attr
        if not attr.startswith("_") or (attr.startswith("__") and attr.endswith("__")):
            continue
        value = node.value
        if isinstance(value, ast.Name) and value.id in ("self", "cls"):
            continue
        if isinstance(value, ast.Name):
            name = value.id
        elif isinstance(value, ast.Attribute):
            name = value.attr
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            name = getattr(value.func.value, "id", None) or getattr(value.func.value, "attr", "?")
        else:
            name = type(value).__name__
        hits.append((node.lineno, node.col_offset, f"{name}.{attr}"))
    return [(line, hit) for line, _, hit in sorted(hits)]


def all_accesses() -> list[tuple[str, int, str]]:
    return [
        (str(path.relative_to(TESTS.parent)), line, hit)
        for path in sorted(TESTS.rglob("*.py"))
        if path.resolve() != Path(__file__).resolve()
        for line, hit in private_accesses(path.read_text("utf-8"))
    ]


def test_checker_sees_every_receiver() -> None:
    sample = (
        "eng._head['a']\n"
        "x = engine._entries_at(c, p)\n"
        "self.engine._capture.walks\n"
        "Engine.open(ws)._head\n"
        "agent._private\n"
        "things[0]._hidden\n"
        "# eng._in_a_comment\n"
        "s = 'eng._in_a_string'\n"
        "eng.__class__\n"
        "engine.head_manifest\n"
        "self._mine\n"
        "cls._ours\n"
    )
    assert [h for _, h in private_accesses(sample)] == [
        "eng._head",
        "engine._entries_at",
        "engine._capture",
        "Engine._head",
        "agent._private",
        "Subscript._hidden",
    ]


def test_tests_use_public_interfaces_or_say_why_not() -> None:
    offenders = [f"{path}:{line}: {hit}" for path, line, hit in all_accesses() if hit not in ALLOWED]
    assert not offenders, (
        "tests reach into private attributes (add a public accessor, or an ALLOWED entry with the "
        "reason none can serve):\n" + "\n".join(offenders)
    )


def test_every_allowed_access_is_still_used() -> None:
    used = {hit for _, _, hit in all_accesses()}
    stale = sorted(set(ALLOWED) - used)
    assert stale == [], f"remove from ALLOWED: {stale}"
