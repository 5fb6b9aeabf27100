// Shared helpers for the real-workbench tests: code-server (VS Code 1.100 in the browser, Node
// extension host on the server) in its own process group with isolated XDG dirs, user data and
// extensions under .e2e/, plus headless system Chromium through playwright-core. No downloads.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const localCodeServer = path.join(root, '.tools/code-server/node_modules/.bin/code-server');
export const CODE_SERVER = process.env.CODE_SERVER || (fs.existsSync(localCodeServer) ? localCodeServer : 'code-server');
export const HEADED = process.env.HEADED === '1';
/**
 * The browser: $CHROMIUM, else Debian's chromium-headless-shell (Chromium's old headless mode:
 * the same Blink and V8 without the full browser's UI layer; the whole workbench pool took 736 and
 * 727 CPU-seconds with it against 891 with the full browser in headless mode, measured in a row on
 * 2026-12-07), else the full chromium (also what HEADED=1 needs: a window).
 */
const HEADLESS_SHELL = '/usr/bin/chromium-headless-shell';
export const CHROMIUM = process.env.CHROMIUM || (!HEADED && fs.existsSync(HEADLESS_SHELL) ? HEADLESS_SHELL : '/usr/bin/chromium');
export const PYTHON = path.join(root, '.venv/bin/python');
// The one sample project: the demo workspace the extension ships ("Try the Demo" copies it too).
export const SAMPLE_WORKSPACE = path.join(root, 'extension/media/demo-workspace');

/** The packaged extension under test: the first argument, else dist/retrace.vsix. */
export const VSIX = path.resolve(process.argv[2] || path.join(root, 'dist', 'retrace.vsix'));

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

/**
 * Numbered screenshots `<dir>/<prefix>NN-<label>.png` (unnumbered: `<prefix><label>.png`), each
 * logged. Earlier pictures of this series are removed first unless `keep` (a committed folder):
 * numbered ones only `<prefix>NN-*.png`, so a series with an empty prefix does not remove the
 * pictures of scenarios running beside it (run-scenarios.mjs runs several at a time).
 */
export function screenshots({ dir = path.join(root, '.e2e', 'screenshots'), prefix = '', numbered = true, settleMs = 300, keep = false } = {}) {
  fs.mkdirSync(dir, { recursive: true });
  const ours = f => f.startsWith(prefix) && f.endsWith('.png') && (!numbered || /^\d{2}-/.test(f.slice(prefix.length)));
  if (!keep) for (const f of fs.readdirSync(dir)) if (ours(f)) fs.rmSync(path.join(dir, f));
  let step = 0;
  return async (page, label, clip) => {
    await page.waitForTimeout(settleMs); // animations settle; for the picture only
    const number = numbered ? `${String(++step).padStart(2, '0')}-` : '';
    const file = path.join(dir, `${prefix}${number}${label}.png`);
    await page.screenshot({ path: file, clip });
    log('screenshot', path.relative(root, file));
  };
}

/**
 * One scenario's own corner of .e2e/: `.e2e/<name>/` with fresh user-data and extensions folders
 * and a fresh copy of the sample workspace; `ws(rel)` / `read(rel)` (undefined: no such file) work
 * in that workspace; `shot(page, label)` takes the scenario's screenshots (options as for
 * `screenshots`, the prefix defaults to `<name>-`).
 */
export function scenario(name, { shots = {} } = {}) {
  const work = freshDir(path.join(root, '.e2e', name));
  const userDataDir = freshDir(path.join(work, 'user-data'));
  const extensionsDir = freshDir(path.join(work, 'extensions'));
  const workspace = copyWorkspace(path.join(work, 'workspace'));
  const ws = rel => path.join(workspace, rel);
  const read = rel => (fs.existsSync(ws(rel)) ? fs.readFileSync(ws(rel), 'utf8') : undefined);
  const shot = screenshots({ prefix: `${name}-`, ...shots });
  return { name, vsix: VSIX, work, userDataDir, extensionsDir, workspace, ws, read, shot };
}

/**
 * Run the seed script `script` (a path under tests/e2e/, with `args`) BEFORE the scenario's
 * workbench starts, in the scenario's environment (testEnv: its own XDG data home), so the store
 * it writes is the one the extension's server opens for the scenario's folder. Returns the
 * script's JSON output and that store. (A first window only to make the server create the store,
 * then a stop and a restart, cost a whole workbench launch.)
 */
