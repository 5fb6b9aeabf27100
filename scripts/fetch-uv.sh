#!/usr/bin/env bash
# Prints the path of a `uv` executable for a VS Code target platform (default: this machine's),
# fetching it once from the PyPI wheel `uv` (pip download, the registry every machine that builds
# Retrace can reach) into ${RETRACE_UV_DIR:-.tools/uv}/<version>/<target>/.
# Hash-pinned: the version and the sha256 of every wheel are in scripts/uv-requirements.lock, the
# download is `pip download --require-hashes` against it, and the binary taken out of the checked
# wheel has its sha256 written beside it (uv.sha256); a cached binary that no longer matches is an
# error, never used. A cache from before the pin (no uv.sha256) is fetched again.
# Usage: scripts/fetch-uv.sh [vsce-target]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
pins="$root/scripts/uv-requirements.lock"
UV_VERSION="$(sed -n 's/^uv==\([^ ;\\]*\).*/\1/p' "$pins")"
[ -n "$UV_VERSION" ] || { echo "fetch-uv: no uv==VERSION pin in $pins" >&2; exit 1; }
host_target() {
  local os arch
  case "$(uname -s)" in
    Linux) os=linux ;; Darwin) os=darwin ;; MINGW*|MSYS*|CYGWIN*) os=win32 ;; *) os=unknown ;;
  esac
  case "$(uname -m)" in
    x86_64|amd64) arch=x64 ;; aarch64|arm64) arch=arm64 ;; *) arch=unknown ;;
  esac
  echo "$os-$arch"
}
target="${1:-$(host_target)}"
case "$target" in
  linux-x64) plat=(manylinux2014_x86_64) ;;
  linux-arm64) plat=(manylinux2014_aarch64) ;;
  alpine-x64) plat=(musllinux_1_1_x86_64) ;;
  alpine-arm64) plat=(musllinux_1_1_aarch64) ;;
  darwin-x64) plat=(macosx_10_12_x86_64) ;;
  darwin-arm64) plat=(macosx_11_0_arm64) ;;
  win32-x64) plat=(win_amd64) ;;
  win32-arm64) plat=(win_arm64) ;;
  *) echo "fetch-uv: no uv build for target '$target'" >&2; exit 2 ;;
esac
exe=uv
case "$target" in win32-*) exe=uv.exe ;; esac
dir="${RETRACE_UV_DIR:-$root/.tools/uv}/$UV_VERSION/$target"
sha() { "${PYTHON_FOR_HASH:-python3}" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$1"; }
if [ -x "$dir/$exe" ] && [ -f "$dir/$exe.sha256" ]; then
  if [ "$(sha "$dir/$exe")" != "$(cat "$dir/$exe.sha256")" ]; then
    echo "fetch-uv: $dir/$exe does not match the sha256 recorded when it was taken out of the hash-checked wheel; delete $dir and run again" >&2
    exit 1
  fi
else
  py="${PYTHON:-}"
  if [ -z "$py" ]; then
    if [ -x .venv/bin/python ]; then py=.venv/bin/python; else py=python3; fi
  fi
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  args=()
  for p in "${plat[@]}"; do args+=(--platform "$p"); done
  # --require-hashes: the wheel must be one of those pinned in scripts/uv-requirements.lock.
  PIP_CONSTRAINT='' "$py" -m pip download --quiet --disable-pip-version-check --no-deps \
    --only-binary :all: "${args[@]}" --require-hashes -r "$pins" -d "$tmp" >&2
  whl="$(ls "$tmp"/uv-*.whl)"
  "$py" - "$whl" "$tmp/x" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
  src="$(find "$tmp/x" -path '*.data/scripts/*' -name "$exe" -type f | head -n1)"
  [ -n "$src" ] || { echo "fetch-uv: $exe not found in $whl" >&2; exit 1; }
  mkdir -p "$dir"
  # Unique temporary names, renamed into place: two fetches at once (parallel tests) cannot mix.
  cp "$src" "$dir/$exe.tmp.$$"
  chmod +x "$dir/$exe.tmp.$$"
  sha "$dir/$exe.tmp.$$" > "$dir/$exe.sha256.tmp.$$"
  mv "$dir/$exe.tmp.$$" "$dir/$exe"
  mv "$dir/$exe.sha256.tmp.$$" "$dir/$exe.sha256"
fi
echo "$dir/$exe"
