// Real-browser E2E for another agent's session in the timeline: with the workbench open on the
// folder, the REAL hook command runs as Claude Code would run it (`<venv python> -m retrace hook
// claude-code`, the documented hook JSON on stdin, the folder as its working directory, the
// workbench's environment so it finds the same store): UserPromptSubmit, then PreToolUse /
// PostToolUse for a `Write` (the file written by this script between the two, as the tool would),
// then for a `Bash` that deletes a file (deleted between the two), then Stop. Checks: a "Claude
// Code" session appears live (no reload) with its turn titled by the prompt and its two rows named
// by tool and input summary; while the turn runs, Restore Code asks first (one modal naming Claude
// Code) and Cancel changes nothing; the row menu offers Restore Code but not Restore Conversation /
// Both; after Stop, Restore Code on the first row brings the deleted file back.
// Screenshots: .e2e/screenshots/agents-*.png. Usage: node tests/e2e/agents.mjs [vsix]
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { log, scenario, runScenario, testEnv, waitFor, PYTHON } from './harness.mjs';

const sc = scenario('agents');
const { userDataDir, workspace, ws, read, shot } = sc;
const SESSION = 'e2e-claude-5b0d2c';
const TRANSCRIPT = path.join(sc.work, 'claude-transcript.jsonl');
const PROMPT = 'Write a changelog and drop the old notes';
const WRITTEN = 'CHANGELOG.md';
const DELETED = 'notes.txt';

/** Run the real hook command once, as Claude Code would; it must exit 0 and print nothing. */
function hook(event) {
  const body = { session_id: SESSION, transcript_path: TRANSCRIPT, cwd: workspace, ...event };
  const run = spawnSync(PYTHON, ['-m', 'retrace', 'hook', 'claude-code'], {
    cwd: workspace,
    env: testEnv(userDataDir),
    input: JSON.stringify(body),
    encoding: 'utf8',
    timeout: 30000,
  });
  log(`hook ${event.hook_event_name}${event.tool_name ? ` ${event.tool_name}` : ''}: exit ${run.status}`);
  assert.equal(run.status, 0, `the hook exits 0 (stderr: ${run.stderr})`);
  assert.equal(run.stdout, '', 'a hook prints nothing on stdout (Claude Code reads it)');
}

function tool(name, input, id, response) {
  hook({ hook_event_name: 'PreToolUse', tool_name: name, tool_input: input, tool_use_id: id });
  return () => hook({ hook_event_name: 'PostToolUse', tool_name: name, tool_input: input, tool_response: response, tool_use_id: id });
}

await runScenario(sc, {
  page: { viewport: { width: 1500, height: 1000 } },
}, async ({ page, wb }) => {
  const { sidebar, row, dialogButton, contextMenu } = wb;
  const dialog = () => page.locator('.monaco-dialog-box').first();
  const rowTexts = async () => (await sidebar().locator('.monaco-list-row').allInnerTexts()).map(r => r.replace(/\s+/g, ' ').trim());

  await wb.openRetrace();
  await row('Baseline').waitFor({ timeout: 60000 });
  const original = read(DELETED);
  assert.ok(original !== undefined, `the sample workspace has ${DELETED}`);
  fs.writeFileSync(TRANSCRIPT, '');
  // Room for the timeline: collapse the chat view above it.
  const chatHeader = sidebar().locator('.pane-header', { hasText: 'Chat' }).first();
  if ((await chatHeader.getAttribute('aria-expanded')) === 'true') await chatHeader.click();

  // 1. Claude Code's turn, through its hooks: a prompt, a Write, a Bash deleting a file.
  hook({ hook_event_name: 'UserPromptSubmit', prompt: PROMPT });
  const content = '# Changelog\n\n- first entry\n';
  const afterWrite = tool('Write', { file_path: ws(WRITTEN), content }, 'toolu_01E2EWRITE', { type: 'create', filePath: ws(WRITTEN), content });
  fs.writeFileSync(ws(WRITTEN), content);
  afterWrite();
  const command = `rm ${DELETED}`;
  const afterBash = tool('Bash', { command, description: 'Remove the old notes' }, 'toolu_02E2EBASH', { stdout: '', stderr: '', interrupted: false, isImage: false });
  fs.rmSync(ws(DELETED));
  afterBash();

  // 2. The session appears live, labelled with its agent; its turn is titled by the prompt.
  const session = row('Claude Code');
  await session.waitFor({ timeout: 30000 });
  log('rows:', await rowTexts());
  if ((await session.getAttribute('aria-expanded')) === 'false') await session.click();
  const turn = row(`1. ${PROMPT}`);
  await turn.waitFor({ timeout: 30000 });
  if ((await turn.getAttribute('aria-expanded')) === 'false') await turn.click();
  const writeRow = row(`Write: ${WRITTEN}`);
  const bashRow = row(`Bash: ${command}`);
  await writeRow.waitFor({ timeout: 30000 });
  await bashRow.waitFor({ timeout: 30000 });
  assert.match((await turn.innerText()).replace(/\s+/g, ' '), /running/, 'the turn runs until Stop');
  await shot(page, 'live-session');

  // 3. While the turn runs, Restore Code asks first; Cancel changes nothing. The menu offers no
  // conversation restore for Claude Code's rows.
  await writeRow.click({ button: 'right' });
  const menu = page.locator('.monaco-menu').first();
  await menu.waitFor();
  const entries = (await menu.locator('.action-item').allInnerTexts()).map(t => t.trim());
  log('row menu:', entries);
  assert.ok(entries.some(t => t.startsWith('Restore Code')), 'Restore Code is offered');
  assert.ok(!entries.some(t => t.startsWith('Restore Conversation') || t.startsWith('Restore Both')), `no conversation restore: ${entries}`);
  await page.keyboard.press('Escape');
  await contextMenu(writeRow, 'Restore Code');
  await dialog().waitFor({ timeout: 30000 });
  const question = (await dialog().innerText()).replace(/\s+/g, ' ');
  assert.match(question, /Claude Code is running a turn/);
  assert.ok(question.includes(SESSION), question);
  await shot(page, 'agent-running-question');
  await page.keyboard.press('Escape');
  await dialog().waitFor({ state: 'hidden', timeout: 10000 });
  assert.equal(read(DELETED), undefined, 'a cancelled restore changes nothing');

  // 4. Stop ends the turn; Restore Code on the first row brings the deleted file back.
  hook({ hook_event_name: 'Stop', stop_hook_active: false });
  await contextMenu(writeRow, 'Restore Code');
  // A restore that only creates files asks nothing; a confirmation, if the plan holds more, is taken.
  await waitFor(`${DELETED} restored`, async () => {
    if (await dialogButton('Restore').isVisible()) await dialogButton('Restore').click();
    assert.ok(!(await dialog().isVisible()) || !/running a turn/.test(await dialog().innerText()), 'no agent question after Stop');
    return read(DELETED) === original;
  }, 30000);
  assert.equal(read(WRITTEN), content, 'the Write is kept (restored to just after it)');
  await row('Back to').waitFor({ timeout: 30000 });
  await shot(page, 'restored');
});
