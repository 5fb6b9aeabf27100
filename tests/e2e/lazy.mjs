// Real-browser E2E: a window that never opens Retrace starts no server; opening Retrace starts it.
// The packaged .vsix in code-server, driven by headless Chromium. The workspace is opened and left
// alone for LAZY_WAIT_MS (default 10 s): the status bar says "Retrace: not started" (the extension
// is active, cheaply) and no `retrace serve` process works in that workspace. Clicking the Retrace
// icon in the activity bar starts exactly one server and the status bar turns to idle.
// No key and no forced scenario, in a folder that is no demo folder: the chat's banner says so and
// offers "Set API Key" / "Try the Demo"; a prompt is refused at once and touches nothing; "Try the
// Demo" creates a marked scratch copy of the sample under the extension's global storage.
// Usage: node tests/e2e/lazy.mjs [vsix]   (npm run test:e2e packages first)
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  root, log, freshDir, copyWorkspace, writeUserSettings, installVsix, startCodeServer, launchBrowser, waitFor, serverPids, workbench,
} from './harness.mjs';

const vsix = path.resolve(process.argv[2] || path.join(root, 'dist', 'retrace.vsix'));
const work = freshDir(path.join(root, '.e2e', 'lazy'));
const userDataDir = freshDir(path.join(work, 'user-data'));
const extensionsDir = freshDir(path.join(work, 'extensions'));
const workspace = copyWorkspace(path.join(work, 'workspace'));
const shots = path.join(root, '.e2e', 'screenshots');
fs.mkdirSync(shots, { recursive: true });
const waitMs = Number(process.env.LAZY_WAIT_MS || 10000);

installVsix(vsix, { userDataDir, extensionsDir });
writeUserSettings(userDataDir);
const snapshot = () => JSON.stringify(fs.readdirSync(workspace, { recursive: true }).sort().map(f => {
  const p = path.join(workspace, f);
  return fs.statSync(p).isFile() ? [f, fs.readFileSync(p, 'utf8')] : [f];
}));
const before = snapshot();
const server = await startCodeServer({
  userDataDir, extensionsDir, workspace, logFile: path.join(work, 'code-server.log'), env: { RETRACE_FAKE_MODEL: '' },
});
log(`code-server up at ${server.url}`);
const browser = await launchBrowser();
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
const { chat, sendPrompt } = workbench(page, rel => path.join(workspace, rel));
let failed = false;
try {
  await page.goto(`${server.url}/?folder=${encodeURIComponent(workspace)}`);
  await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
  const status = page.locator('.statusbar-item', { hasText: 'Retrace:' }).first();
  await status.waitFor({ timeout: 60000 });
  assert.match(await status.innerText(), /Retrace: not started/);
  await page.waitForTimeout(waitMs);
  assert.deepEqual(serverPids(workspace), [], `no Retrace server after ${waitMs} ms in a window that never opened Retrace`);
  assert.match(await status.innerText(), /Retrace: not started/);
  await page.screenshot({ path: path.join(shots, 'lazy-1-not-started.png') });
  log(`no server after ${waitMs} ms`);

  await page.locator('.activitybar [aria-label^="Retrace"]').first().click();
  const pids = await waitFor('one server after opening Retrace', () => { const p = serverPids(workspace); return p.length === 1 && p; }, 60000);
  await waitFor('status bar says idle', async () => (await status.innerText()).includes('Retrace: idle'), 60000);
  const cmdline = fs.readFileSync(`/proc/${pids[0]}/cmdline`, 'utf8').split('\0');
  assert.ok(cmdline.includes('-I'), `the server runs isolated: ${cmdline.join(' ')}`);
  await page.screenshot({ path: path.join(shots, 'lazy-2-opened.png') });
  log(`opening Retrace started server ${pids[0]}`);

  const banner = chat().locator('#banner[data-kind="noKey"]');
  await banner.waitFor({ timeout: 30000 });
  assert.match(await banner.innerText(), /No Anthropic API key/);
  await sendPrompt('Do the demo here');
  await chat().locator('.error', { hasText: "No Anthropic API key: run 'Retrace: Set API Key' or 'Retrace: Try the Demo'" }).waitFor({ timeout: 30000 });
  await chat().locator('#send:not([disabled])').waitFor({ timeout: 10000 }); // not stuck "running"
  await page.screenshot({ path: path.join(shots, 'lazy-3-no-key.png') });
  assert.equal(snapshot(), before, 'a refused turn touches nothing');
  await banner.locator('button', { hasText: 'Try the Demo' }).click();
  const demo = path.join(userDataDir, 'User', 'globalStorage', 'retrace.retrace', 'demo', '1');
  await waitFor('the demo folder', () => fs.existsSync(path.join(demo, '.retrace-demo.json')), 30000);
  assert.ok(fs.existsSync(path.join(demo, 'src', 'app.py')), 'the demo folder holds the sample project');
  assert.equal(snapshot(), before, 'the demo never touches the open folder');
  log(`demo folder ${demo}`);
  log('PASS');
} catch (e) {
  failed = true;
  log('FAIL:', e);
  await page.screenshot({ path: path.join(shots, 'lazy-failure.png') }).catch(() => {});
} finally {
  await browser.close();
  server.stop();
}
process.exit(failed ? 1 : 0);
