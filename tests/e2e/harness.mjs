// Shared helpers for the real-workbench tests: code-server (VS Code 1.100 in the browser, Node
// extension host on the server) in its own process group with isolated XDG dirs, user data and
// extensions under .e2e/, plus headless system Chromium through playwright-core. No downloads.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const localCodeServer = path.join(root, '.tools/code-server/node_modules/.bin/code-server');
export const CODE_SERVER = process.env.CODE_SERVER || (fs.existsSync(localCodeServer) ? localCodeServer : 'code-server');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const HEADED = process.env.HEADED === '1';
export const PYTHON = path.join(root, '.venv/bin/python');
// The one sample project: the demo workspace the extension ships ("Try the Demo" copies it too).
export const SAMPLE_WORKSPACE = path.join(root, 'extension/media/demo-workspace');

export const t0 = Date.now();
export const log = (...a) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);

export function freshDir(p) {
  fs.rmSync(p, { recursive: true, force: true });
  fs.mkdirSync(p, { recursive: true });
  return p;
}

/** A fresh copy of the sample workspace at `dest`. */
export function copyWorkspace(dest) {
  freshDir(dest);
  fs.cpSync(SAMPLE_WORKSPACE, dest, { recursive: true });
  return dest;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
    s.on('error', reject);
  });
}

/** Quiet, deterministic workbench settings plus Retrace's own. */
export function writeUserSettings(userDataDir, extra = {}) {
  const dir = path.join(userDataDir, 'User');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify({
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'security.workspace.trust.enabled': false,
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'extensions.ignoreRecommendations': true,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'chat.commandCenter.enabled': false,
    'git.enabled': false,
    'files.autoSave': 'off',
    'editor.minimap.enabled': false,
    'workbench.editor.enablePreview': false,
    'retrace.pythonPath': PYTHON,
    ...extra,
  }, null, 2));
}

/**
 * Environment of code-server (and so of the extension host and the Retrace server). Never a real
 * model: the key, token and endpoint of the caller's environment are dropped, and the server's
 * scripted model is forced (RETRACE_FAKE_MODEL, default `demo`: with no key the server would
 * otherwise refuse agent turns outside a demo folder). `extra` wins: a test that brings its own
 * fake endpoint passes RETRACE_FAKE_MODEL: '' and its own ANTHROPIC_API_KEY.
 */
export function testEnv(userDataDir, extra = {}) {
  const env = { ...process.env };
  delete env.ANTHROPIC_API_KEY;
  delete env.ANTHROPIC_BASE_URL;
  delete env.ANTHROPIC_AUTH_TOKEN;
  env.RETRACE_FAKE_MODEL = 'demo';
  Object.assign(env, extra);
  env.XDG_CONFIG_HOME = path.join(userDataDir, '..', 'xdg-config');
  env.XDG_DATA_HOME = path.join(userDataDir, '..', 'xdg-data');
  env.XDG_CACHE_HOME = path.join(userDataDir, '..', 'xdg-cache');
  return env;
}

/** Live `retrace serve` processes whose working directory is `workspace` (zombies left out). */
export function serverPids(workspace) {
  const out = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (cmd.includes('retrace') && cmd.includes('serve') && fs.readlinkSync(`/proc/${entry}/cwd`) === workspace
        && stat.split(' ')[2] !== 'Z') out.push(Number(entry));
    } catch { /* gone, or not ours */ }
  }
  return out;
}

export function installVsix(vsix, { userDataDir, extensionsDir }) {
  const out = execFileSync(CODE_SERVER, ['--user-data-dir', userDataDir, '--extensions-dir', extensionsDir,
    '--install-extension', vsix, '--force'], { encoding: 'utf8', env: testEnv(userDataDir) });
  log(out.trim());
}

/**
 * Start code-server in its own process group; resolves once /healthz answers. `workspaceTrust`:
 * keep VS Code's workspace trust on (off by default: every folder is trusted).
 */
export async function startCodeServer({ userDataDir, extensionsDir, workspace, logFile, env = {}, port, workspaceTrust = false }) {
  port ??= await freePort();
  const args = ['--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry',
    '--disable-update-check', ...(workspaceTrust ? [] : ['--disable-workspace-trust']), '--disable-getting-started-override',
    '--user-data-dir', userDataDir, '--extensions-dir', extensionsDir, workspace];
  const out = fs.openSync(logFile, 'w');
  const proc = spawn(CODE_SERVER, args, { stdio: ['ignore', out, out], detached: true, env: testEnv(userDataDir, env) });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`code-server exited early (${proc.exitCode}); see ${logFile}`);
    try { if ((await fetch(`${url}/healthz`)).ok) break; } catch { /* not up yet */ }
    if (Date.now() > deadline) throw new Error('code-server did not start within 60s');
    await new Promise(r => setTimeout(r, 200));
  }
  // The whole group: code-server, its extension host, the Retrace server and its children.
  const stop = () => { try { process.kill(-proc.pid, 'SIGTERM'); } catch { /* gone */ } };
  process.on('exit', stop);
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { stop(); process.exit(130); });
  return { url, port, proc, stop };
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: !HEADED,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Poll `fn` until it returns a truthy value (never a fixed sleep). */
export async function waitFor(what, fn, timeoutMs = 30000, intervalMs = 100) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) { last = e; }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await new Promise(r => setTimeout(r, intervalMs));
  }
}

/**
 * The workbench pieces every UI scenario drives: the Retrace sidebar and its rows, the chat
 * webview, dialogs and toasts, a timeline row's context menu, the chat prompt, quick-open.
 * `ws(rel)` turns a workspace-relative path into the absolute one quick-open resolves directly.
 */
export function workbench(page, ws) {
  const sidebar = () => page.locator('[id="workbench.view.extension.retrace"]');
  const row = text => sidebar().locator('.monaco-list-row', { hasText: text }).first();
  const chat = () => page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
  const dialogButton = text => page.locator('.monaco-dialog-box .monaco-button', { hasText: text }).first();
  const toast = text => page.locator('.notification-toast', { hasText: text }).first();

  async function contextMenu(rowText, item) {
    await row(rowText).click({ button: 'right' });
    const entry = page.locator('.monaco-menu .action-item', { hasText: item }).first();
    await entry.waitFor();
    // The workbench ignores a click that lands while the menu is still opening: click until it closes.
    await waitFor(`menu entry "${item}" taken`, async () => {
      if (!(await entry.isVisible())) return true;
      await entry.click({ timeout: 2000 }).catch(() => {});
      return page.locator('.monaco-menu').first().waitFor({ state: 'hidden', timeout: 1000 }).then(() => true, () => false);
    }, 10000);
  }

  async function sendPrompt(text) {
    const box = chat().locator('#prompt');
    await box.waitFor();
    await chat().locator('#send:not([disabled])').waitFor({ timeout: 60000 });
    await box.fill(text);
    await box.press('Enter');
  }

  async function openFile(rel) {
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor();
    // An absolute path resolves directly (the workbench's file-search cache may not know new files yet).
    await input.fill(ws(rel));
    await page.locator('.quick-input-list .monaco-list-row', { hasText: path.basename(rel) }).first().waitFor();
    await input.press('Enter');
    await page.locator('.tab.active', { hasText: path.basename(rel) }).waitFor();
  }

  return { sidebar, row, chat, dialogButton, toast, contextMenu, sendPrompt, openFile };
}