export function seedBeforeStart(sc, script, args = []) {
  const out = execFileSync(PYTHON, [path.join(root, 'tests', 'e2e', script), sc.workspace, ...args],
    { encoding: 'utf8', cwd: path.join(root, 'tests', 'e2e'), env: testEnv(sc.userDataDir), maxBuffer: 1 << 20 });
  const store = findStore(sc.userDataDir);
  if (store === undefined) throw new Error(`${script} wrote no store where the server will look (${sc.userDataDir}/../xdg-data)`);
  return { seeded: JSON.parse(out), store };
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
    // No animation, blinking cursor or smooth scroll: nothing a scenario checks, and each is
    // repaint work for a software-rendered page (~8% of a scenario's CPU, measured on `undo`).
    'workbench.reduceMotion': 'on',
    'editor.cursorBlinking': 'solid',
    'editor.smoothScrolling': false,
    'workbench.list.smoothScrolling': false,
    'workbench.editor.enablePreview': false,
    'retrace.pythonPath': process.env.RETRACE_E2E_SERVER_PYTHON || PYTHON,
    ...extra,
  }, null, 2));
}

/**
 * Start the pool's server fork service (tests/e2e/server_forks.py) and point every workbench this
 * process (and its children) starts at its launcher (RETRACE_E2E_SERVER_PYTHON, read by
 * writeUserSettings). Resolves once it listens; `stop()` ends it.
 */
export async function startServerForks() {
  const dir = freshDir(path.join(root, '.e2e', 'server-forks'));
  const launcher = path.join(dir, 'python');
  const proc = spawn(PYTHON, ['-m', 'tests.e2e.server_forks', path.join(dir, 'socket'), launcher],
    { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] });
  await new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: proc.stdout });
    lines.on('line', line => { if (line === 'ready') resolve(); });
    proc.on('exit', code => reject(new Error(`the server fork service exited (${code})`)));
  });
  process.env.RETRACE_E2E_SERVER_PYTHON = launcher;
  // stdin closed ends it (also when this process exits first).
  return { stop: () => { delete process.env.RETRACE_E2E_SERVER_PYTHON; proc.stdin.end(); } };
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

/** The argument vector of process `pid`. */
export function cmdline(pid) {
  return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
}

/**
 * Live `retrace serve` processes whose working directory is `workspace` (zombies left out; other
 * scenarios may run servers of their own at the same time).
 */
export function serverPids(workspace) {
  const mine = fs.realpathSync(workspace);
  const out = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = cmdline(entry);
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (cmd.includes('retrace') && cmd.includes('serve') && fs.readlinkSync(`/proc/${entry}/cwd`) === mine
        && stat.split(' ')[2] !== 'Z') out.push(Number(entry));
    } catch { /* gone, or not ours */ }
  }
  return out;
}

/**
 * The deterministic fake Messages API (`python -m retrace.offline`) as its own process, outside
 * code-server (it survives a restart); killed when this process exits. Resolves once it printed
 * its URL.
 */
export async function startFakeModel(scenarioName = 'e2e') {
  const proc = spawn(PYTHON, ['-m', 'retrace.offline', '--scenario', scenarioName], { stdio: ['ignore', 'pipe', 'inherit'] });
  process.on('exit', () => proc.kill());
  const url = await new Promise((resolve, reject) => {
    readline.createInterface({ input: proc.stdout }).once('line', line => resolve(line.trim()));
    proc.once('exit', code => reject(new Error(`fake model exited (${code})`)));
  });
  return { url, proc };
}

export function installVsix(vsix, { userDataDir, extensionsDir }) {
  const out = execFileSync(CODE_SERVER, ['--user-data-dir', userDataDir, '--extensions-dir', extensionsDir,
    '--install-extension', vsix, '--force'], { encoding: 'utf8', env: testEnv(userDataDir) });
  log(out.trim());
}

/**
 * The result of `installVsix` for this package without running it again: the first scenario to
 * need a package installs it with code-server into `.e2e/installed/<size>-<mtime>/extensions`
 * (a temporary folder renamed into place, so scenarios running side by side never see half an
 * install; the loser of a race drops its copy), then every scenario copies that folder into its
 * own extensions folder, the install record (`extensions.json`) pointing at the copy. Each
 * scenario still gets a fresh, private install: a scenario changing its extension folder changes
 * no other. A code-server install unzips the 68 MB package (~5 s per scenario on 2 cores); a copy
 * takes a fraction. The install scenario installs for real (`installVsix`): installing is what it
 * tests.
 */
