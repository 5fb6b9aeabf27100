// Real-browser E2E (issue 28, Deliver 7 first half): named checkpoints. The timeline's title button
// "Bookmark the Current State…" records a named checkpoint of the state now; "Bookmark This
// Checkpoint…" on an older row names it; both rows show the bookmark icon and their names; the
// bookmarks filter keeps only them; "Restore to Checkpoint…" offers both first; restoring one works
// and is undoable. Screenshots: .e2e/screenshots/bookmarks-*.png.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { log, scenario, runScenario, storeEvents, waitFor } from './harness.mjs';

const sc = scenario('bookmarks');
const { read, ws, shot } = sc;
const HELLO = 'Hello from Retrace\n';

await runScenario(sc, {
  settings: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  env: { RETRACE_FAKE_MODEL: 'e2e' },
}, async ({ page, wb }) => {
  const { chat, sidebar, row, dialogButton, toast, contextMenu, sendPrompt, dismissToasts, runCommand } = wb;
  const input = page.locator('.quick-input-widget input');
  const answer = async text => {
    await input.waitFor({ timeout: 20000 });
    await input.fill(text);
    await input.press('Enter');
  };

  await wb.openRetrace();
  await sendPrompt('Create hello.txt, annotate src/app.py and generate a file');
  await chat().locator('.assistant', { hasText: 'Done: created hello.txt' }).waitFor({ timeout: 60000 });
  await waitFor('turn one wrote its files', () => read('hello.txt') === HELLO && read('generated/out.txt') !== undefined);
  const afterTurn = { app: read('src/app.py'), out: read('generated/out.txt') };

  // 1. My own change, then the title button: a named checkpoint of the state now.
  fs.writeFileSync(ws('mine.txt'), 'typed by me\n');
  const button = page.locator('.action-label[aria-label^="Bookmark the Current State"]').first();
  // A view's title buttons show while its header is hovered (or the view has the focus).
  await waitFor('the title button', async () => {
    await sidebar().locator('.pane-header', { hasText: 'Timeline' }).first().hover({ timeout: 2000 }).catch(() => {});
    return button.isVisible();
  }, 20000);
  await button.click();
  await answer('tests pass');
  const named = row('tests pass');
  await named.waitFor({ timeout: 30000 });
  assert.equal(await named.locator('.codicon-bookmark').count(), 1, 'the bookmark icon');
  const made = storeEvents(sc.userDataDir).find(e => e.type === 'checkpoint' && e.checkpoint.kind === 'manual');
  assert.deepEqual(made.checkpoint.files.map(f => f.path), ['mine.txt'], 'every change since the last checkpoint');

  // 2. An older row: the write of hello.txt, named from its context menu.
  await contextMenu(sidebar().locator('.monaco-list-row', { hasText: 'write_file' }).filter({ hasText: 'hello.txt' }).first(), 'Bookmark This Checkpoint');
  await answer('hello created');
  const older = row('hello created');
  await older.waitFor({ timeout: 30000 });
  assert.equal(await older.locator('.codicon-bookmark').count(), 1);
  assert.ok(storeEvents(sc.userDataDir).some(e => e.type === 'checkpointName' && e.name === 'hello created'), 'journaled');
  await shot(page, 'named-rows');

  // 3. The restore quick pick offers both bookmarks first.
  await runCommand('Retrace: Restore to Checkpoint');
  const picks = page.locator('.quick-input-list .monaco-list-row');
  await picks.first().waitFor({ timeout: 20000 });
  await waitFor('the bookmarks listed', async () => (await picks.count()) >= 3);
  const first = (await picks.nth(0).innerText()).replace(/\s+/g, ' ');
  const second = (await picks.nth(1).innerText()).replace(/\s+/g, ' ');
  log('restore pick:', first, '|', second);
  assert.match(first, /tests pass/);
  assert.match(second, /hello created/);
  await shot(page, 'restore-pick');

  // 4. Restoring one works: code back to the write of hello.txt…
  await input.fill('hello created');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'hello created' }).first().waitFor();
  await input.press('Enter');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Restore code' }).first().waitFor({ timeout: 20000 });
  await input.fill('Restore code');
  await input.press('Enter');
  await dialogButton('Restore').waitFor({ timeout: 20000 });
  await dialogButton('Restore').click();
  await waitFor('restored to the bookmark', () => read('hello.txt') === HELLO && read('mine.txt') === undefined && read('generated/out.txt') === undefined, 30000);
  await toast('Restored code').waitFor({ timeout: 20000 });
  await shot(page, 'restored');

  // 5. …and is undoable.
  await wb.notificationButton('Restored code', 'Undo restore');
  await waitFor('the undo put everything back', () => read('mine.txt') === 'typed by me\n' && read('generated/out.txt') === afterTurn.out && read('src/app.py') === afterTurn.app, 30000);
  await toast('Undid').waitFor({ timeout: 20000 });
  await dismissToasts();

  // 6. The bookmarks filter keeps only the named rows.
  await runCommand('Retrace: Filter Timeline');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Bookmarks' }).first().waitFor({ timeout: 20000 });
  await input.fill('Bookmarks');
  await input.press('Enter');
  await waitFor('only bookmarks shown', async () => (await sidebar().locator('.monaco-list-row', { hasText: 'edit_file' }).count()) === 0 && (await row('tests pass').isVisible()) && (await row('hello created').isVisible()), 30000);
  await shot(page, 'filtered');
});
