// Real-browser E2E: unsaved work is sacred and a crashed server recovers by itself.
// The packaged .vsix in code-server, driven by headless Chromium, against the real Retrace server
// and the deterministic fake model scenario `e2e`.
// Steps: a prompt changes files → the user types in src/app.py WITHOUT saving → Restore Code to
// the baseline: the dialog names "unsaved changes in the editor" and its default button is the
// safe "Skip conflicting files" (Enter keeps the typing, everything else is restored, the result
// names what was skipped) → Restore Code again, Overwrite chosen explicitly → "Retrace: Undo Last
// Restore" from the command palette brings the files AND the typing back → kill -9 of the server:
// it comes back by itself (a note says so), the status bar is true, the timeline works and the
// chat is not stuck (a new prompt runs). Screenshots: .e2e/screenshots/editor-safety-*.png.
// Usage: node tests/e2e/editor-safety.mjs [vsix]   (npm run test:e2e packages first)
import assert from 'node:assert/strict';
import { log, scenario, runScenario, serverPids, waitFor } from './harness.mjs';

const sc = scenario('editor-safety');
const { workspace, read, shot } = sc;
const ORIGINAL_APP = read('src/app.py');
const ANNOTATION = '# Touched by the Retrace e2e scenario.';
const TYPING = 'my unsaved typing';

await runScenario(sc, {
  settings: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  env: { RETRACE_FAKE_MODEL: 'e2e' },
}, async ({ page, wb }) => {
  const { row, chat, dialogButton, toast, editorText, contextMenu, sendPrompt, openFile, dismissToasts, runCommand } = wb;
  const dialog = () => page.locator('.monaco-dialog-box').first();
  const status = () => page.locator('.statusbar-item', { hasText: 'Retrace:' }).first();

  await wb.openRetrace();

  // 1. The agent changes files (hello.txt created, src/app.py annotated, generated/out.txt made).
  await sendPrompt('Create hello.txt, annotate src/app.py and generate a file');
  await chat().locator('.assistant', { hasText: 'Done: created hello.txt' }).waitFor({ timeout: 60000 });
  await waitFor('turn on disk', () => read('generated/out.txt') !== undefined && read('src/app.py')?.includes(ANNOTATION));
  for (const label of ['write_file', 'baseline']) await row(label).waitFor({ timeout: 30000 });

  // 2. The user types in src/app.py and does NOT save.
  await openFile('src/app.py');
  await page.locator('.editor-group-container.active .view-line').first().click();
  await page.keyboard.press('Control+Home');
  await page.keyboard.type(`# ${TYPING}\n`);
  await page.locator('.tab.active.dirty', { hasText: 'app.py' }).waitFor();
  assert.ok(!read('src/app.py').includes(TYPING), 'the typing is not on disk');
  await shot(page, 'unsaved-typing');

  // 3. Restore Code to the baseline: the unsaved buffer is a conflict, named as such; the
  //    default (focused) button is the safe one; Enter takes it.
  await contextMenu('baseline', 'Restore Code', dialogButton('Skip conflicting files'));
  await dialogButton('Skip conflicting files').waitFor({ timeout: 20000 });
  const text = await dialog().innerText();
  log('dialog:', text.replace(/\s+/g, ' '));
  assert.match(text, /unsaved changes in the editor/);
  assert.match(text, /src\/app\.py/);
  assert.doesNotMatch(text, /0 files/);
  const focused = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? '');
  assert.equal(focused, 'Skip conflicting files', `the focused default button is "${focused}"`);
  await shot(page, 'unsaved-conflict-dialog');
  await page.keyboard.press('Enter');
  await waitFor('everything else restored', () => read('hello.txt') === undefined && read('generated/out.txt') === undefined);
  assert.ok(read('src/app.py').includes(ANNOTATION), 'the conflicting file was left alone on disk');
  assert.ok((await editorText()).includes(TYPING), 'the typing is still in the editor');
  await toast('Skipped').waitFor({ timeout: 20000 });
  assert.match(await toast('Skipped').innerText(), /src\/app\.py/);
  await shot(page, 'skipped-conflicting-file');
  await dismissToasts();

  // 4. Overwrite, chosen explicitly.
  await contextMenu('baseline', 'Restore Code', dialogButton('Overwrite'));
  await dialogButton('Overwrite').waitFor({ timeout: 20000 });
  await dialogButton('Overwrite').click();
  await waitFor('src/app.py restored on disk', () => read('src/app.py') === ORIGINAL_APP);
  await waitFor('editor shows the restored text', async () => !(await editorText()).includes(TYPING) && !(await editorText()).includes(ANNOTATION));
  await shot(page, 'overwritten');
  await dismissToasts();

  // 5. Retrace: Undo Last Restore (command palette) brings back the file and the typing.
  await runCommand('Retrace: Undo Last Restore');
  await waitFor('the agent change is back on disk', () => read('src/app.py')?.includes(ANNOTATION), 30000);
  await waitFor('the unsaved typing is back in the editor', async () => (await editorText()).includes(TYPING), 30000);
  await shot(page, 'undo-last-restore');
  await dismissToasts();

  // 6. kill -9 of the server: it comes back by itself; status, timeline and chat follow.
  const [before] = serverPids(workspace);
  assert.ok(before, 'the server runs');
  process.kill(before, 'SIGKILL');
  await toast('restarting it automatically').waitFor({ timeout: 30000 }).catch(() => log('(note toast already gone)'));
  const after = await waitFor('a new server', () => { const p = serverPids(workspace); return p.length === 1 && p[0] !== before ? p[0] : false; }, 60000);
  log(`server ${before} killed; ${after} runs`);
  await waitFor('status bar says idle', async () => (await status().innerText()).includes('Retrace: idle'), 30000);
  await page.locator('.action-label[aria-label^="Refresh Timeline"]').first().click({ timeout: 5000 }).catch(() => {});
  await row('write_file').waitFor({ timeout: 30000 });
  await shot(page, 'restarted-after-kill');
  await sendPrompt('Update hello.txt');
  await waitFor('the chat ran a new turn', async () => (await chat().locator('#send:not([disabled])').count()) === 1
    && (await chat().locator('.assistant').count()) > 1, 60000);
  assert.deepEqual(serverPids(workspace), [after], 'exactly one server');
  await shot(page, 'chat-after-restart');
});
