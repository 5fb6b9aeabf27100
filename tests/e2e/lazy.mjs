// Real-browser E2E: a window that never opens Retrace starts no server; opening Retrace starts it.
// The packaged .vsix in code-server, driven by headless Chromium. The workspace is opened and left
// alone for LAZY_WAIT_MS (default 10 s): the status bar says "Retrace: not started" (the extension
// is active, cheaply) and no `retrace serve` process works in that workspace. Clicking the Retrace
// icon in the activity bar starts exactly one server and the status bar turns to idle.
// No key and no forced scenario, in a folder that is no demo folder: the chat's banner says so and
// offers "Choose Model" / "Try the Demo"; a prompt is refused at once and touches nothing; "Try the
// Demo" creates a marked scratch copy of the sample under the extension's global storage.
// The first-run choice, through the banner's "Choose Model": every provider is offered (the API key
// first: this editor has no Copilot models); "Use a local model" prefills Ollama's endpoint, writes
// the user settings, reaches the running server without a restart (the banner goes: the model mode
// is live) and the status bar's tooltip names the endpoint and model.
// Usage: node tests/e2e/lazy.mjs [vsix]   (npm run test:e2e packages first)
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cmdline, log, scenario, runScenario, serverPids, waitFor } from './harness.mjs';

const sc = scenario('lazy');
const { userDataDir, workspace, shot } = sc;
const waitMs = Number(process.env.LAZY_WAIT_MS || 10000);
const snapshot = () => JSON.stringify(fs.readdirSync(workspace, { recursive: true }).sort().map(f => {
  const p = path.join(workspace, f);
  return fs.statSync(p).isFile() ? [f, fs.readFileSync(p, 'utf8')] : [f];
}));
const before = snapshot();

await runScenario(sc, { env: { RETRACE_FAKE_MODEL: '' } }, async ({ page, wb }) => {
  const { chat, sendPrompt } = wb;
  const status = page.locator('.statusbar-item', { hasText: 'Retrace:' }).first();
  await status.waitFor({ timeout: 60000 });
  assert.match(await status.innerText(), /Retrace: not started/);
  await page.waitForTimeout(waitMs);
  assert.deepEqual(serverPids(workspace), [], `no Retrace server after ${waitMs} ms in a window that never opened Retrace`);
  assert.match(await status.innerText(), /Retrace: not started/);
  await shot(page, 'not-started');
  log(`no server after ${waitMs} ms`);

  await wb.icon().click();
  const pids = await waitFor('one server after opening Retrace', () => { const p = serverPids(workspace); return p.length === 1 && p; }, 60000);
  await waitFor('status bar says idle', async () => (await status.innerText()).includes('Retrace: idle'), 60000);
  const argv = cmdline(pids[0]);
  assert.ok(argv.includes('-I'), `the server runs isolated: ${argv.join(' ')}`);
  await shot(page, 'opened');
  log(`opening Retrace started server ${pids[0]}`);

  const banner = chat().locator('#banner[data-kind="noKey"]');
  await banner.waitFor({ timeout: 30000 });
  assert.match(await banner.innerText(), /No model is set up/);
  assert.ok(await banner.locator('button', { hasText: 'Choose Model' }).isVisible(), 'the banner offers the model choice');
  assert.ok(await banner.locator('button', { hasText: 'Try the Demo' }).isVisible(), 'and the demo');
  await sendPrompt('Do the demo here');
  await chat().locator('.error', { hasText: "No model configured: run 'Retrace: Choose Model Provider'" }).waitFor({ timeout: 30000 });
  await chat().locator('#send:not([disabled])').waitFor({ timeout: 10000 }); // not stuck "running"
  await shot(page, 'no-key');
  assert.equal(snapshot(), before, 'a refused turn touches nothing');
  await banner.locator('button', { hasText: 'Choose Model' }).click();
  const rows = page.locator('.quick-input-list .monaco-list-row');
  await rows.filter({ hasText: 'Use a local model' }).first().waitFor({ timeout: 20000 });
  const offered = (await rows.allInnerTexts()).map(t => t.split('\n')[0]);
  assert.deepEqual(offered, ['Use an Anthropic API key', 'Use my Copilot subscription', 'Use Amazon Bedrock', 'Use Google Vertex AI', 'Use a local model']);
  await shot(page, 'choose-model');
  await rows.filter({ hasText: 'Use a local model' }).first().click();
  const input = page.locator('.quick-input-widget input');
  await waitFor('Ollama prefilled', async () => (await input.inputValue()) === 'http://localhost:11434/v1', 10000);
  await input.press('Enter');
  await waitFor('the model name box', async () => (await input.inputValue()) === '' && (await page.locator('.quick-input-widget').innerText()).includes('Model name'), 10000);
  await input.fill('qwen2.5-coder:14b');
  await input.press('Enter');
  await waitFor('the key box', async () => (await page.locator('.quick-input-widget').innerText()).includes('API key for this endpoint'), 10000);
  await input.press('Enter'); // no key
  // Machine-scoped values go to the remote's user settings (code-server's Machine folder).
  const settingsFiles = ['User', 'Machine'].map(d => path.join(userDataDir, d, 'settings.json'));
  const written = await waitFor('the user settings', () => {
    const text = settingsFiles.filter(f => fs.existsSync(f)).map(f => fs.readFileSync(f, 'utf8')).join('\n');
    return text.includes('"retrace.model.provider": "openai-compatible"') && text.includes('openaiCompatible') && text;
  }, 20000);
  assert.match(written, /"retrace\.model\.openaiCompatible\.baseUrl": "http:\/\/localhost:11434\/v1"/);
  assert.match(written, /"retrace\.model\.id": "qwen2\.5-coder:14b"/);
  await banner.waitFor({ state: 'hidden', timeout: 30000 });
  assert.deepEqual(serverPids(workspace), pids, 'the same server took the new provider (no key changed: no restart)');
  await status.hover();
  await page.locator('.monaco-hover', { hasText: 'OpenAI-compatible (http://localhost:11434/v1) · qwen2.5-coder:14b' }).first().waitFor({ timeout: 20000 });
  await shot(page, 'model-chosen');
  log('first-run choice: local model written and live');
  // "Try the Demo" (last: it opens the demo folder in a new window).
  await wb.runCommand('Retrace: Try the Demo');
  const demo = path.join(userDataDir, 'User', 'globalStorage', 'retrace.retrace', 'demo', '1');
  await waitFor('the demo folder', () => fs.existsSync(path.join(demo, '.retrace-demo.json')), 30000);
  assert.ok(fs.existsSync(path.join(demo, 'src', 'app.py')), 'the demo folder holds the sample project');
  assert.equal(snapshot(), before, 'the demo never touches the open folder');
  log(`demo folder ${demo}`);
});
