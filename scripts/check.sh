#!/usr/bin/env bash
# One static gate for both languages (run by CI through `npm run check`).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py=.venv/bin/python
echo "[check] ruff check";        $py -m ruff check server tests bench scripts
echo "[check] ruff format";       $py -m ruff format --check server tests bench scripts
echo "[check] mypy --strict";     $py -m mypy
if [ -f extension/tsconfig.json ]; then
  echo "[check] tsc --noEmit";    npx tsc -p extension --noEmit
  echo "[check] eslint";          npx eslint --max-warnings=0 extension
  echo "[check] l10n";            node scripts/l10n.mjs --check
fi
