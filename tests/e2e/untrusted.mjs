// Real-browser E2E: an untrusted workspace gets a read-only Retrace, and trusting it later works
// without a reload. Workspace trust is on; the folder is opened and NOT trusted ("No, I don't
// trust the authors"). Expected: the chat's banner says the workspace is not trusted and offers
// "Manage Workspace Trust"; the timeline shows the baseline; the palette hides "Restore to
// Checkpoint…"; a prompt is refused (no file written). Then the banner's button opens the trust
// editor, the folder is trusted, the banner goes away and the same window runs a turn.
// Then the keyboard: Ctrl+Alt+Shift+R ("Restore to Checkpoint…") lists the checkpoints newest
// first with their line stats; picking the baseline and "Restore code" takes the turn back, and
// Ctrl+Alt+Z ("Undo Last Restore") brings it back again.
// Usage: node tests/e2e/untrusted.mjs [vsix]   (npm run test:e2e packages first)
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { log, scenario, runScenario, waitFor } from './harness.mjs';

const sc = scenario('untrusted');
const { ws, shot } = sc;

await runScenario(sc, {
  settings: {
    'security.workspace.trust.enabled': true,
    'security.workspace.trust.startupPrompt': 'always',
    'retrace.permissions.write': 'auto',
    'retrace.permissions.command': 'auto',
  },
  env: { RETRACE_FAKE_MODEL: 'e2e' },
  workspaceTrust: true,
}, async ({ page, wb }) => {
  const { row, chat, dialogButton, sendPrompt } = wb;

  async function paletteHas(title) {
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor();
    await input.fill(`>Retrace: ${title}`);
    await page.waitForTimeout(500);
    const n = await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).count();
    await page.keyboard.press('Escape');
    return n > 0;
  }

  const dontTrust = page.locator('.monaco-dialog-box .monaco-button', { hasText: "No, I don't trust the authors" }).first();
  await dontTrust.waitFor({ timeout: 60000 });
  await dontTrust.click();
  await wb.openRetrace();

  const banner = chat().locator('#banner[data-kind="untrusted"]');
  await banner.waitFor({ timeout: 60000 });
  assert.match(await banner.innerText(), /not trusted/);
  await row('Baseline').waitFor({ timeout: 60000 });
  assert.equal(await paletteHas('Restore to Checkpoint'), false, 'restore is hidden from the palette while untrusted');
  await shot(page, 'read-only');

  await sendPrompt('Create hello.txt');
  await chat().locator('.error', { hasText: 'untrusted workspace' }).waitFor({ timeout: 30000 });
  assert.ok(!fs.existsSync(ws('hello.txt')), 'nothing was written');

  await banner.locator('button', { hasText: 'Manage Workspace Trust' }).click();
  const trust = page.locator('.workspace-trust-editor .monaco-button', { hasText: /^Trust$/ }).first();
  await trust.waitFor({ timeout: 30000 });
  await trust.click();
  await waitFor('the banner is gone', async () => (await chat().locator('#banner[data-kind="untrusted"]').count()) === 0, 60000);
  assert.equal(await paletteHas('Restore to Checkpoint'), true, 'restore is in the palette once trusted');
  // Back to the chat with the keybinding of "Retrace: Open Retrace" (the trust editor has the focus).
  await page.keyboard.press('Control+Alt+R');
  await sendPrompt('Create hello.txt');
  await waitFor('the turn wrote hello.txt', () => fs.existsSync(ws('hello.txt')), 60000);
  await shot(page, 'trusted');
  await waitFor('the turn ends', async () => (await chat().locator('#send:not([disabled])').count()) === 1, 60000);

  await page.keyboard.press('Control+Alt+Shift+R');
  const picks = page.locator('.quick-input-list .monaco-list-row');
  await picks.first().waitFor({ timeout: 20000 });
  const labels = await picks.allInnerTexts();
  log('restore picks:', labels.map(l => l.replace(/\s+/g, ' ')).join(' | '));
  assert.match(labels[0] ?? '', /you are here/, 'the newest checkpoint (the head) comes first');
  assert.ok(labels.some(l => /write_file/.test(l) && /\+1 −0/.test(l)), 'line stats are shown');
  const input = page.locator('.quick-input-widget input');
  await input.fill('Starting point');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Starting point' }).first().waitFor();
  await input.press('Enter');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Restore code' }).first().waitFor({ timeout: 10000 });
  await input.fill('Restore code');
  await input.press('Enter');
  await dialogButton('Restore').waitFor({ timeout: 20000 });
  await dialogButton('Restore').click();
  await waitFor('the turn taken back', () => !fs.existsSync(ws('hello.txt')), 30000);
  await shot(page, 'restored-by-keyboard');
  await page.locator('.monaco-workbench').click({ position: { x: 700, y: 400 } }); // focus leaves the webview
  await page.keyboard.press('Control+Alt+Z');
  await waitFor('the restore undone', () => fs.existsSync(ws('hello.txt')), 30000);
});
