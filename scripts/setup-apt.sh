#!/usr/bin/env bash
# The Debian packages Retrace's build and tests need, each installed only when missing (apt-get,
# as root). Two sets, so the second can be installed later, beside other work:
#   base: git and ripgrep (the tests, the agent's search tool); python3 whenever apt runs
#   e2e:  Chromium's headless shell and fonts, and what code-server's native modules build with (libkrb5-dev,
#         build-essential, pkg-config): only the workbench tests need them
# Usage: bash scripts/setup-apt.sh base|e2e|all. SKIP_APT=1 installs nothing; RETRACE_SKIP_E2E=1
# leaves the e2e set out.
set -euo pipefail
case "${1:-}" in
  base | e2e | all) set_name="$1" ;;
  *) echo "usage: bash scripts/setup-apt.sh base|e2e|all" >&2; exit 2 ;;
esac
[ "${SKIP_APT:-0}" = 1 ] && exit 0
need_apt=()
if [ "$set_name" != e2e ]; then
  command -v git >/dev/null || need_apt+=(git)
  command -v rg >/dev/null || need_apt+=(ripgrep)
fi
if [ "$set_name" != base ] && [ "${RETRACE_SKIP_E2E:-0}" != 1 ]; then
  # The workbench tests' browser: Chromium's headless shell (tests/e2e/harness.mjs; HEADED=1 runs
  # need the full `chromium` package, not installed here).
  command -v chromium-headless-shell >/dev/null || need_apt+=(chromium-headless-shell fonts-liberation)
  [ -f /usr/include/gssapi/gssapi.h ] || need_apt+=(libkrb5-dev)
  command -v g++ >/dev/null || need_apt+=(build-essential)
  command -v pkg-config >/dev/null || need_apt+=(pkg-config)
fi
[ "${#need_apt[@]}" -gt 0 ] || exit 0
need_apt+=(python3)  # as before the split: Debian's python3 with whatever apt installs
echo "[setup] apt-get install ${need_apt[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