export function installVsixCached(vsix, { extensionsDir }) {
  const stat = fs.statSync(vsix);
  const cache = path.join(root, '.e2e', 'installed', `${stat.size}-${Math.floor(stat.mtimeMs)}`);
  const installed = path.join(cache, 'extensions');
  if (!fs.existsSync(installed)) {
    const tmp = freshDir(path.join(root, '.e2e', 'installed', `.tmp-${process.pid}`));
    installVsix(vsix, { userDataDir: path.join(tmp, 'user-data'), extensionsDir: path.join(tmp, 'extensions') });
    try { fs.renameSync(tmp, cache); } catch { fs.rmSync(tmp, { recursive: true, force: true }); }
    // Installs of earlier packages (another size or time) are of no further use.
    for (const old of fs.readdirSync(path.dirname(cache))) {
      if (!old.startsWith('.tmp-') && old !== path.basename(cache)) fs.rmSync(path.join(path.dirname(cache), old), { recursive: true, force: true });
    }
  }
  fs.rmSync(extensionsDir, { recursive: true, force: true });
  fs.cpSync(installed, extensionsDir, { recursive: true, preserveTimestamps: true });
  // The record names where each extension lives: the copy now, as code-server would have written it.
  const record = path.join(extensionsDir, 'extensions.json');
  const entries = JSON.parse(fs.readFileSync(record, 'utf8')).map(e => {
    const at = path.join(extensionsDir, e.relativeLocation);
    return { ...e, location: { ...e.location, fsPath: at, path: at, external: pathToFileURL(at).href } };
  });
  fs.writeFileSync(record, JSON.stringify(entries));
  log(`installed ${path.basename(vsix)} (a copy of ${path.relative(root, installed)})`);
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

/** Stop code-server and wait until its whole process group is gone (SIGKILL after 30 s). */
export async function stopCodeServer(server) {
  const group = -server.proc.pid;
  server.stop();
  const gone = () => { try { process.kill(group, 0); return false; } catch { return true; } };
  await waitFor('code-server and its children to exit', gone, 30000, 200).catch(() => {
    try { process.kill(group, 'SIGKILL'); } catch { /* gone */ }
  });
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: !HEADED,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/**
 * What every workbench page asks of code-server: its responses uncompressed. code-server compresses
 * each response on the fly (Brotli for Chromium), the workbench's ~15 MB of scripts on every
 * load: ~0.7–1 CPU-second of code-server per window (measured), for a loopback connection.
 */
export const PAGE_DEFAULTS = { extraHTTPHeaders: { 'Accept-Encoding': 'identity' } };

/** A new browser page (1400×900 unless `options` say otherwise) that logs the page's errors. */
export async function newPage(browser, options = {}) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 }, ...PAGE_DEFAULTS, ...options });
  page.on('pageerror', e => log('pageerror', e.message));
  return page;
}

/** Open `workspace` in the workbench served by `server` and wait until the workbench is there. */
export async function openFolder(page, server, workspace) {
  await page.goto(`${server.url}/?folder=${encodeURIComponent(workspace)}`);
  await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
}

/**
 * Run one UI scenario and exit with its result: install the .vsix (a copy of one install per package,
 * see installVsixCached; `realInstall`: code-server's own install), write the user settings
 * (`settings` on top of the quiet defaults; an undefined value removes one), start code-server
 * (`env`, `workspaceTrust` as for startCodeServer), open a page (`page`: its options) on the
 * workspace, then `body(ctx)`. ctx: the scenario (see `scenario`) plus server, browser, page,
 * `wb` (the workbench helpers for the page) and `startServer(port?)`; a body that restarts puts the
 * new server and page into ctx, and the ones there at the end are cleaned up. PASS or FAIL is
 * logged; a failure leaves a screenshot (`failureShot`, default the scenario's `shot`) and runs
 * `onFailure(ctx)`; the browser, code-server and `cleanup()` are stopped whatever happens; the
 * process exits 0 on PASS, 1 on FAIL.
 */
