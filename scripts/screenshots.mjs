// Screenshots for the Marketplace page (extension/marketplace/images/), taken in the real
// workbench: the packaged .vsix in code-server, headless Chromium, the real Retrace server and the
// deterministic fake model scenario `e2e` (the same harness as tests/e2e/). Not part of CI: run it
// by hand after a visible UI change and commit the pictures.
//   node scripts/screenshots.mjs [path/to/retrace.vsix]   (default: dist/retrace.vsix; `npm run package` first)
// Pictures: timeline.png (one checkpoint per tool call), hover-diff.png (the diff preview on
// hover), restore-dialog.png (the confirmation before Restore Code), diff-editor.png.
import fs from 'node:fs';
import path from 'node:path';
import {
  root, log, freshDir, copyWorkspace, writeUserSettings, installVsix, startCodeServer, launchBrowser, waitFor, workbench,
} from '../tests/e2e/harness.mjs';

const vsix = path.resolve(process.argv[2] || path.join(root, 'dist', 'retrace.vsix'));
if (!fs.existsSync(vsix)) {
  console.error(`no ${path.relative(root, vsix)}: run 'npm run package' first`);
  process.exit(2);
}
const work = freshDir(path.join(root, '.e2e', 'screenshots-marketplace'));
const userDataDir = freshDir(path.join(work, 'user-data'));
const extensionsDir = freshDir(path.join(work, 'extensions'));
const workspace = copyWorkspace(path.join(work, 'workspace'));
const images = path.join(root, 'extension', 'marketplace', 'images');
fs.mkdirSync(images, { recursive: true });
const ws = rel => path.join(workspace, rel);

const shot = async (page, name, clip) => {
  await page.waitForTimeout(400); // animations settle; for the picture only
  const file = path.join(images, `${name}.png`);
  await page.screenshot({ path: file, clip });
  log('screenshot', path.relative(root, file));
};

installVsix(vsix, { userDataDir, extensionsDir });
writeUserSettings(userDataDir, {
  'retrace.permissions.write': 'auto',
  'retrace.permissions.command': 'auto',
  'workbench.colorTheme': 'Default Dark Modern',
});
const server = await startCodeServer({
  userDataDir, extensionsDir, workspace, logFile: path.join(work, 'code-server.log'), env: { RETRACE_FAKE_MODEL: 'e2e' },
});
const browser = await launchBrowser();
const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
page.on('pageerror', e => log('pageerror', e.message));
const { sidebar, row, chat, dialogButton, contextMenu, sendPrompt, openFile } = workbench(page, ws);
let failed = false;

try {
  await page.goto(`${server.url}/?folder=${encodeURIComponent(workspace)}`);
  await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
  const icon = page.locator('.activitybar [aria-label^="Retrace"]').first();
  await icon.waitFor({ timeout: 60000 });
  await openFile('src/app.py');
  await icon.click();
  await sidebar().waitFor();

  await sendPrompt('Create hello.txt, annotate src/app.py and generate a file');
  await chat().locator('.assistant', { hasText: 'Done: created hello.txt' }).waitFor({ timeout: 90000 });
  for (const label of ['write_file', 'edit_file', 'run_command', 'baseline']) await row(label).waitFor({ timeout: 30000 });
  await waitFor('no step still running', async () =>
    !(await sidebar().locator('.monaco-list-row').allInnerTexts()).some(r => r.includes('running…')), 15000);
  await page.mouse.move(900, 500);
  await shot(page, 'timeline');

  await row('edit_file').hover();
  await page.locator('.monaco-hover, .workbench-hover').filter({ hasText: 'Touched by the Retrace' }).first()
    .waitFor({ timeout: 20000 });
  await shot(page, 'hover-diff');
  await page.mouse.move(900, 500);

  await row('edit_file').click();
  await page.locator('.monaco-diff-editor').first().waitFor({ timeout: 20000 });
  await shot(page, 'diff-editor');

  await contextMenu('write_file', 'Restore Code');
  await dialogButton('Restore').waitFor({ timeout: 20000 });
  await shot(page, 'restore-dialog');
  log('done');
} catch (e) {
  failed = true;
  log('FAIL:', e);
  await page.screenshot({ path: path.join(work, 'failure.png') }).catch(() => {});
} finally {
  await browser.close();
  server.stop();
}
process.exit(failed ? 1 : 0);
