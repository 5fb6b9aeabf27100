"""``retrace checkpoint``: the process holding the store takes it when one answers (before the
engine is imported: this is every hook's path, :mod:`retrace.cli.forward`); otherwise this
process opens the store (:func:`retrace.cli.commands.cmd_checkpoint`) and starts a headless
holder for the next calls."""

from __future__ import annotations

import argparse

from retrace.cli import forward


def cmd_checkpoint(args: argparse.Namespace) -> int:
    def cold() -> int:
        from retrace.cli import commands  # the engine: only when no server took the call

        return commands.cmd_checkpoint(args)

    if (code := forward.checkpoint(args, forward.CLI_SESSION, cold)) is not None:
        return code
    return cold()  # the workspace is unusable: the usual path reports it
