#!/usr/bin/env bash
# Creates (or refreshes) the project's private virtual environment at .venv: first the server's
# runtime dependencies exactly as locked in server/requirements.lock (hash-checked, the set the
# extension installs for users, so the tests run against it), the cloud providers' extras as locked
# in server/requirements-*.lock, then the server package in editable mode with its development
# tools. Idempotent and quick when nothing changed: a stamp file records the hash of pyproject.toml
# and the locks. Installs with the project's pinned uv, pip when uv cannot be had.
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
with_pip() {
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet --require-hashes -r server/requirements.lock
  for lock in server/requirements-*.lock; do  # the cloud providers' extras, as the extension installs them
    .venv/bin/python -m pip install --quiet --require-hashes -r "$lock"
  done
  .venv/bin/python -m pip install --quiet -e ".[dev]"
}
# The same installs with uv (the hash-pinned uv the package bundles, scripts/fetch-uv.sh, which
# the extension installs with for users too): it downloads in parallel and installs in a few
# seconds where pip took ~30 s, the longest part of a clean machine's setup. Bytecode is compiled
# once here (uv does not by default): otherwise the first test processes would each compile it.
# Called as an `if` condition, where bash ignores `set -e`: every step returns on failure itself.
with_uv() {
  local uv="$1" at=(--python .venv/bin/python --quiet --compile-bytecode)
  "$uv" pip install "${at[@]}" --upgrade pip || return
  "$uv" pip install "${at[@]}" --require-hashes -r server/requirements.lock || return
  for lock in server/requirements-*.lock; do
    "$uv" pip install "${at[@]}" --require-hashes -r "$lock" || return
  done
  "$uv" pip install "${at[@]}" -e ".[dev]"
}
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "[setup] installing Python dependencies into .venv"
  if uv="$(PYTHON="$py" bash scripts/fetch-uv.sh)" && with_uv "$uv"; then
    echo "[setup] installed with $uv"
  else
    echo "[setup] uv unavailable or failed: installing with pip"
    with_pip
  fi
  echo "$want" > "$stamp"
fi
