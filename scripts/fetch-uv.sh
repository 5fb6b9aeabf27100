#!/usr/bin/env bash
# Prints the path of a `uv` executable for a VS Code target platform (default: this machine's),
# fetching it once from the PyPI wheel `uv` (pip download, the registry every machine that builds
# Retrace can reach) into ${RETRACE_UV_DIR:-.tools/uv}/<version>/<target>/. The version is pinned
# here so every package ships the same uv. Usage: scripts/fetch-uv.sh [vsce-target]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
UV_VERSION="${RETRACE_UV_VERSION:-0.13.9}"
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
if [ ! -x "$dir/$exe" ]; then
  py="${PYTHON:-}"
  if [ -z "$py" ]; then
    if [ -x .venv/bin/python ]; then py=.venv/bin/python; else py=python3; fi
  fi
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  args=()
  for p in "${plat[@]}"; do args+=(--platform "$p"); done
  "$py" -m pip download --quiet --disable-pip-version-check "uv==$UV_VERSION" --no-deps \
    --only-binary :all: "${args[@]}" -d "$tmp" >&2
  whl="$(ls "$tmp"/uv-*.whl)"
  "$py" - "$whl" "$tmp/x" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
  src="$(find "$tmp/x" -path '*.data/scripts/*' -name "$exe" -type f | head -n1)"
  [ -n "$src" ] || { echo "fetch-uv: $exe not found in $whl" >&2; exit 1; }
  mkdir -p "$dir"
  cp "$src" "$dir/$exe.tmp"
  chmod +x "$dir/$exe.tmp"
  mv "$dir/$exe.tmp" "$dir/$exe"
fi
echo "$dir/$exe"
