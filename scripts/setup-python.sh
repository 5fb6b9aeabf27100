#!/usr/bin/env bash
# Creates (or refreshes) the project's private virtual environment at .venv: first the server's
# runtime dependencies exactly as locked in server/requirements.lock (hash-checked, the set the
# extension installs for users, so the tests run against it), the cloud providers' extras as locked
# in server/requirements-*.lock, then the server package in editable mode with its development
# tools. Idempotent and quick when nothing changed: a stamp file records the hash of pyproject.toml
# and the locks.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $($py --version)"
  "$py" -m venv .venv
fi
stamp=.venv/.retrace-installed
want="$(cat pyproject.toml server/requirements.lock server/requirements-*.lock | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "[setup] installing Python dependencies into .venv"
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet --require-hashes -r server/requirements.lock
  for lock in server/requirements-*.lock; do  # the cloud providers' extras, as the extension installs them
    .venv/bin/python -m pip install --quiet --require-hashes -r "$lock"
  done
  .venv/bin/python -m pip install --quiet -e ".[dev]"
  echo "$want" > "$stamp"
fi
