#!/usr/bin/env bash
# Installs everything Retrace needs to build, run and test, idempotently:
# Debian packages (Chromium, ripgrep, build tools: scripts/setup-apt.sh), the Python venv (runtime deps from the lock),
# the host's uv for packaging (.tools/uv), npm packages, code-server.
# SKIP_APT=1 skips the apt step; RETRACE_SKIP_E2E=1 skips Chromium and code-server.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# RETRACE_SETUP_DEFER_CODE_SERVER=1: the caller installs what only the workbench tests need
# (Chromium and the packages code-server builds with, code-server itself) later, beside other work
# (scripts/test.sh does, from the end of this setup on).
if [ "${RETRACE_SETUP_DEFER_CODE_SERVER:-0}" = 1 ]; then
  bash scripts/setup-apt.sh base
else
  bash scripts/setup-apt.sh all
fi
# The three installs below are independent (the venv and uv; the project's npm packages;
# code-server under .tools/), mostly downloads and native builds: on a clean machine they run side
# by side, each into its own log, printed in one block when it ends (a failure fails the setup).
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
pids=()
names=()
in_background() {
  local name="$1"
  shift
  ("$@") >"$logs/$name.log" 2>&1 &
  pids+=($!)
  names+=("$name")
}
python_and_uv() {
  bash scripts/setup-python.sh
  # The uv the packaged extension bundles (one per target; the host's is fetched here).
  echo "[setup] uv for packaging: $(bash scripts/fetch-uv.sh)"
}
in_background python python_and_uv
if [ ! -d node_modules ] || [ package.json -nt node_modules/.package-lock.json ]; then
  echo "[setup] npm install"
  in_background npm npm install --no-audit --no-fund --loglevel=error
fi
if [ "${RETRACE_SKIP_E2E:-0}" != 1 ] && [ "${RETRACE_SETUP_DEFER_CODE_SERVER:-0}" != 1 ] \
  && [ ! -x .tools/code-server/node_modules/.bin/code-server ]; then
  echo "[setup] installing code-server into .tools/code-server (about 2 minutes)"
  in_background code-server env SKIP_APT=1 bash scripts/setup-e2e.sh
fi
failed=()
for i in "${!pids[@]}"; do
  if wait "${pids[$i]}"; then rc=0; else rc=$?; fi
  sed "s/^/[${names[$i]}] /" "$logs/${names[$i]}.log"
  [ "$rc" = 0 ] || failed+=("${names[$i]} (exit $rc)")
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "[setup] failed: ${failed[*]}" >&2
  exit 1
fi
