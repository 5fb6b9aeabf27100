#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what it needs, then runs
#   1. the static gate (npm run check: ruff, ruff format, mypy strict, eslint, tsc strict)
#   2. (the shared-schema drift check is a Python test: tests/schema/test_schema_in_sync.py)
#   3. the Python tests (engine, CLI, agent, fake model, real server over JSON-RPC), one test file
#      per worker on RETRACE_TEST_JOBS workers (pytest-xdist --dist loadfile; 1: one process as
#      before), the slowest files first (tests/timings.json, see tests/conftest.py). Default 3 on
#      the 2-core CI machine: the tests wait on subprocesses so much that 2 workers left the cores
#      idle ~40% of the time (the step uses ~1,085 CPU-seconds; it took 933 s of wall, 1,866
#      core-seconds, on the quiet CI run). The fast lane keeps 2: its tests are short and a
#      worker's start-up (collecting every test file) costs ~5 CPU-seconds.
#   3b. beside step 3: the engine, restore and safety suites again on the portable file-system
#      backend (RETRACE_FS_BACKEND=portable: the path-based backend Windows uses; see PORTABLE_SUITES)
#   4. beside step 3: the extension unit tests (vscode stand-in)
#   5. the extension-host tests and the real-browser UI tests (code-server + Chromium) in ONE pool
#      (tests/e2e/run-workbenches.mjs), each launch its own workbench, RETRACE_E2E_JOBS at a time
#      (default 2; see tests/e2e/pool.mjs); then the packaged .vsix through ovsx's publish checks,
#      offline (scripts/ovsx-check.mjs). What step 5 needs and nothing before it does — Chromium and
#      the Debian packages code-server builds with (setup-apt.sh e2e: mostly downloads and unpacking),
#      code-server (setup-e2e.sh, ~40 CPU-seconds) and the .vsix (npm run package, ~15) — is prepared in the
#      background from the end of setup on, beside the static checks (mostly one core: only mypy
#      runs beside the others, scripts/check.sh) and the Python tests.
# Set RETRACE_SKIP_E2E=1 to skip step 5 (it needs apt packages and code-server).
#
# --fast: the edit-test loop (under 2 minutes): no setup and no browser; the static gate's ruff
# check, the Python tests not marked `slow` (in parallel; a test measured at a second or more in
# tests/timings.json counts as slow) and the extension unit tests. The full run above is what CI
# runs. RETRACE_TEST_TIMINGS=record updates tests/timings.json from the Python tests this run runs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
fast=0
for arg in "$@"; do
  case "$arg" in
    --fast) fast=1 ;;
    *) echo "usage: bash scripts/test.sh [--fast]" >&2; exit 2 ;;
  esac
done
if [ "$fast" = 1 ]; then jobs="${RETRACE_TEST_JOBS:-2}"; else jobs="${RETRACE_TEST_JOBS:-3}"; fi
case "$jobs" in
  '' | *[!0-9]* | 0) echo "RETRACE_TEST_JOBS must be a whole number ≥ 1, not \"$jobs\"" >&2; exit 2 ;;
esac
started=$SECONDS
last=$SECONDS
timings=()
step() {
  [ -n "${current:-}" ] && timings+=("$(printf '%-40s %4ds' "$current" $((SECONDS - last)))")
  current="$*"
  last=$SECONDS
  printf '\n\033[1m== %s\033[0m\n' "$*"
}
finish() {
  step "all tests passed"
  printf '%s\n' "${timings[@]}"
  printf '%-40s %4ds\n' "total" $((SECONDS - started))
}
pytest=(.venv/bin/python -m pytest -q -p no:cacheprovider)
# Bytecode caches on, whatever the caller's environment says: with PYTHONDONTWRITEBYTECODE set
# (some CI images set it) every Python process of the run (each test worker, each server and CLI
# a test starts) compiles the project's modules from source again, and pytest re-rewrites every
# test module's asserts in every worker (~13 CPU-seconds per worker instead of ~4). The caches
# land in the (ignored) __pycache__ folders; the packaged extension's server runs with -I, which
# ignores both settings.
unset PYTHONDONTWRITEBYTECODE
has_serial() { grep -rqsE --include='*.py' 'mark\.serial|pytestmark = .*serial' tests; }
# --no-loadscope-reorder: keep the slowest-first order of tests/conftest.py (xdist's own order is
# "most tests first", which can start a file of a few long tests last).
if [ "$jobs" -gt 1 ]; then pytest+=(-n "$jobs" --dist loadfile --no-loadscope-reorder); fi

if [ "$fast" = 1 ]; then
  # The extension unit tests (a build and mocha, mostly one process) run beside the Python tests;
  # their output is printed after them.
  unit_log="$(mktemp)"
  trap 'rm -f "$unit_log"' EXIT
  npm run --silent test:unit >"$unit_log" 2>&1 &
  unit_pid=$!
  step "ruff check"
  .venv/bin/python -m ruff check server tests bench
  step "python tests not marked slow"
  "${pytest[@]}" -m "not slow and not serial"
  if has_serial; then .venv/bin/python -m pytest -q -p no:cacheprovider -m "serial and not slow" || [ $? = 5 ]; fi
  step "extension unit tests (started beside the Python tests)"
  if wait "$unit_pid"; then unit_rc=0; else unit_rc=$?; fi
  cat "$unit_log"
  [ "$unit_rc" = 0 ] || exit "$unit_rc"
  finish
  exit 0
