#!/usr/bin/env bash
# One static gate for both languages (run by CI through `npm run check`).
# mypy (the longest check, ~25 s, one process) runs beside the others; its output is printed after
# theirs, and any check failing fails the gate.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py=.venv/bin/python
mypy_log="$(mktemp)"
trap 'rm -f "$mypy_log"; kill $(jobs -p) 2>/dev/null || true' EXIT
$py -m mypy >"$mypy_log" 2>&1 &
mypy_pid=$!
echo "[check] ruff check";        $py -m ruff check server tests bench scripts
echo "[check] ruff format";       $py -m ruff format --check server tests bench scripts
if [ -f extension/tsconfig.json ]; then
  # tsc --noEmit, then ESLint --max-warnings=0 over extension/, on one TypeScript program
  echo "[check] tsc --noEmit";    node scripts/check-ts.mjs
  echo "[check] l10n";            node scripts/l10n.mjs --check
fi
echo "[check] mypy --strict (run beside the checks above)"
if wait "$mypy_pid"; then mypy_rc=0; else mypy_rc=$?; fi
cat "$mypy_log"
exit "$mypy_rc"
