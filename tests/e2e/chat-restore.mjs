// Real-browser E2E for restoring from the chat (issue 28, Deliver 1 and 2): the packaged .vsix in
// code-server, headless Chromium, the real Retrace server and a scripted fake model
// (tests/e2e/scenarios/chat-restore.json). Checks, each through the chat's own controls:
// 1. "Restore… → Code and conversation before this prompt" on a prompt: the files and the
//    conversation go back (the turn before it made no tool call: its answer is the chat's last),
//    and the restored-away prompt is back in the input box;
// 2. "Edit and resend" on an earlier prompt: the conversation forks from its parent, the edited
//    prompt gets the fake model's new answer, the old branch's messages leave the chat;
// 3. a tool call's "Restore…" beside its diff, conversation only (the timeline's command): the
//    files stay, the prompt it left out comes back in the input; 4. code only, from the prompt
//    and from the tool call;
// 5. a turn with no tool call restored exactly: after a code restore, a quiet turn, then a turn
//    that writes: "before the quiet prompt" is the restored state (not the older turn's files).
// Screenshots: .e2e/screenshots/chat-restore-*.png. Usage: node tests/e2e/chat-restore.mjs [vsix]
import assert from 'node:assert/strict';
import path from 'node:path';
import { root, log, scenario, runScenario, waitFor } from './harness.mjs';

const sc = scenario('chat-restore');
const { read, shot } = sc;

await runScenario(sc, {
  settings: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  env: { RETRACE_FAKE_MODEL: path.join(root, 'tests/e2e/scenarios/chat-restore.json') },
  page: { viewport: { width: 1400, height: 1000 } },
}, async ({ page, wb }) => {
  const { chat, row, dialogButton, sendPrompt } = wb;
  await wb.openRetrace();
  await row('Baseline').waitFor({ timeout: 60000 });
  const bar = await page.locator('.part.sidebar').first().boundingBox();
  if (bar !== null && bar.width < 500) {
    const y = bar.y + bar.height / 2;
    await page.mouse.move(bar.x + bar.width + 1, y);
    await page.mouse.down();
    await page.mouse.move(bar.x + 520, y, { steps: 8 });
    await page.mouse.up();
  }
  const input = chat().locator('#prompt');
  const lastAnswer = async () => (await chat().locator('.msg.assistant').last().innerText()).trim();
  const prompt = text => chat().locator('.msg.user', { hasText: text }).first();
  const answered = async text => {
    await chat().locator('.msg.assistant', { hasText: text }).first().waitFor({ timeout: 90000 });
    await chat().locator('#send:not([disabled])').waitFor({ timeout: 60000 });
  };
  /** Open a prompt's (or a tool call's) Restore… menu and take one choice. */
  const choose = async (scope, mode, point) => {
    await scope.locator('.restore-menu > summary').first().click();
    const choice = scope.locator(`.restore-choice[data-mode="${mode}"]${point ? `[data-point="${point}"]` : ''}`).first();
    await choice.waitFor({ timeout: 10000 });
    await choice.click();
  };
  const confirmRestore = async () => {
    await dialogButton('Restore').waitFor({ timeout: 30000 });
    await dialogButton('Restore').click();
  };

  // The session: a writing turn, a turn with no tool call, another writing turn.
  await sendPrompt('make one');
  await answered('Turn one done.');
  await sendPrompt('just answer');
  await answered('Turn two: just an answer.');
  await sendPrompt('make three');
  await answered('Turn three done.');
  assert.equal(read('three.txt'), 'three\n');
  // Every answered prompt offers its restore point and Edit and resend.
  assert.equal(await chat().locator('.msg.user .prompt-actions').count(), 3);
  await shot(page, 'three-turns');

  // 1. Code and conversation to before "make three" (after a turn with no tool call).
  await choose(prompt('make three'), 'both', 'before');
  await confirmRestore();
  await waitFor('three.txt gone', () => read('three.txt') === undefined, 30000);
  assert.equal(read('one.txt'), 'one\n');
  await waitFor('the chat ends with turn two', async () => (await lastAnswer()) === 'Turn two: just an answer.', 30000);
  assert.equal(await prompt('make three').count(), 0, 'the restored-away prompt left the chat');
  await waitFor('the prompt back in the input', async () => (await input.inputValue()) === 'make three', 20000);
  await shot(page, 'before-prompt-both');
  await input.fill('');
  await wb.dismissToasts();

  // 2. Edit and resend "just answer": a fork from its parent, a new answer from the fake model.
  await prompt('just answer').locator('button.edit-resend').click();
  const editor = chat().locator('textarea.edit-prompt');
  await editor.waitFor({ timeout: 10000 });
  assert.equal(await editor.inputValue(), 'just answer');
  await editor.fill('just answer, edited');
  await shot(page, 'editing');
  await chat().locator('button.edit-send').click();
  await answered('Answer to the edited prompt.');
  await waitFor('the fork shown', async () => (await chat().locator('.msg.assistant', { hasText: 'Turn two: just an answer.' }).count()) === 0, 30000);
  assert.equal(await chat().locator('.msg.user', { hasText: 'just answer, edited' }).count(), 1);
  assert.equal(await lastAnswer(), 'Answer to the edited prompt.');
  assert.equal(read('one.txt'), 'one\n', 'edit and resend leaves the files alone');
  await shot(page, 'edited-resent');

  // 3. A tool call's "Restore… → Conversation only" (the timeline's command): the conversation
  //    goes back to just after that call, the files stay, the prompt it left out comes back.
  const call = chat().locator('.tool-call', { hasText: 'write_file' }).first();
  assert.equal(await call.locator('.restore-menu > summary').count(), 1, 'the checkpoint link offers Restore');
  await choose(call, 'conversation');
  await waitFor('the chat ends in turn one', async () => (await lastAnswer()) === 'Writing one.', 30000);
  await waitFor('the edited prompt back in the input', async () => (await input.inputValue()) === 'just answer, edited', 20000);
  assert.equal(read('one.txt'), 'one\n');
  await shot(page, 'tool-call-conversation');
  await input.fill('');
  await wb.dismissToasts();

  // 4. Code only to before "make one" from the prompt, back from the tool call, and again.
  await choose(prompt('make one'), 'code', 'before');
  await confirmRestore();
  await waitFor('one.txt gone', () => read('one.txt') === undefined, 30000);
  assert.equal(await lastAnswer(), 'Writing one.', 'a code restore leaves the chat');
  await wb.dismissToasts();
  await choose(call, 'code'); // it only creates a file: no confirmation asked
  await waitFor('one.txt back from the tool call', () => read('one.txt') === 'one\n', 30000);
  await choose(prompt('make one'), 'code', 'before');
  await confirmRestore();
  await waitFor('one.txt gone again', () => read('one.txt') === undefined, 30000);
  await wb.dismissToasts();

  // 5. A turn with no tool call, then one that writes: "before the quiet prompt" is exactly the
  //    restored state (one.txt absent), not the files of the last turn that wrote.
  await sendPrompt('quiet please');
  await answered('A quiet answer.');
  await sendPrompt('make four');
  await answered('Turn four done.');
  assert.equal(read('four.txt'), 'four\n');
  await choose(prompt('quiet please'), 'both', 'before');
  await confirmRestore();
  await waitFor('four.txt gone', () => read('four.txt') === undefined, 30000);
  assert.equal(read('one.txt'), undefined, 'the code in force when the quiet prompt was sent');
  await waitFor('the quiet prompt back in the input', async () => (await input.inputValue()) === 'quiet please', 20000);
  log('last answer:', await lastAnswer());
  await shot(page, 'quiet-turn-exact');
});
