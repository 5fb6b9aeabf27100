// Real-browser E2E (issue 28, findings 1 and 2): "Undo restore" undoes exactly the last restore,
// whatever its mode, says what it undid, and is itself undoable (Redo); the reason question is
// one short "Why?" on a code restore's own toast (full labels at a normal window size), absent
// after a conversation-only restore and after an undo, and it never takes the focus: typing in
// the chat input right after a restore goes to the input.
// Steps: two turns of the fake model `e2e` → Restore Code to write_file (toast: "Undo restore",
// "Why?"; typing goes to the chat input; "Why?" → quick pick → reason journaled) → Restore
// Conversation to run_command (no "Why?") → Undo on its toast: the conversation comes back, the
// code stays restored → Redo → Undo Last Restore from the palette → Restore Both to the
// edit of src/app.py → Undo: code and conversation both back. Screenshots: .e2e/screenshots/undo-*.png.
import assert from 'node:assert/strict';
import { log, scenario, runScenario, storeEvents, waitFor } from './harness.mjs';

const sc = scenario('undo');
const { read, shot } = sc;
const ORIGINAL_APP = read('src/app.py');
const HELLO = 'Hello from Retrace\n';

await runScenario(sc, {
  settings: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  env: { RETRACE_FAKE_MODEL: 'e2e' },
}, async ({ page, wb }) => {
  const { chat, dialogButton, toast, contextMenu, sendPrompt, dismissToasts, runCommand } = wb;
  const labels = wb.notificationButtons;
  const click = wb.notificationButton;
  const turnTwo = () => chat().locator('.assistant', { hasText: 'Updated hello.txt.' }).count();
  const turnOne = () => chat().locator('.assistant', { hasText: 'Done: created hello.txt' }).count();
  const reasons = () => storeEvents(sc.userDataDir).filter(e => e.type === 'restoreReason');

  await wb.openRetrace();
  await sendPrompt('Create hello.txt, annotate src/app.py and generate a file');
  await chat().locator('.assistant', { hasText: 'Done: created hello.txt' }).waitFor({ timeout: 60000 });
  await sendPrompt('Update hello.txt');
  await chat().locator('.assistant', { hasText: 'Updated hello.txt.' }).waitFor({ timeout: 60000 });
  await waitFor('turn two edited hello.txt', () => read('hello.txt') === 'Hello again from Retrace\n');

  // 1. Restore Code: the toast offers "Undo restore" and "Why?", both shown whole.
  await contextMenu('write_file', 'Restore Code', dialogButton('Restore'));
  await dialogButton('Restore').waitFor({ timeout: 20000 });
  await dialogButton('Restore').click();
  await waitFor('code restored', () => read('generated/out.txt') === undefined && read('src/app.py') === ORIGINAL_APP && read('hello.txt') === HELLO);
  await toast('Restored code').waitFor({ timeout: 20000 });
  // The mouse over the toast keeps it up (an information toast hides itself after 15 s) while its
  // buttons are measured.
  await toast('Restored code').hover();
  assert.deepEqual(await labels('Restored code'), ['Undo restore', 'Why?']);
  for (const button of await toast('Restored code').locator('.monaco-button').all()) {
    const cut = await button.evaluate(el => el.scrollWidth > el.clientWidth + 1 || getComputedStyle(el).textOverflow === 'ellipsis' && el.scrollWidth > el.clientWidth);
    assert.equal(cut, false, `button "${await button.innerText()}" is cut`);
  }
  // Nothing took the focus: typing in the chat input goes to the input, and no question is open.
  const box = chat().locator('#prompt');
  await box.click();
  await page.keyboard.type('still my words');
  assert.equal(await box.inputValue(), 'still my words');
  assert.equal(await page.locator('.quick-input-widget').isVisible(), false, 'no quick pick opened by itself');
  await shot(page, 'code-restore-toast');
  await box.fill('');
  assert.equal(reasons().length, 0, 'no reason recorded that nobody chose');
  // "Why?" opens the reasons; the one chosen is journaled with the restore.
  await click('Restored code', 'Why?');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Wrong approach' }).first().click();
  const reason = await waitFor('the reason in the journal', () => reasons()[0], 20000);
  assert.equal(reason.reason, 'wrongApproach');
  assert.equal(reason.mode, 'code');
  await dismissToasts();

  // 2. Restore Conversation: no "Why?".
  await contextMenu('run_command', 'Restore Conversation');
  await waitFor('chat shortened', async () => (await turnTwo()) === 0, 30000);
  await toast('Restored conversation').waitFor({ timeout: 20000 });
  assert.deepEqual(await labels('Restored conversation'), ['Undo restore']);
  await shot(page, 'conversation-restore-toast');

  // 3. Undo: exactly the conversation restore. The code restore of step 1 stays.
  await click('Restored conversation', 'Undo restore');
  await waitFor('the conversation is back', async () => (await turnTwo()) === 1, 30000);
  await toast('Undid: Restore conversation to').waitFor({ timeout: 20000 });
  assert.equal(read('generated/out.txt'), undefined, 'the earlier code restore was not undone');
  assert.equal(read('src/app.py'), ORIGINAL_APP);
  assert.equal(read('hello.txt'), HELLO);
  assert.deepEqual(await labels('Undid: Restore conversation to'), ['Redo'], 'no reason question after an undo');
  await shot(page, 'undo-conversation');

  // 4. An undo is a restore too: Redo cuts the conversation again; the palette's Undo undoes that.
  await click('Undid: Restore conversation to', 'Redo');
  await waitFor('cut again', async () => (await turnTwo()) === 0, 30000);
  await toast('Redid: Restore conversation to').waitFor({ timeout: 20000 });
  await dismissToasts();
  await runCommand('Retrace: Undo Last Restore');
  await waitFor('back again', async () => (await turnTwo()) === 1, 30000);
  await toast('Undid: Restore conversation to').waitFor({ timeout: 20000 });
  assert.equal(read('hello.txt'), HELLO);
  await dismissToasts();

  // 5. Restore Both to the edit of src/app.py (turn one, mid-batch), then Undo: code and
  // conversation both come back.
  const appEdit = wb.sidebar().locator('.monaco-list-row', { hasText: 'edit_file' }).filter({ hasText: 'app.py' }).first();
  await contextMenu(appEdit, 'Restore Both', dialogButton('Restore'));
  await dialogButton('Restore').waitFor({ timeout: 20000 });
  await dialogButton('Restore').click();
  await waitFor('both restored', async () => read('src/app.py') !== ORIGINAL_APP && (await turnOne()) === 0 && (await turnTwo()) === 0, 30000);
  await toast('Restored code and conversation').waitFor({ timeout: 20000 });
  log('toast after both:', await labels('Restored code and conversation'));
  await click('Restored code and conversation', 'Undo restore');
  await waitFor('code and conversation back', async () => read('src/app.py') === ORIGINAL_APP && (await turnTwo()) === 1, 30000);
  await toast('Undid: Restore code and conversation to').waitFor({ timeout: 20000 });
  assert.equal(read('hello.txt'), HELLO);
  assert.equal(read('generated/out.txt'), undefined);
  await shot(page, 'undo-both');
  assert.equal(reasons().length, 1, 'one reason, the one chosen');
});
