// Real-browser E2E for subagents in the timeline: the packaged .vsix in code-server, headless
// Chromium, the real Retrace server and a scripted fake model (tests/e2e/scenarios/subagents.json:
// the parent starts one subagent that writes notes/one.txt twice in its own workspace copy).
// Steps: a prompt runs the turn → the `task` row says the child merged → expanding it shows the
// child's own timeline (its baseline and its two writes) → hovering a child row previews its diff
// (asked of the child's timeline) → a click opens the diff of the child's change → Restore Code on
// the child's first write goes through the dry-run/confirm flow and changes the child's copy on
// disk, not the user's file → "Apply Subagent Result Again" now clashes with the workspace: a modal
// names the conflict and nothing is written → "Discard Subagent Timeline" (confirmed) deletes the
// child's copy and the row says so → a second subagent is running (its row says how far it is)
// when the server is killed (kill -9): after the automatic restart the child, cut off with no
// checkpoint in the parent's timeline, is listed under its turn as interrupted; its own timeline
// opens, and "Resume Subagent" runs it again until it ends and its work is merged into the
// workspace. Screenshots: .e2e/screenshots/subagents-*.png.
// Usage: node tests/e2e/subagents.mjs [vsix]   (npm run test:e2e packages first)
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { root, log, findStore, scenario, runScenario, serverPids, waitFor } from './harness.mjs';

const sc = scenario('subagents');
const { userDataDir, workspace, read, shot } = sc;
const gate = path.join(sc.work, 'resume-gate');
const NOTE = 'notes/one.txt';
// A row's label is the verb and the file's name; its folder is in the description.
const WRITE = `write_file: ${path.basename(NOTE)}`;

