"""The light parser (``retrace.cli.parser``) is the parser the command line always had.

``tests/cli/data/cli_parser.json`` is the help text and option structure of every command and
``remote`` action as built by the eager parser before the lazy one replaced it (main 9d78423,
100 columns). The lazy parser must reproduce it exactly; each lazily named handler must resolve
to a real function; each constant the parser restates must equal its owner's value.

An intentional change of the command line regenerates the file (``python -m tests.cli.test_cli_parser``).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import sys
from pathlib import Path
from typing import Any, get_args

import pytest

import retrace
from retrace.app.hooks.registry import INSTALLS
from retrace.cli import parser as cli_parser
from retrace.engine.config import RetentionPolicy
from retrace.engine.models import ConflictResolution
from retrace.engine.store.events import RestoreReason
from retrace.protocol.agents import IntegratedAgent

GOLDEN = Path(__file__).with_name("data") / "cli_parser.json"


def _describe(parser: argparse.ArgumentParser) -> list[dict[str, Any]]:
    return [
        {
            "options": a.option_strings,
            "dest": a.dest,
            "default": repr(a.default),
            "choices": list(a.choices) if a.choices else None,
            "nargs": a.nargs,
            "required": a.required,
            "metavar": a.metavar,
            "action": type(a).__name__,
        }
        for a in parser._actions
        if not isinstance(a, argparse._SubParsersAction)
    ]


def _walk(parser: argparse.ArgumentParser, prefix: list[str]) -> dict[str, Any]:
    out = {" ".join(prefix) or "retrace": {"help": parser.format_help(), "actions": _describe(parser)}}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.update(_walk(sub, [*prefix, name]))
    return out


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _parsers(sub)
    return found


def current() -> dict[str, Any]:
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps help text to the terminal's width
    try:
        return _walk(cli_parser.build_parser(retrace.__version__), [])
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns


def test_every_command_has_the_help_and_options_it_always_had() -> None:
    golden = json.loads(GOLDEN.read_text("utf-8"))
    now = current()
    assert sorted(now) == sorted(golden)
    for command, shape in golden.items():
        assert now[command] == shape, command


def test_every_lazily_named_handler_is_a_real_function() -> None:
    leaves = [p for p in _parsers(cli_parser.build_parser("0")) if "handler" in p._defaults]
    assert len(leaves) == 27  # every command and remote action but the two groups
    for parser in leaves:
        handler = parser._defaults["handler"]
        assert isinstance(handler, cli_parser.Handler), parser.prog
        assert callable(getattr(importlib.import_module(handler.module), handler.name)), handler


def test_the_constants_the_parser_restates_equal_their_owners() -> None:
    assert get_args(ConflictResolution) == cli_parser.RESOLUTIONS
    assert get_args(RestoreReason) == cli_parser.RESTORE_REASONS
    assert RetentionPolicy().max_bytes == cli_parser.DEFAULT_BUDGET_BYTES
    assert get_args(IntegratedAgent) == cli_parser.INTEGRATED_AGENTS == tuple(INSTALLS)


def test_the_version_constant_is_the_installed_distributions() -> None:
    assert retrace.__version__ == importlib.metadata.version("retrace-checkpoints")


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("a=b=merge", ("a=b", "merge")),
        ("x=skip", ("x", "skip")),
        ("=skip", None),
        ("x", None),
        ("x=drop", None),
    ],
)
def test_a_resolution_is_path_equals_choice(text: str, ok: tuple[str, str] | None) -> None:
    if ok is None:
        with pytest.raises(argparse.ArgumentTypeError):
            cli_parser._resolution(text)
    else:
        assert cli_parser._resolution(text) == ok


if __name__ == "__main__":
    json.dump(current(), sys.stdout, indent=1, sort_keys=True)
