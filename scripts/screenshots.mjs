// Screenshots for the Marketplace page (extension/marketplace/images/), taken in the real
// workbench: the packaged .vsix in code-server, headless Chromium, the real Retrace server and the
// deterministic fake model scenario `e2e` (the same harness as tests/e2e/). Not part of CI: run it
// by hand after a visible UI change and commit the pictures.
//   node scripts/screenshots.mjs [path/to/retrace.vsix]   (default: dist/retrace.vsix; `npm run package` first)
// Pictures: timeline.png (one checkpoint per tool call), hover-diff.png (the diff preview on
// hover), restore-dialog.png (the confirmation before Restore Code), diff-editor.png.
import fs from 'node:fs';
import path from 'node:path';
import { root, scenario, runScenario, waitFor, VSIX } from '../tests/e2e/harness.mjs';

if (!fs.existsSync(VSIX)) {
  console.error(`no ${path.relative(root, VSIX)}: run 'npm run package' first`);
  process.exit(2);
}
const images = path.join(root, 'extension', 'marketplace', 'images');
// The pictures land in the committed folder under their own names; a failure's goes to .e2e/.
const sc = scenario('screenshots-marketplace', { shots: { dir: images, prefix: '', numbered: false, settleMs: 400, keep: true } });
const { shot } = sc;

await runScenario(sc, {
  settings: {
    'retrace.permissions.write': 'auto',
    'retrace.permissions.command': 'auto',
    'workbench.colorTheme': 'Default Dark Modern',
  },
  env: { RETRACE_FAKE_MODEL: 'e2e' },
  page: { viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 },
  failureShot: page => page.screenshot({ path: path.join(sc.work, 'failure.png') }),
}, async ({ page, wb }) => {
  const { sidebar, row, chat, dialogButton, contextMenu, sendPrompt, openFile } = wb;
  await wb.icon().waitFor({ timeout: 60000 });
  await openFile('src/app.py');
  await wb.openRetrace();

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
});