export async function runScenario(sc, options, body) {
  const { settings = {}, env = {}, workspaceTrust = false, page: pageOptions = {} } = options;
  const { failureShot = sc.shot, onFailure = () => {}, cleanup = () => {}, realInstall = false } = options;
  if (realInstall) installVsix(sc.vsix, sc);
  else installVsixCached(sc.vsix, sc);
  writeUserSettings(sc.userDataDir, settings);
  let starts = 0;
  const startServer = port => startCodeServer({
    userDataDir: sc.userDataDir, extensionsDir: sc.extensionsDir, workspace: sc.workspace, env, workspaceTrust, port,
    logFile: path.join(sc.work, ++starts === 1 ? 'code-server.log' : `code-server-${starts}.log`),
  });
  const ctx = { ...sc, startServer, server: await startServer() };
  log(`code-server up at ${ctx.server.url}`);
  ctx.browser = await launchBrowser();
  ctx.page = await newPage(ctx.browser, pageOptions);
  ctx.wb = workbench(ctx.page, sc.ws);
  let failed = false;
  try {
    await openFolder(ctx.page, ctx.server, sc.workspace);
    await body(ctx);
    log('PASS');
  } catch (e) {
    failed = true;
    log('FAIL:', e);
    await failureShot(ctx.page, 'failure').catch(() => {});
    await onFailure(ctx);
  } finally {
    await ctx.browser.close();
    ctx.server.stop();
    await cleanup();
  }
  process.exit(failed ? 1 : 0);
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
 * The workbench pieces every UI scenario drives: the Retrace activity-bar icon, sidebar and its
 * rows, the chat webview, dialogs and toasts, a timeline row's context menu (by its text or a
 * locator), the chat prompt, the command palette, quick-open, the active editor's text. `ws(rel)` turns a
 * workspace-relative path into the absolute one quick-open resolves directly.
 */
