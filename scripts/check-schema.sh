#!/usr/bin/env bash
# Fails when shared-schema/ is not what the server's pydantic models generate.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp -r shared-schema "$tmp/before"
npm run --silent schema >/dev/null
if ! diff -ru "$tmp/before" shared-schema >"$tmp/diff"; then
  cat "$tmp/diff" | head -50
  rm -rf shared-schema && cp -r "$tmp/before" shared-schema
  echo "shared-schema/ is out of date with the server's protocol models. Regenerate it with:  npm run schema" >&2
  exit 1
fi
echo "[schema] shared-schema/ is up to date"
