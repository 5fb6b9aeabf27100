// Real-browser E2E: keep or undo each hunk of the agent's change, and restore one file from an
// older checkpoint through its timeline row.
// The fake model (scenario `hunks`) edits src/util.py in two places. In the editor, Keep / Undo
// lenses sit above each hunk: Undo on the first puts exactly its lines back (the other edit
// stays), Keep on the second accepts it (its lens goes away, the file is untouched); "Retrace:
// Undo Last Restore" brings the undone hunk back; then the first edit's row's "Restore a File as
// It Was Here…" restores src/util.py alone as it was then (a README edit of the user's stays).
// Last, a checkpoint's diff view (its title bar's "Restore a Hunk…") restores one hunk from it.
// Screenshots: .e2e/screenshots/hunks-*.png.
// Usage: node tests/e2e/hunks.mjs [vsix]   (npm run --silent package first)
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { scenario, runScenario, waitFor } from './harness.mjs';

const sc = scenario('hunks');
const { read, ws, shot } = sc;
const ORIGINAL = read('src/util.py');
const EDIT1 = ['cleaned = name.strip() or "stranger"', 'cleaned = name.strip().title() or "stranger"'];
const EDIT2 = ['if ch in "aeiou")', 'if ch in "aeiouy")'];
assert.ok(ORIGINAL.includes(EDIT1[0]) && ORIGINAL.includes(EDIT2[0]), 'the sample util.py has both lines');
const BOTH = ORIGINAL.replace(EDIT1[0], EDIT1[1]).replace(EDIT2[0], EDIT2[1]);
const ONLY_SECOND = ORIGINAL.replace(EDIT2[0], EDIT2[1]);
const ONLY_FIRST = ORIGINAL.replace(EDIT1[0], EDIT1[1]);

await runScenario(sc, {
  settings: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  env: { RETRACE_FAKE_MODEL: 'hunks' },
}, async ({ page, wb }) => {
  const { row, chat, dialogButton, sendPrompt, openFile, dismissToasts, runCommand, contextMenu } = wb;
  const lens = text => page.locator('.editor-group-container.active .codelens-decoration a', { hasText: text });

  await wb.openRetrace();
  await sendPrompt('Edit util.py in two places');
  await chat().locator('.assistant', { hasText: 'Done: edited util.py in two places' }).waitFor({ timeout: 60000 });
  await waitFor('both edits on disk', () => read('src/util.py') === BOTH);

  // 1. Keep / Undo above each of the two hunks.
  await openFile('src/util.py');
  await waitFor('two Undo lenses', async () => (await lens('Undo').count()) === 2, 30000);
  assert.equal(await lens('Keep').count(), 2);
  await shot(page, 'lenses');

  // 2. Undo the first hunk: exactly its lines come back, the second edit stays.
  await lens('Undo').first().click();
  await waitFor('the first hunk undone on disk', () => read('src/util.py') === ONLY_SECOND, 30000);
  await waitFor('one hunk left under review', async () => (await lens('Undo').count()) === 1, 30000);
  await shot(page, 'first-hunk-undone');
  await dismissToasts();

  // 3. Keep the second: its lenses go, the file is untouched.
  await lens('Keep').first().click();
  await waitFor('no hunk left under review', async () => (await lens('Keep').count()) === 0 && (await lens('Undo').count()) === 0, 30000);
  assert.equal(read('src/util.py'), ONLY_SECOND, 'Keep changes nothing on disk');
  await row('Restored a hunk of src/util.py').waitFor({ timeout: 30000 });
  await shot(page, 'second-hunk-kept');

  // 4. Undo Last Restore brings the undone hunk back.
  await runCommand('Retrace: Undo Last Restore');
  await waitFor('the hunk is back', () => read('src/util.py') === BOTH, 30000);
  await row('Back to ‘').waitFor({ timeout: 30000 }); // the timeline settled on the undo
  await dismissToasts();

  // 5. Restore one file from an older checkpoint through its row; the user's README edit stays.
  const readme = `${read('README.md')}A line of the user's.\n`;
  fs.writeFileSync(ws('README.md'), readme);
  //    The row of the first edit (older than the head): util.py as it was then, edit 1 only.
  await contextMenu(row('‘cleaned'), 'Restore a File as It Was Here');
  // (That row changed one file: no file to pick.)
  await dialogButton('Restore').waitFor({ timeout: 20000 });
  await shot(page, 'restore-file-dialog');
  await dialogButton('Restore').click();
  await waitFor('util.py as after the first edit', () => read('src/util.py') === ONLY_FIRST, 30000);
  assert.equal(read('README.md'), readme, 'only the chosen file was restored');
  await shot(page, 'file-restored');

  // 6. From a checkpoint's diff view: the second edit's row opens its changes; the title bar's
  //    "Restore a Hunk…" lists the hunks against the file now (one: edit 2) and puts it back.
  const action = page.locator('.editor-actions .action-label[aria-label^="Restore a Hunk of This File"]').first();
  // A click that lands while the tree re-renders after the restore is lost: click until it opens.
  await waitFor('the checkpoint diff opens', async () => {
    if (await action.isVisible()) return true;
    await row('‘if ch').click({ timeout: 5000 }).catch(() => {});
    return action.waitFor({ timeout: 3000 }).then(() => true, () => false);
  }, 60000);
  await shot(page, 'diff-view-actions');
  await action.click();
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Line 12' }).first().waitFor({ timeout: 20000 });
  await page.keyboard.press('Enter');
  await waitFor('edit 2 restored from the diff view', () => read('src/util.py') === BOTH, 30000);
  await shot(page, 'hunk-restored-from-diff');
});
