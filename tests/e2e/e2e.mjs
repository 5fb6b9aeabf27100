// Real-browser E2E: the packaged .vsix in code-server, driven by headless Chromium, against the
// real Retrace server (repo .venv) and the deterministic fake model scenario `e2e`.
// Steps: prompt in the Chat view (answering the permission prompt) → one timeline entry per
// tool call → hover preview → click opens the diff → Restore Code (confirm) → disk, editor text
// and cursor match → Undo restore → second prompt → Restore Conversation shortens the chat →
// Restore Both → a user edit makes Restore Code conflict: Skip keeps it, Overwrite replaces it.
// Screenshots per step in .e2e/screenshots/. Usage: npm run test:e2e (packages first).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  root, log, freshDir, copyWorkspace, writeUserSettings, installVsix, startCodeServer, launchBrowser, waitFor,
} from './harness.mjs';

const vsix = path.resolve(process.argv[2] || path.join(root, 'dist', 'retrace.vsix'));
const work = freshDir(path.join(root, '.e2e', 'ui'));
const userDataDir = freshDir(path.join(work, 'user-data'));
const extensionsDir = freshDir(path.join(work, 'extensions'));
const workspace = copyWorkspace(path.join(work, 'workspace'));
const shots = freshDir(path.join(root, '.e2e', 'screenshots'));
const ws = rel => path.join(workspace, rel);
const read = rel => (fs.existsSync(ws(rel)) ? fs.readFileSync(ws(rel), 'utf8') : undefined);
const ORIGINAL_APP = fs.readFileSync(ws('src/app.py'), 'utf8');
const ANNOTATION = '# Touched by the Retrace e2e scenario.';

