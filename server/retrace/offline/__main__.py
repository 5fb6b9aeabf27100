"""``python -m retrace.offline --scenario NAME|FILE [--port N]``: serve a scenario until Ctrl-C.

Prints the base URL (for ``ANTHROPIC_BASE_URL``; ``<url>/v1`` for
``retrace.model.openaiCompatible.baseUrl``: the same scenario answers chat completions) on the
first line of stdout.
"""

from __future__ import annotations

import argparse
import sys
import threading

from retrace.offline import FakeModel, ScenarioError, builtin_scenarios, load_scenario


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m retrace.offline", description=__doc__)
    parser.add_argument(
        "--scenario", default="demo", help=f"built-in ({', '.join(builtin_scenarios())}) or file"
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args(argv)
    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        fake = FakeModel(scenario, port=args.port)
        url = fake.start()
    except OSError as e:
        print(f"error: cannot listen on port {args.port}: {e.strerror}", file=sys.stderr)
        return 2
    print(url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
