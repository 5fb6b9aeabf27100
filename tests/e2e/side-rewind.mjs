// Real-browser E2E: a conversation restore rewinds the background commands with it. Two turns
// each start a background command (tests/e2e/scenarios/side-rewind.json: `sleep 3071`, then
// `sleep 3072`); "Restore to Checkpoint…" on the first command's checkpoint, "Restore
// conversation": the command started after that checkpoint is stopped, the earlier one keeps
// running (found by their command lines). Screenshot: .e2e/screenshots/side-rewind-*.png.
// Usage: node tests/e2e/side-rewind.mjs [vsix]   (npm run test:e2e packages first)
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { root, log, scenario, runScenario, waitFor } from './harness.mjs';

const sc = scenario('side-rewind');
const { shot } = sc;

/** Whether a process whose command line is exactly `sleep <n>` runs. */
function sleeping(n) {
  return pids(n).length > 0;
}

/** The pids of the processes whose command line is exactly `sleep <n>`. */
function pids(n) {
  try {
    return execFileSync('pgrep', ['-f', `^sleep ${n}$`], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

await runScenario(sc, {
  settings: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  env: { RETRACE_FAKE_MODEL: path.join(root, 'tests/e2e/scenarios/side-rewind.json') },
}, async ({ page, wb }) => {
  const { chat, row, dialogButton, sendPrompt } = wb;
  await wb.openRetrace();
  await row('Baseline').waitFor({ timeout: 60000 });
  const idle = async () => (await chat().locator('#send:not([disabled])').count()) === 1;

  await sendPrompt('Start the first watcher');
  await waitFor('the first command runs', () => sleeping(3071), 60000);
  await waitFor('the first turn ends', idle, 60000);
  await sendPrompt('Start the second watcher');
  await waitFor('the second command runs', () => sleeping(3072), 60000);
  await waitFor('the second turn ends', idle, 60000);

  await page.locator('.monaco-workbench').click({ position: { x: 700, y: 400 } }); // focus leaves the webview
  await page.keyboard.press('Control+Alt+Shift+R');
  const input = page.locator('.quick-input-widget input');
  await page.locator('.quick-input-list .monaco-list-row').first().waitFor({ timeout: 20000 });
  await input.fill('sleep 3071');
  const pick = page.locator('.quick-input-list .monaco-list-row', { hasText: 'sleep 3071' }).first();
  await pick.waitFor({ timeout: 10000 });
  log('restore target:', (await pick.innerText()).replace(/\s+/g, ' '));
  await input.press('Enter');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Restore conversation' }).first().waitFor({ timeout: 10000 });
  await input.fill('Restore conversation');
  await input.press('Enter');
  // A confirmation may come first (answered when it shows); no fixed wait for one that does not.
  const confirm = dialogButton('Restore');
  await waitFor('the later command is stopped', async () => {
    if (await confirm.isVisible()) await confirm.click({ timeout: 2000 }).catch(() => {});
    return !sleeping(3072);
  }, 30000);
  assert.ok(sleeping(3071), 'the command started before the target keeps running');
  await shot(page, 'restored');
  // The workbench is ended with a signal its server may not outlive cleanly (its next start
  // would end the command): end the one this scenario left running now.
  for (const pid of pids(3071)) {
    try { process.kill(pid, 'SIGTERM'); } catch { /* gone */ }
  }
});
