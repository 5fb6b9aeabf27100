"""Command-line entry point of the greeter."""

import sys

from util import format_greeting


def main():
    names = sys.argv[1:] or ["world"]
    for name in names:
        print(format_greeting(name))


if __name__ == "__main__":
    main()
