#!/usr/bin/env bash
# Runs Retrace: VS Code (code-server) in your browser with the Retrace extension installed from
# the freshly packaged .vsix and a fresh copy of the sample workspace (.e2e/demo/workspace).
# That copy is a demo folder (it holds .retrace-demo.json): without ANTHROPIC_API_KEY the server's
# scripted offline model answers there, and only there. Stays in the foreground;
# Ctrl-C stops everything. PORT (default 8080) picks the port; it listens on 127.0.0.1 only.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
port="${PORT:-8080}"

bash scripts/setup.sh
echo "[run] building and packaging the extension"
npm run --silent package >/dev/null

code_server="${CODE_SERVER:-$root/.tools/code-server/node_modules/.bin/code-server}"
[ -x "$code_server" ] || { echo "code-server not found at $code_server (run: bash scripts/setup.sh)" >&2; exit 1; }

demo="$root/.e2e/demo"
rm -rf "$demo"
mkdir -p "$demo/user-data/User" "$demo/extensions"
cp -r extension/media/demo-workspace "$demo/workspace"
printf '{\n  "demo": true,\n  "createdBy": "scripts/run.sh"\n}\n' > "$demo/workspace/.retrace-demo.json"
cat > "$demo/user-data/User/settings.json" <<JSON
{
  "workbench.startupEditor": "none",
  "security.workspace.trust.enabled": false,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "git.enabled": false,
  "retrace.pythonPath": "$root/.venv/bin/python"
}
JSON
# code-server's own config and state stay inside .e2e/demo.
export XDG_CONFIG_HOME="$demo/xdg-config" XDG_DATA_HOME="$demo/xdg-data" XDG_CACHE_HOME="$demo/xdg-cache"
"$code_server" --user-data-dir "$demo/user-data" --extensions-dir "$demo/extensions" \
  --install-extension dist/retrace.vsix --force >/dev/null

if [ -z "${ANTHROPIC_API_KEY:-}" ]; then
  echo "[run] no ANTHROPIC_API_KEY: the offline demo model answers"
fi
echo
echo "  Retrace is running. Open:  http://127.0.0.1:$port/?folder=$demo/workspace"
echo "  (click the Retrace icon in the activity bar; Ctrl-C here stops it)"
echo
exec "$code_server" --bind-addr "127.0.0.1:$port" --auth none --disable-telemetry --disable-update-check \
  --disable-workspace-trust --disable-getting-started-override \
  --user-data-dir "$demo/user-data" --extensions-dir "$demo/extensions" "$demo/workspace"