export function workbench(page, ws) {
  const icon = () => page.locator('.activitybar [aria-label^="Retrace"]').first();
  const sidebar = () => page.locator('[id="workbench.view.extension.retrace"]');
  const row = text => sidebar().locator('.monaco-list-row', { hasText: text }).first();
  const chat = () => page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
  const dialogButton = text => page.locator('.monaco-dialog-box .monaco-button', { hasText: text }).first();
  const toast = text => page.locator('.notification-toast', { hasText: text }).first();
  // Monaco renders spaces as no-break spaces.
  const editorText = async () => (await page.locator('.editor-group-container.active .monaco-editor:visible .view-lines').first().innerText()).replace(/\u00a0/g, ' ');

  /**
   * Show the Retrace sidebar through its activity-bar icon (waiting for the icon: the extension is
   * active). The icon toggles, and a reloaded window may restore the sidebar open just before the
   * click: click only while the sidebar is not showing, until it shows.
   */
  async function openRetrace() {
    await icon().waitFor({ timeout: 60000 });
    await waitFor('the Retrace sidebar', async () => {
      if (await sidebar().isVisible()) return true;
      await icon().click();
      return sidebar().waitFor({ timeout: 5000 }).then(() => true, () => false);
    }, 30000);
  }

  async function dismissToasts() {
    await page.keyboard.press('Escape');
    // Always the first visible close button, with a short timeout: the toasts below move up when
    // one closes (a locator for "the second" then finds nothing), a toast may leave by itself, and
    // Escape leaves hidden toasts in the page; a click's default timeout would wait 30 s for each.
    const close = page.locator('.notification-toast .codicon-notifications-clear >> visible=true');
    for (let i = 0; i < 20 && (await close.count()) > 0; i++) {
      await close.first().click({ timeout: 2000 }).catch(() => {});
    }
  }

  /**
   * Bring a tree row out from under the tree's sticky headers (VS Code's default): the view follows
   * the head, so a row a test wants may sit under a parent pinned at the top. Scroll up over the
   * list until the row's centre is the row itself.
   */
  async function uncovered(locator) {
    for (let i = 0; i < 20; i++) {
      await locator.scrollIntoViewIfNeeded();
      const covered = await locator.evaluate(el => {
        const r = el.getBoundingClientRect();
        const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
        return hit !== null && !el.contains(hit);
      });
      if (!covered) return locator;
      const box = await locator.boundingBox();
      if (box === null) return locator;
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.mouse.wheel(0, -66);
      await page.waitForTimeout(100);
    }
    return locator;
  }

  /**
   * Right-click `target`, choose `item`. With `until` (a locator the choice makes visible, e.g. the
   * restore dialog's button): a tree that re-renders under the open menu (a late refresh after a
   * turn) closes it without running the entry, so the menu is opened again, at most 3 times, until
   * `until` shows. An entry that was taken is never chosen twice: `until` is looked for first.
   */
  async function contextMenu(target, item, until) {
    for (let attempt = 1; ; attempt++) {
      if (until !== undefined && (await until.isVisible())) return;
      await chooseFromMenu(target, item);
      if (until === undefined) return;
      if (await until.waitFor({ timeout: attempt < 3 ? 8000 : 20000 }).then(() => true, () => false)) return;
      if (attempt === 3) throw new Error(`menu entry "${item}" chosen 3 times, and nothing it opens showed`);
      log(`menu entry "${item}" gave nothing after 8 s (the view re-rendered under the menu?): again`);
    }
  }

  async function chooseFromMenu(target, item) {
    const at = typeof target === 'string' ? row(target) : target;
    // A tree that re-renders between finding the row and the click (a group added above it, a
    // virtualised row element reused for another item) puts another row under the mouse, and the
    // menu would act on THAT row. The row the right-click focused must be the one asked for;
    // otherwise the menu is closed and the row found again.
    for (let attempt = 1; ; attempt++) {
      await at.waitFor();
      const wanted = (await at.innerText()).trim();
      const list = at.locator('xpath=ancestor::*[contains(concat(" ", normalize-space(@class), " "), " monaco-list ")][1]');
      await (await uncovered(at)).click({ button: 'right' });
      const focused = (await list.locator('.monaco-list-row.focused').first().innerText({ timeout: 2000 }).catch(() => '')).trim();
      if (focused === wanted) break;
      const shown = t => JSON.stringify(t.split('\n')[0]);
      if (attempt === 3) throw new Error(`right-click on ${shown(wanted)} focused ${shown(focused)} 3 times (the tree kept moving)`);
      log(`right-click on ${shown(wanted)} landed on ${shown(focused)} (the tree re-rendered): again`);
      await page.keyboard.press('Escape');
      await page.locator('.monaco-menu').first().waitFor({ state: 'hidden', timeout: 2000 }).catch(() => {});
    }
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
    // The composer keeps the text when the prompt was not taken (the server stopped accepting for
    // a moment as the Enter landed): wait for it to empty, pressing Enter again once Send is back.
    await waitFor('the prompt to be sent', async () => {
      if ((await box.inputValue()) === '') return true;
      if (await chat().locator('#send:not([disabled])').isVisible()) await box.press('Enter');
      return false;
    }, 60000, 1000);
  }

  /**
   * Open the quick input with `key`, type `text`, wait for a row showing `rowText` and take it.
   * The quick input closes when the workbench moves the focus as it opens (a view re-rendering
   * under a loaded machine): open it again rather than typing into a hidden box.
   */
  async function quickPick(key, text, rowText, what) {
    const input = page.locator('.quick-input-widget input');
    for (let attempt = 1; ; attempt++) {
      try {
        await page.keyboard.press(key);
        await input.waitFor({ timeout: 10000 });
        await input.fill(text, { timeout: 10000 });
        await page.locator('.quick-input-list .monaco-list-row', { hasText: rowText }).first().waitFor({ timeout: 10000 });
        await input.press('Enter', { timeout: 10000 });
        return;
      } catch (err) {
        if (attempt === 3) throw err;
        log(`quick input closed before ${what} (attempt ${attempt}): opening it again`);
        await page.keyboard.press('Escape');
      }
    }
  }

  /**
   * The notification saying `text`, wherever it is now: its toast, or — an information toast hides
   * itself after 15 s (VS Code), sooner than a loaded machine may get to its buttons — the
   * notification centre, opened for it as a user would (Notifications: Show Notifications). The
   * result is the notification's row (a locator), visible.
   */
  async function notification(text) {
    const inToast = toast(text);
    if (await inToast.isVisible()) return inToast;
    const centre = page.locator('.notifications-center .notification-list-item', { hasText: text }).first();
    if (!(await centre.isVisible())) {
      log(`the toast "${text}" hid itself: taking it from the notification centre`);
      await runCommand('Notifications: Show Notifications');
    }
    await centre.waitFor({ timeout: 10000 });
    // A notification with buttons shows them only while expanded (a click on its row toggles).
    if ((await centre.locator('.monaco-button').count()) === 0) await centre.locator('.notification-list-item-message').click();
    return centre;
  }

  /** The labels of the buttons of the notification saying `text` (toast or centre). */
  async function notificationButtons(text) {
    const at = await notification(text);
    return (await at.locator('.monaco-button').allInnerTexts()).map(s => s.trim());
  }

  /**
   * Click `button` of the notification saying `text` (toast or centre). A toast that hides itself
   * between finding it and the click is taken from the centre.
   */
  async function notificationButton(text, button) {
    const first = await notification(text);
    if (await first.locator('.monaco-button', { hasText: button }).first().click({ timeout: 5000 }).then(() => true, () => false)) return;
    await (await notification(text)).locator('.monaco-button', { hasText: button }).first().click();
  }

  /** Run a command by its title from the command palette. */
  async function runCommand(title) {
    await quickPick('F1', `>${title}`, title, `"${title}" ran`);
  }

  async function openFile(rel) {
    // An absolute path resolves directly (the workbench's file-search cache may not know new files yet).
    await quickPick('Control+P', ws(rel), path.basename(rel), `${rel} opened`);
    await page.locator('.tab.active', { hasText: path.basename(rel) }).waitFor();
  }

  return { icon, sidebar, row, chat, dialogButton, toast, notificationButtons, notificationButton, editorText, openRetrace, dismissToasts, contextMenu, uncovered, sendPrompt, runCommand, openFile };
}