fi

step "setup"
RETRACE_SETUP_DEFER_CODE_SERVER=1 bash scripts/setup.sh

# Step 5's prerequisites, in the background (see the header); awaited before step 5.
workbench_prep_log="$(mktemp)"
trap 'rm -f "$workbench_prep_log"' EXIT
workbench_prep() {
  bash scripts/setup-apt.sh e2e
  if [ ! -x .tools/code-server/node_modules/.bin/code-server ]; then
    echo "[setup] installing code-server into .tools/code-server"
    SKIP_APT=1 bash scripts/setup-e2e.sh
  fi
  npm run --silent package
  # The install scenario's update package (tests/e2e/update-package.mjs), built here where a core is
  # partly idle instead of inside the workbench pool.
  node tests/e2e/update-package.mjs dist/update/retrace-update.vsix
}
if [ "${RETRACE_SKIP_E2E:-0}" != 1 ]; then
  workbench_prep >"$workbench_prep_log" 2>&1 &
  workbench_prep_pid=$!
fi

step "static checks"
npm run --silent check

# shared-schema/ drift (the committed schema and TypeScript against a fresh generation) is a test of
# step 3 (tests/schema/test_schema_in_sync.py), not a step of its own: the same generation twice.

# The suites that exercise the workspace file-system backend, run a second time on the portable
# one (what Windows runs; the main run uses posix) — beside the main run, in one process of their
# own (own temporary folders), with the extension unit tests (a build and mocha, mostly one
# process): the main run's workers wait on subprocesses ~15% of the time, a core's worth that these
# fill. Their output is printed after the main run's.
# (tests/portability/test_simulated_windows_engine.py is not among them: it removes
# RETRACE_FS_BACKEND from the interpreters it starts, which pick the portable backend by themselves,
# so a second run under the variable ran the very same thing again: ~13 CPU-seconds. Nor are the
# timeline tests of tests/app: they build their stores through the engine — whose captures the
# engine suites run on both backends — and then test how the journal is read into rows, which no
# backend touches: ~10 CPU-seconds.)
PORTABLE_SUITES=(
  tests/engine tests/safety/test_restore_safety.py tests/safety/test_capture_safety.py
  tests/safety/test_security.py tests/safety/test_resolver.py tests/portability/test_simulated_macos.py
  tests/portability/test_letter_case.py tests/portability/test_paths_windows.py tests/agent/test_subagent_merge.py
  tests/agent/test_subagent_merge_links.py tests/agent/test_subagents.py tests/agent/test_instructions.py
  tests/app
)
side_dir="$(mktemp -d)"
# A failed step ends the run: whatever still runs beside it is stopped.
trap 'kill $(jobs -p) 2>/dev/null || true; rm -f "$workbench_prep_log"; rm -rf "$side_dir"' EXIT
RETRACE_FS_BACKEND=portable .venv/bin/python -m pytest -q -p no:cacheprovider --basetemp "$side_dir/portable-tmp" \
  -m "not serial" --ignore-glob='tests/app/test_timeline_*.py' "${PORTABLE_SUITES[@]}" >"$side_dir/portable.log" 2>&1 &
portable_pid=$!
npm run --silent test:unit >"$side_dir/unit.log" 2>&1 &
unit_pid=$!
# Prints a side run's log once it ends; exits with its status when it failed.
side_result() {
  local pid=$1 log=$2 rc=0
  wait "$pid" || rc=$?
  cat "$log"
  [ "$rc" = 0 ] || { echo "failed (exit $rc)" >&2; exit "$rc"; }
}

step "python tests"
if [ "$jobs" -gt 1 ]; then
  "${pytest[@]}" -m "not serial"
  # Tests marked serial run alone (skipped when none is: a run that selects nothing would close
  # the log on "no tests ran").
  if has_serial; then .venv/bin/python -m pytest -q -p no:cacheprovider -m serial; fi
else
  "${pytest[@]}"
fi

step "engine, restore and safety suites on the portable backend (run beside the Python tests)"
side_result "$portable_pid" "$side_dir/portable.log"

step "extension unit tests (run beside the Python tests)"
side_result "$unit_pid" "$side_dir/unit.log"

if [ "${RETRACE_SKIP_E2E:-0}" != 1 ]; then
  step "code-server and the .vsix (prepared in the background since setup)"
  if wait "$workbench_prep_pid"; then prep_rc=0; else prep_rc=$?; fi
  cat "$workbench_prep_log"
  [ "$prep_rc" = 0 ] || { echo "preparing code-server or the package failed (exit $prep_rc)" >&2; exit "$prep_rc"; }
  step "extension-host and real-browser UI tests (code-server + Chromium, one pool)"
  npm run --silent build:tests
  RETRACE_E2E_UPDATE_VSIX="$root/dist/update/retrace-update.vsix" node tests/e2e/run-workbenches.mjs
  # The package the UI tests ran, as Open VSX would take it (no token, nothing published: ovsx's
  # publish against a loopback stand-in of the registry; scripts/ovsx-check.mjs). About 3 s.
  step "Open VSX check of the package"
  node scripts/ovsx-check.mjs dist/retrace.vsix
fi
finish
