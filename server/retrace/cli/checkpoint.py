"""``retrace checkpoint``: the server holding the store takes it when one answers (before the
engine is imported: this is every hook's path, :mod:`retrace.cli.forward`); otherwise this
process opens the store (:func:`retrace.cli.commands.cmd_checkpoint`)."""

from __future__ import annotations

import argparse

from retrace.cli import forward


def cmd_checkpoint(args: argparse.Namespace) -> int:
    if (forwarded := forward.checkpoint(args, forward.CLI_SESSION)) is not None:
        return forwarded
    from retrace.cli import commands  # the engine: only when no server took the call

    return commands.cmd_checkpoint(args)