/** Every event of every session journal of the extension's store (oldest first per session). */
export function storeEvents(userDataDir) {
  const store = findStore(userDataDir);
  if (store === undefined) return [];
  const sessions = path.join(store, 'sessions');
  const events = [];
  for (const d of fs.readdirSync(sessions)) {
    const file = path.join(sessions, d, 'journal.jsonl');
    if (!fs.existsSync(file)) continue;
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      try { events.push(JSON.parse(line)); } catch { /* a blank or torn last line */ }
    }
  }
  return events;
}

/**
 * Where extensions before the one-store-per-folder rule kept the folder's store: the workbench's
 * storage for the scenario's (one) folder, `workspaceStorage/<id>/retrace.retrace/store`. The
 * extension names it to its server (`legacyStoreDir`), which adopts a store found there.
 */
export function oldStoreDir(userDataDir) {
  const base = path.join(userDataDir, 'User', 'workspaceStorage');
  const ids = (fs.existsSync(base) ? fs.readdirSync(base) : []).filter(d => fs.existsSync(path.join(base, d, 'meta.json')) || fs.existsSync(path.join(base, d, 'workspace.json')));
  if (ids.length !== 1) throw new Error(`expected one folder's workbench storage in ${base}, found: ${ids.join(', ') || 'none'}`);
  return path.join(base, ids[0], 'retrace.retrace', 'store');
}

/**
 * The store the extension's server holds for the scenario's folder: the folder's one store under
 * the scenario's own user data dir (`XDG_DATA_HOME`, see testEnv: `<stores>/<slug>-<hash>`, or the
 * store a `<slug>-<hash>.json` pointer there names), else an old store still in the workbench's
 * storage (`workspaceStorage/<id>/retrace.retrace/store`, before adoption).
 */
export function findStore(userDataDir) {
  const isStore = dir => typeof dir === 'string' && fs.existsSync(path.join(dir, 'store.json'));
  const stores = path.join(userDataDir, '..', 'xdg-data', 'retrace', 'stores');
  const entries = fs.existsSync(stores) ? fs.readdirSync(stores).sort() : [];
  for (const d of entries) {
    if (isStore(path.join(stores, d))) return path.join(stores, d);
  }
  for (const d of entries.filter(e => e.endsWith('.json'))) {
    let target;
    try { target = JSON.parse(fs.readFileSync(path.join(stores, d), 'utf8')).store; } catch { continue; }
    if (isStore(target)) return target;
  }
  const base = path.join(userDataDir, 'User', 'workspaceStorage');
  for (const d of fs.existsSync(base) ? fs.readdirSync(base) : []) {
    const store = path.join(base, d, 'retrace.retrace', 'store');
    if (isStore(store)) return store;
  }
  return undefined;
}