await runScenario(sc, {
  settings: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  // The slow child's command waits for this file (see the scenario's lane-T): created once the
  // first run is cut off, so the resumed run does not wait again.
  env: { RETRACE_FAKE_MODEL: path.join(root, 'tests/e2e/scenarios/subagents.json'), RETRACE_E2E_GATE: gate },
  page: { viewport: { width: 1500, height: 1000 } },
}, async ({ page, wb }) => {
  const { sidebar, row, chat, dialogButton, toast, contextMenu, sendPrompt } = wb;
  const childRows = () => sidebar().locator('.monaco-list-row', { hasText: WRITE });
  const taskRow = () => sidebar().locator('.monaco-list-row', { has: page.locator('.codicon-type-hierarchy-sub') }).first();
  const dialog = () => page.locator('.monaco-dialog-box').first();

  await wb.openRetrace();
  await row('Baseline').waitFor({ timeout: 60000 });

  // 1. The parent delegates; the child's work is merged into the workspace as one checkpoint.
  await sendPrompt('Delegate two notes to a subagent');
  await chat().locator('.assistant', { hasText: 'The subagent came back' }).waitFor({ timeout: 90000 });
  await waitFor('the merged note on disk', () => read(NOTE) === 'one, then two\n', 30000);
  // Room for the timeline: collapse the chat view above it.
  const chatHeader = sidebar().locator('.pane-header', { hasText: 'Chat' }).first();
  if ((await chatHeader.getAttribute('aria-expanded')) === 'true') await chatHeader.click();
  // Widen the side bar so that row descriptions (the child's state) are readable.
  const bar = await page.locator('.part.sidebar').first().boundingBox();
  if (bar !== null && bar.width < 700) {
    const y = bar.y + bar.height / 2;
    await page.mouse.move(bar.x + bar.width + 1, y);
    await page.mouse.down();
    await page.mouse.move(bar.x + 760, y, { steps: 8 });
    await page.mouse.up();
  }
  await waitFor('the task row says the child merged', async () => /subagent merged/.test(await taskRow().innerText()), 30000);
  assert.equal(await childRows().count(), 0, 'the child\'s rows are not in the parent\'s story');
  await shot(page, 'task-row');

  // 2. Expand the task row: the child's own timeline is nested under it.
  await taskRow().locator('.monaco-tl-twistie').click();
  await waitFor('the child\'s two writes', async () => (await childRows().count()) === 2, 30000);
  const texts = (await sidebar().locator('.monaco-list-row').allInnerTexts()).map(t => t.replace(/\s+/g, ' ').trim());
  log('rows:', texts);
  const taskAt = texts.findIndex(t => t.includes('subagent merged'));
  const writes = texts.map((t, i) => (t.includes(WRITE) ? i : -1)).filter(i => i >= 0);
  assert.ok(writes.every(i => i > taskAt), 'the child rows come after (under) the task row');
  assert.match(texts[writes[1]], /you are here/, 'the child\'s own head is its second write');
  await shot(page, 'child-timeline');

  // 3. Hover the child's second write: the preview is the child's own diff.
  await childRows().nth(1).hover();
  const hover = page.locator('.monaco-hover', { hasText: 'subagent\'s own copy' }).first();
  await hover.waitFor({ timeout: 20000 });
  await waitFor('the diff preview', async () => (await hover.innerText()).includes('+one, then two'), 20000);
  const hoverText = await hover.innerText();
  log('hover:', hoverText.replace(/\s+/g, ' '));
  assert.match(hoverText, /-one/);
  await shot(page, 'child-hover');
  await page.keyboard.press('Escape');

  // 4. A click opens the diff of the child's change (its checkpoints, not the user's file).
  await childRows().nth(1).click();
  await page.locator('.tab.active', { hasText: 'one.txt' }).waitFor({ timeout: 20000 });
  await waitFor('the diff shows the child\'s change', async () => {
    const text = (await page.locator('.editor-group-container.active .monaco-diff-editor').first().innerText()).replace(/\u00a0/g, ' ');
    return text.includes('one, then two');
  }, 20000);
  await shot(page, 'child-diff');

  // 5. Restore Code inside the child to its first write: dry run, then the confirmation.
  await contextMenu(childRows().nth(0), 'Restore Code', dialogButton('Restore'));
  await dialogButton('Restore').waitFor({ timeout: 20000 });
  const confirm = await dialog().innerText();
  log('dialog:', confirm.replace(/\s+/g, ' '));
  assert.match(confirm, /subagent's copy/);
  assert.match(confirm, /notes\/one\.txt/);
  await shot(page, 'child-restore-confirm');
  await dialogButton('Restore').click();
  await toast('subagent\'s copy').waitFor({ timeout: 30000 });
  const store = await waitFor('the extension\'s store', () => findStore(userDataDir));
  const [taskId] = fs.readdirSync(path.join(store, 'tasks'));
  const childNote = path.join(store, 'tasks', taskId, 'work', NOTE);
  await waitFor('the child\'s copy restored', () => fs.readFileSync(childNote, 'utf8') === 'one\n', 20000);
  assert.equal(read(NOTE), 'one, then two\n', 'the user\'s file did not move');
  await row('Back to').waitFor({ timeout: 20000 });
  await shot(page, 'child-restored');

  // 6. Apply the child's result again: its note now clashes with the workspace's; a modal says so.
  await contextMenu(taskRow(), 'Apply Subagent Result Again');
  await page.locator('.monaco-dialog-box', { hasText: 'not applied' }).waitFor({ timeout: 30000 });
  assert.match(await dialog().innerText(), /notes\/one\.txt/);
  await shot(page, 'apply-again-conflict');
  await page.keyboard.press('Escape');
  assert.equal(read(NOTE), 'one, then two\n', 'a conflict is never written over');

  // 7. Discard the child's timeline (confirmed): its copy is gone, the row says so.
  await contextMenu(taskRow(), 'Discard Subagent Timeline', dialogButton('Discard'));
  await dialogButton('Discard').waitFor({ timeout: 20000 });
  await dialogButton('Discard').click();
  await waitFor('the task row says discarded', async () => /subagent discarded/.test(await taskRow().innerText()), 30000);
  await waitFor('the child rows gone', async () => (await childRows().count()) === 0, 20000);
  assert.ok(!fs.existsSync(path.join(store, 'tasks', taskId)), 'the child\'s folder is deleted');
  assert.equal(read(NOTE), 'one, then two\n');
  await shot(page, 'discarded');

  // 8. A second subagent runs: its running row says how far it is. The server dies meanwhile.
  await chatHeader.click(); // the chat again, for the prompt
  await sendPrompt('Delegate a slow job');
  await chatHeader.click();
  const running = sidebar().locator('.monaco-list-row', { hasText: /running… · slow job · \d+ tool call/ }).first();
  await running.waitFor({ timeout: 90000 });
  log('running row:', (await running.innerText()).replace(/\s+/g, ' '));
  await shot(page, 'running-subagent');
  const [before] = serverPids(workspace);
  assert.ok(before, 'the server runs');
  await waitFor('the child\'s write in its own timeline', () => {
    const tasks = fs.readdirSync(path.join(store, 'tasks'));
    return tasks.some(t => fs.existsSync(path.join(store, 'tasks', t, 'work', 'made/by-child.txt')));
  }, 30000);
  process.kill(before, 'SIGKILL');
  await waitFor('a new server', () => { const p = serverPids(workspace); return p.length === 1 && p[0] !== before; }, 60000);
  assert.equal(read('made/by-child.txt'), undefined, 'nothing of the cut-off child reached the workspace');
  fs.writeFileSync(gate, '');

  // 9. The cut-off child is listed under its turn, interrupted; its timeline opens.
  const orphan = row('subagent: slow job');
  await orphan.waitFor({ timeout: 60000 });
  await waitFor('it says interrupted', async () => /interrupted/.test(await orphan.innerText()), 30000);
  log('cut-off child:', (await orphan.innerText()).replace(/\s+/g, ' '));
  await orphan.locator('.monaco-tl-twistie').click();
  await row('write_file: by-child.txt').waitFor({ timeout: 30000 });
  await shot(page, 'interrupted-subagent');

  // 10. Resume it from the UI: it runs again in its own copy and, when it ends, is merged.
  await contextMenu(orphan, 'Resume Subagent');
  await toast('runs again').waitFor({ timeout: 30000 });
  await waitFor('the resumed child merged', async () => /subagent merged/.test(await orphan.innerText()), 120000, 500);
  log('resumed child:', (await orphan.innerText()).replace(/\s+/g, ' '));
  await waitFor('the child\'s work in the workspace', () => read('made/by-child.txt') === 'from the child\n', 20000);
  await shot(page, 'resumed-merged');
});
