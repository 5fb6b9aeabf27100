// Real-browser E2E: editor context and @file mentions. The packaged .vsix in code-server, driven
// by headless Chromium, against the real Retrace server and a scripted fake model
// (tests/e2e/scenarios/context.json) whose replies only come when the request carries what is
// asserted. Steps: select lines of src/app.py in a real editor → the chat input shows the
// "app.py:8-9 (selection)" chip → send: the model's reply proves it received the selected text,
// the sent prompt shows "attached: src/app.py:8-9 (selection)" → type "@uti", pick src/util.py
// from the completion list → its chip shows → send: the reply proves the model received the
// file, the prompt shows "@src/util.py" attached → the journal on disk holds the labelled block
// → after the chat reloads the conversation (new window), the attachments still show.
// Screenshots: .e2e/screenshots/context-*.png.
// Usage: node tests/e2e/context.mjs [vsix]   (npm run test:e2e packages first)
import assert from 'node:assert/strict';
import path from 'node:path';
import { log, root, runScenario, scenario, storeEvents, waitFor } from './harness.mjs';

const sc = scenario('context');

/** The journals' events, one JSON text a line (what the assertions below look for). */
function journalText(userDataDir) {
  return storeEvents(userDataDir).map(e => JSON.stringify(e)).join('\n');
}

await runScenario(sc, {
  settings: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  env: { RETRACE_FAKE_MODEL: path.join(root, 'tests/e2e/scenarios/context.json') },
}, async ({ page, wb, userDataDir, shot }) => {
  const { chat, openFile, sendPrompt } = wb;
  await wb.openRetrace();

  // 1. Select lines 8-9 of src/app.py (def main(): / names = ...) in a real editor.
  await openFile('src/app.py');
  await page.locator('.editor-group-container.active .view-line', { hasText: 'def main():' }).first().click();
  await page.keyboard.press('Home');
  await page.keyboard.press('Home'); // the first Home stops at the indentation; twice: column 1
  await page.keyboard.press('Shift+ArrowDown');
  await page.keyboard.press('Shift+ArrowDown');
  const chip = chat().locator('.chip[data-kind="editor"]');
  await waitFor('the editor chip names the selection', async () => (await chip.innerText()).includes('app.py:8-9 (selection)'), 30000);
  await shot(page, 'selection-chip');

  // 2. Send: the fake model answers only when the selected text reached it.
  await sendPrompt('Explain the selected lines');
  await chat().locator('.assistant', { hasText: 'CONTEXT RECEIVED' }).waitFor({ timeout: 60000 });
  const sent = chat().locator('.msg.user', { hasText: 'Explain the selected lines' }).first();
  assert.match(await sent.locator('.attached').innerText(), /attached: src\/app\.py:8-9 \(selection\)/);
  await shot(page, 'selection-attached');

  // 3. @ completion: type "@uti", choose src/util.py, the chip shows; send.
  const box = chat().locator('#prompt');
  await chat().locator('#send:not([disabled])').waitFor({ timeout: 60000 });
  await box.click();
  await box.pressSequentially('Compare with @uti');
  const option = chat().locator('.mention-option', { hasText: 'src/util.py' }).first();
  await option.waitFor({ timeout: 30000 });
  await shot(page, 'mention-completion');
  await box.press('Enter'); // takes the highlighted completion
  await waitFor('the prompt names the file', async () => (await box.inputValue()).includes('@src/util.py'));
  await chat().locator('.chip[data-kind="mention"]', { hasText: '@src/util.py' }).waitFor();
  await box.press('Enter'); // sends
  await chat().locator('.assistant', { hasText: 'MENTION RECEIVED' }).waitFor({ timeout: 60000 });
  const second = chat().locator('.msg.user', { hasText: 'Compare with' }).first();
  assert.match(await second.locator('.attached').innerText(), /@src\/util\.py/);
  await shot(page, 'mention-attached');

  // 4. The journal holds the labelled block with the prompt (what resume and retry send again).
  const journal = await waitFor('the journaled attachment', () => {
    const text = journalText(userDataDir);
    return text.includes('<editor-context>') && text.includes('<file path=\\"src/util.py\\">') ? text : false;
  });
  assert.match(journal, /"attachments":\["src\/app\.py:8-9 \(selection\)"/);

  // 5. A reloaded window shows the attachments from the conversation view.
  await page.reload();
  await wb.openRetrace();
  await chat().locator('.msg.user .attached', { hasText: 'src/app.py:8-9 (selection)' }).first().waitFor({ timeout: 60000 });
  await chat().locator('.msg.user .attached', { hasText: '@src/util.py' }).first().waitFor({ timeout: 60000 });
  assert.equal(await chat().locator('.msg.user', { hasText: '<editor-context>' }).count(), 0, 'the block is not shown as a message');
  await shot(page, 'after-reload');
  log('editor context: selection and mention attached, received, journaled and shown after a reload');
});
