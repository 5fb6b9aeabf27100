"""``python -m retrace``: with arguments, the command line (``retrace.cli``); without, the
JSON-RPC server over stdio (what the VS Code extension starts as ``python -m retrace serve``)."""

from __future__ import annotations

import sys


def main() -> int:
    args = sys.argv[1:]
    if not args or args == ["serve"]:  # the server, without the command line's imports
        from retrace.lsp.main import main as serve

        return serve()
    from retrace.cli.main import main as cli

    return cli(args)


if __name__ == "__main__":
    raise SystemExit(main())