let step = 0;
const shot = async (page, name) => {
  await page.waitForTimeout(300); // animations settle; for the picture only
  const file = path.join(shots, `${String(++step).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: file });
  log('screenshot', path.relative(root, file));
};

installVsix(vsix, { userDataDir, extensionsDir });
writeUserSettings(userDataDir, { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'ask' });
const server = await startCodeServer({
  userDataDir, extensionsDir, workspace, logFile: path.join(work, 'code-server.log'), env: { RETRACE_FAKE_MODEL: 'e2e' },
});
log(`code-server up at ${server.url}`);
const browser = await launchBrowser();
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
page.on('pageerror', e => log('pageerror', e.message));
let failed = false;

const sidebar = () => page.locator('[id="workbench.view.extension.retrace"]');
const row = text => sidebar().locator('.monaco-list-row', { hasText: text }).first();
const chat = () => page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
const dialogButton = text => page.locator('.monaco-dialog-box .monaco-button', { hasText: text }).first();
const toast = text => page.locator('.notification-toast', { hasText: text }).first();

async function contextMenu(rowText, item) {
  await row(rowText).click({ button: 'right' });
  const entry = page.locator('.monaco-menu .action-item', { hasText: item }).first();
  await entry.waitFor();
  // The workbench ignores a click that lands while the menu is still opening: click until it closes.
  await waitFor(`menu entry "${item}" taken`, async () => {
    if (!(await entry.isVisible())) return true;
    await entry.click({ timeout: 2000 }).catch(() => {});
    return page.locator('.monaco-menu').first().waitFor({ state: 'hidden', timeout: 1000 }).then(() => true, () => false);
  }, 10000);
}

async function sendPrompt(text) {
  const box = chat().locator('#prompt');
  await box.waitFor();
  await chat().locator('#send:not([disabled])').waitFor({ timeout: 60000 });
  await box.fill(text);
  await box.press('Enter');
}

async function openFile(rel) {
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor();
  // An absolute path resolves directly (the workbench's file-search cache may not know new files yet).
  await input.fill(ws(rel));
  await page.locator('.quick-input-list .monaco-list-row', { hasText: path.basename(rel) }).first().waitFor();
  await input.press('Enter');
  await page.locator('.tab.active', { hasText: path.basename(rel) }).waitFor();
}

// Monaco renders spaces as no-break spaces.
const activeEditorText = async () => (await page.locator('.editor-group-container.active .monaco-editor:visible .view-lines').first().innerText()).replace(/\u00a0/g, ' ');
const cursorStatus = () => page.locator('[id="status.editor.selection"]').innerText();

async function dismissToasts() {
  await page.keyboard.press('Escape');
  for (const close of await page.locator('.notification-toast .codicon-notifications-clear').all()) {
    await close.click().catch(() => {});
  }
}

try {
  await page.goto(`${server.url}/?folder=${encodeURIComponent(workspace)}`);
  await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
  const icon = page.locator('.activitybar [aria-label^="Retrace"]').first();
  await icon.waitFor({ timeout: 60000 });

  // The editor state pushed before the prompt carries src/app.py with the cursor on `def main():`.
  await openFile('src/app.py');
  await page.locator('.editor-group-container.active .view-line', { hasText: 'def main():' }).first().click();
  const cursorAtPrompt = await waitFor('cursor position', async () => ((await cursorStatus()).includes('Ln 8') ? cursorStatus() : false));
  log('cursor before the prompt:', cursorAtPrompt);
  await icon.click();
  await sidebar().waitFor();
  await shot(page, 'workbench');

  // 1. Prompt → permission prompt for run_command → one timeline entry per tool call.
  await sendPrompt('Create hello.txt, annotate src/app.py and generate a file');
  const allow = chat().locator('.permission button', { hasText: /^Allow$/ });
  await allow.waitFor({ timeout: 60000 });
  await shot(page, 'permission-prompt');
  await allow.click();
  await chat().locator('.assistant', { hasText: 'Done: created hello.txt' }).waitFor({ timeout: 60000 });
  for (const label of ['write_file', 'edit_file', 'run_command', 'baseline']) await row(label).waitFor({ timeout: 30000 });
  const toolRows = async () => (await sidebar().locator('.monaco-list-row').allInnerTexts()).filter(r => /write_file|edit_file|run_command/.test(r) && !r.includes('running…'));
  await waitFor('one timeline entry per tool call', async () => (await toolRows()).length === 3, 15000);
  log('timeline rows:', (await sidebar().locator('.monaco-list-row').allInnerTexts()).map(r => r.replace(/\s+/g, ' ')));
  assert.equal(read('hello.txt'), 'Hello from Retrace\n');
  assert.equal(read('generated/out.txt'), 'generated by run_command\n');
  assert.ok(read('src/app.py').includes(ANNOTATION));
  await shot(page, 'timeline');

  // 2. Hover → the diff preview in the tooltip.
  await row('edit_file').hover();
  const tip = page.locator('.monaco-hover, .workbench-hover').filter({ hasText: 'Touched by the Retrace' }).first();
  await tip.waitFor({ timeout: 20000 });
  log('tooltip:', (await tip.innerText()).replace(/\s+/g, ' ').slice(0, 200));
  await shot(page, 'hover-diff-preview');
  await page.mouse.move(900, 500);

  // 3. Click → diff editor.
  await row('edit_file').click();
  await page.locator('.monaco-diff-editor').first().waitFor({ timeout: 20000 });
  await page.locator('.tab.active', { hasText: 'app.py' }).waitFor();
  await shot(page, 'diff-editor');

  // 4. Restore Code to the write_file checkpoint → confirm → disk, editor text and cursor.
  await contextMenu('write_file', 'Restore Code');
  await dialogButton('Restore').waitFor({ timeout: 20000 });
  await shot(page, 'restore-confirm');
  await dialogButton('Restore').click();
  await waitFor('files restored on disk', () => read('generated/out.txt') === undefined && read('src/app.py') === ORIGINAL_APP);
  assert.equal(read('hello.txt'), 'Hello from Retrace\n');
  await toast('Restored code').waitFor({ timeout: 20000 });
  await page.locator('.tab.active', { hasText: 'app.py' }).waitFor();
  await waitFor('editor shows restored text', async () => !(await activeEditorText()).includes('Touched by the Retrace') && (await activeEditorText()).includes('def main'));
  const cursorAfter = await waitFor('cursor restored', async () => ((await cursorStatus()).includes('Ln 8') ? cursorStatus() : false));
  log('cursor after restore:', cursorAfter);
  await shot(page, 'restored-code');

  // 5. Undo restore (the toast's button).
  await toast('Restored code').locator('.monaco-button', { hasText: 'Undo restore' }).click();
  await waitFor('undo re-applied the turn', () => read('generated/out.txt') === 'generated by run_command\n' && read('src/app.py').includes(ANNOTATION));
  await toast('Undid the last restore').waitFor({ timeout: 20000 });
  await shot(page, 'undo-restore');
  await dismissToasts();

  // 6. Second prompt, then Restore Conversation to the end of turn one: the chat loses turn two.
  await sendPrompt('Update hello.txt');
  await chat().locator('.assistant', { hasText: 'Updated hello.txt.' }).waitFor({ timeout: 60000 });
  await waitFor('turn two edited hello.txt', () => read('hello.txt') === 'Hello again from Retrace\n');
  await shot(page, 'second-turn');
  await contextMenu('run_command', 'Restore Conversation');
  await waitFor('chat shortened', async () => (await chat().locator('.assistant', { hasText: 'Updated hello.txt.' }).count()) === 0, 30000);
  // The checkpoint is right after the run_command result: turn one's tool calls stay, the
  // second prompt is gone.
  await chat().locator('.tool', { hasText: 'run_command' }).waitFor();
  assert.equal(await chat().locator('.user', { hasText: 'Update hello.txt' }).count(), 0);
  assert.equal(read('hello.txt'), 'Hello again from Retrace\n', 'a conversation restore leaves files alone');
  await shot(page, 'restored-conversation');

  // 7. Restore Both to the write_file checkpoint.
  await contextMenu('write_file', 'Restore Both');
  await dialogButton('Restore').waitFor({ timeout: 20000 });
  await dialogButton('Restore').click();
  await waitFor('code restored by Restore Both', () => read('hello.txt') === 'Hello from Retrace\n' && read('generated/out.txt') === undefined);
  await waitFor('chat cut back', async () => (await chat().locator('.tool', { hasText: 'run_command' }).count()) === 0, 30000);
  await chat().locator('.assistant', { hasText: "I'll create hello.txt first." }).waitFor();
  await shot(page, 'restored-both');
  await dismissToasts();

  // 8. The user edits hello.txt; Restore Code to the baseline conflicts on it.
  await openFile('hello.txt');
  await page.locator('.editor-group-container.active .view-line').first().click();
  await page.keyboard.press('Control+End');
  await page.keyboard.type('my own line\n');
  await page.keyboard.press('Control+S');
  await waitFor('user edit saved', () => read('hello.txt')?.includes('my own line'));
  await contextMenu('baseline', 'Restore Code');
  await dialogButton('Skip conflicting files').waitFor({ timeout: 20000 });
  const dialogText = await page.locator('.monaco-dialog-box').first().innerText();
  assert.match(dialogText, /changed outside the agent/);
  await shot(page, 'conflict-dialog');
  await dialogButton('Skip conflicting files').click();
  // The result names exactly what was skipped (here: everything else already matched).
  await toast('Skipped, left as they are: hello.txt').waitFor({ timeout: 20000 });
  await waitFor('other files restored', () => read('src/app.py') === ORIGINAL_APP);
  assert.ok(read('hello.txt')?.includes('my own line'), "the user's text survives Skip");
  await shot(page, 'conflict-skipped');
  await dismissToasts();

  await contextMenu('baseline', 'Restore Code');
  await dialogButton('Overwrite').waitFor({ timeout: 20000 });
  await dialogButton('Overwrite').click();
  await waitFor('hello.txt restored to the baseline (absent)', () => read('hello.txt') === undefined);
  await toast('Restored code').waitFor({ timeout: 20000 });
  await shot(page, 'conflict-overwritten');
  log('PASS');
} catch (e) {
  failed = true;
  log('FAIL:', e);
  await shot(page, 'failure').catch(() => {});
} finally {
  await browser.close();
  server.stop();
}
process.exit(failed ? 1 : 0);
