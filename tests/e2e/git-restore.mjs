// Real-browser E2E: git-aware restores and side effects a restore does not undo (issue 28,
// Deliver 4 and 6). The packaged .vsix in code-server, driven by headless Chromium, against the
// real Retrace server and a scripted fake model (tests/e2e/scenarios/git-restore.json). The
// workspace is a git repository on branch main. Steps: the agent writes notes.txt, switches to a
// new branch and commits, runs a `pip install`, edits notes.txt → the switch row says "git:
// switched to branch feature", the pip row is marked "⚠ outside" → Restore Code to the
// write_file row (before the switch): one dialog says git moved (main → feature), offers "Restore
// Files Only" and "Park Current State on a Branch, Then Restore", and names the pip install as
// "not undone by this restore" → Park first: notes.txt is back to v1, `git branch` shows a
// retrace/parked-… branch holding v2, HEAD stays on feature → Undo Last Restore → Restore Code
// again, Files Only: notes.txt is v1, no second parked branch. Screenshots:
// .e2e/screenshots/git-restore-*.png. Usage: node tests/e2e/git-restore.mjs [vsix]
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { log, root, runScenario, scenario, waitFor } from './harness.mjs';

const sc = scenario('git-restore');
const { workspace, read } = sc;
const GIT_ENV = { ...process.env, GIT_AUTHOR_NAME: 'e2e', GIT_AUTHOR_EMAIL: 'e2e@example.com', GIT_COMMITTER_NAME: 'e2e', GIT_COMMITTER_EMAIL: 'e2e@example.com' };
const git = (...args) => execFileSync('git', args, { cwd: workspace, env: GIT_ENV, encoding: 'utf8' }).trim();
const parked = () => git('branch', '--list', 'retrace/parked-*', '--format=%(refname:short)').split('\n').filter(Boolean);

git('init', '-q', '-b', 'main');
git('add', '-A');
git('commit', '-q', '-m', 'sample');

await runScenario(sc, {
  settings: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  env: { RETRACE_FAKE_MODEL: path.join(root, 'tests/e2e/scenarios/git-restore.json') },
}, async ({ page, wb, shot }) => {
  const { row, chat, dialogButton, sendPrompt, contextMenu, dismissToasts, runCommand } = wb;
  const dialog = () => page.locator('.monaco-dialog-box').first();
  await wb.openRetrace();

  // 1. The agent's turn: a branch switch with a commit, a pip install, an edit.
  await sendPrompt('Work on a feature branch');
  await chat().locator('.assistant', { hasText: 'Done: on branch feature.' }).waitFor({ timeout: 60000 });
  await waitFor('notes.txt is v2', () => read('notes.txt') === 'v2\n');
  assert.equal(git('rev-parse', '--abbrev-ref', 'HEAD'), 'feature');

  // 2. The rows say what git did and mark what a restore cannot take back.
  await waitFor('the switch row says so', async () => (await row('git switch').innerText()).includes('switched to branch feature'), 30000);
  await waitFor('the pip row is marked', async () => (await row('pip install').innerText()).includes('outside'), 30000);
  // At any sidebar width the icon says it too (the description is cut first).
  assert.equal(await row('git switch').locator('.codicon-source-control').count(), 1, 'the git icon');
  assert.equal(await row('pip install').locator('.codicon-globe').count(), 1, 'the outside icon');
  log('switch row:', (await row('git switch').innerText()).replace(/\s+/g, ' '));
  log('pip row:', (await row('pip install').innerText()).replace(/\s+/g, ' '));
  await shot(page, 'rows');

  // 3. Restore Code to before the switch: the git dialog, the pip install named.
  await contextMenu('write_file', 'Restore Code', dialogButton('Restore Files Only'));
  await dialogButton('Restore Files Only').waitFor({ timeout: 20000 });
  const text = await dialog().innerText();
  log('dialog:', text.replace(/\s+/g, ' '));
  assert.match(text, /Git moved/);
  assert.match(text, /branch main at/);
  assert.match(text, /branch feature at/);
  assert.match(text, /not undone by this restore/);
  assert.match(text, /pip install/);
  assert.ok(await dialogButton('Park Current State on a Branch').isVisible());
  await shot(page, 'git-dialog');

  // 4. Park first: a branch holds the state before the restore; git's HEAD stays where it is.
  await dialogButton('Park Current State on a Branch').click();
  await waitFor('notes.txt restored to v1', () => read('notes.txt') === 'v1\n', 30000);
  const branches = parked();
  assert.equal(branches.length, 1, `one parked branch: ${branches}`);
  assert.equal(git('show', `${branches[0]}:notes.txt`), 'v2');
  assert.equal(git('rev-parse', '--abbrev-ref', 'HEAD'), 'feature');
  await shot(page, 'parked');
  await dismissToasts();

  // 5. Undo, then restore again with "files only": no new branch.
  await runCommand('Retrace: Undo Last Restore');
  await waitFor('notes.txt back to v2', () => read('notes.txt') === 'v2\n', 30000);
  await dismissToasts();
  await contextMenu('write_file', 'Restore Code', dialogButton('Restore Files Only'));
  await dialogButton('Restore Files Only').waitFor({ timeout: 20000 });
  await dialogButton('Restore Files Only').click();
  await waitFor('notes.txt restored to v1 again', () => read('notes.txt') === 'v1\n', 30000);
  assert.equal(parked().length, 1, 'files only parks nothing');
  assert.equal(git('rev-parse', '--abbrev-ref', 'HEAD'), 'feature');
  await shot(page, 'files-only');
});
