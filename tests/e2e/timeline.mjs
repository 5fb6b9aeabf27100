// Real-browser E2E for the timeline at scale: a 500-step agent session (25 turns × 20 edit_file
// calls, then a code restore) is written into the extension's store the way the agent journals it
// (tests/e2e/seed_story.py, before the workbench starts), then the packaged .vsix shows it. Checks: one story
// for the session (not named after its first prompt), turns with their prompts, rows told apart
// by their change gist with relative times, the restore in place saying what it restored to, the
// tree snappy to open and scroll; Restore Conversation into the middle marks the later turns as an
// abandoned branch, and after a window reload every turn keeps its title.
// Screenshots: .e2e/screenshots/timeline-500-*.png. Usage: node tests/e2e/timeline.mjs [vsix]
import assert from 'node:assert/strict';
import path from 'node:path';
import { root, log, scenario, runScenario, seedBeforeStart, waitFor } from './harness.mjs';

const sc = scenario('timeline', { shots: { prefix: 'timeline-500-' } });
const { shot } = sc;
const TURNS = 25;
const STEPS = 20;

/** The value of step k's edit (0-based): line k % 10 goes from k // 10 to k // 10 + 1. */
const gist = k => `‘x${k % 10} = ${Math.floor(k / 10)}’ → ‘x${k % 10} = ${Math.floor(k / 10) + 1}’`;

// The 500-step session is written into the folder's store, the way the agent journals it, before
// the workbench starts.
const { seeded, store } = seedBeforeStart(sc, 'seed_story.py', ['--turns', String(TURNS), '--steps', String(STEPS)]);
log('seeded', seeded, 'into', path.relative(root, store));
assert.equal(seeded.checkpoints, TURNS * STEPS);

await runScenario(sc, {
  settings: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  env: { RETRACE_FAKE_MODEL: 'e2e' },
  page: { viewport: { width: 1500, height: 1000 } },
}, async ctx => {
  const page = ctx.page;
  const wb = ctx.wb;
  const sidebar = () => wb.sidebar();
  // A row holding every one of `text` (a string or an array): several turns have a row titled
  // "edit_file scale.txt ×20", told apart only by their gist; in a virtualised list the DOM's
  // order is not the screen's, so "the first match" may be any of them.
  const row = text => (Array.isArray(text)
    ? text.slice(1).reduce((rows, t) => rows.filter({ hasText: t }), sidebar().locator('.monaco-list-row', { hasText: text[0] })).first()
    : wb.row(text));
  const timelineList = () => sidebar().locator('.monaco-list').last();
  const rowTexts = async () => (await sidebar().locator('.monaco-list-row').allInnerTexts()).map(r => r.replace(/\s+/g, ' ').trim());

  /** Move through the (virtualised) timeline with the keyboard until a row with `text` is rendered. */
  async function scrollTo(text, { fromTop = true } = {}) {
    const list = timelineList();
    await list.focus();
    await page.keyboard.press(fromTop ? 'Home' : 'End');
    for (let i = 0; i < 80; i++) {
      if ((await row(text).count()) > 0) {
        await row(text).scrollIntoViewIfNeeded();
        return row(text);
      }
      await page.keyboard.press(fromTop ? 'PageDown' : 'PageUp');
    }
    throw new Error(`row "${text}" never appeared`);
  }

  async function openTimeline() {
    await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
    await wb.openRetrace();
    // Measured from the moment the server is up (its start-up is not the timeline's cost).
    await page.locator('.statusbar-item', { hasText: /Retrace: idle/ }).first().waitFor({ timeout: 90000 });
    const t = Date.now();
    // Give the timeline the room: collapse the chat view above it.
    const chatHeader = sidebar().locator('.pane-header', { hasText: 'Chat' }).first();
    if ((await chatHeader.getAttribute('aria-expanded')) === 'true') await chatHeader.click();
    await row('Session of').waitFor({ timeout: 60000 });
    await row(`${TURNS}. Turn ${TURNS}:`).waitFor({ timeout: 30000 });
    const elapsed = Date.now() - t;
    // Widen the side bar so that row descriptions (the change gists) are readable.
    const bar = await page.locator('.part.sidebar').first().boundingBox();
    if (bar !== null && bar.width < 700) {
      const y = bar.y + bar.height / 2;
      await page.mouse.move(bar.x + bar.width + 1, y);
      await page.mouse.down();
      await page.mouse.move(bar.x + 760, y, { steps: 8 });
      await page.mouse.up();
    }
    return elapsed;
  }

  const openMs = await openTimeline();
  log(`timeline with ${TURNS * STEPS} steps shown ${openMs} ms after the server reported ready`);

  // One story for the session, named by its start, not by its first prompt.
  const texts = await rowTexts();
  log('first rows:', texts.slice(0, 12));
  const sessions = texts.filter(t => t.startsWith('Session of'));
  assert.equal(sessions.length, 1, `one agent story: ${sessions}`);
  assert.match(sessions[0], /25 turns · 50[0-9] steps/);
  assert.ok(!texts.some(t => /^Workspace history.*restore/i.test(t)));
  await shot(page, 'overview');

  // Rows are told apart by their gist and show relative times; the newest (the latest turn,
  // expanded) are at the end, after them the restore.
  const tScroll = Date.now();
  const last = await scrollTo(gist(TURNS * STEPS - 1), { fromTop: false });
  log(`scrolled to the last step in ${Date.now() - tScroll} ms`);
  // The turn's 20 edits of scale.txt are one row (issue 28), its description the newest step's gist.
  assert.match(await last.innerText(), new RegExp(`edit_file scale\\.txt ×${STEPS}`));
  assert.match((await last.innerText()).replace(/\s+/g, ' '), /(just now|min ago)/);
  const restore = await scrollTo('Back to ‘scale.txt’', { fromTop: false });
  assert.match((await restore.innerText()).replace(/\s+/g, ' '), /● Back to .*you are here/);
  await shot(page, 'end-with-restore');

  // Older turns start collapsed: the story reads as a list of prompts. Open turn 12.
  for (const n of [1, 12, 24]) assert.ok((await scrollTo(`${n}. Turn ${n}:`)).isVisible());
  assert.equal(await row(gist(12 * STEPS - 15)).count(), 0, 'turn 12 starts collapsed');
  await (await scrollTo('12. Turn 12:')).click();
  // Its 20 edits, folded into one row (the one whose gist is turn 12's newest step).
  await (await scrollTo([`edit_file scale.txt ×${STEPS}`, gist(12 * STEPS - 1)])).click();
  const tTop = Date.now();
  const middle = await scrollTo(gist(12 * STEPS - 15));
  log(`opened turn 12 and moved to step ${12 * STEPS - 15} in ${Date.now() - tTop} ms`);
  await middle.hover();
  await page.locator('.monaco-hover', { hasText: 'Prompt:' }).first().waitFor({ timeout: 20000 });
  const hover = await page.locator('.monaco-hover').first().innerText();
  assert.match(hover, /Turn 12: tune the scale constants/);
  await shot(page, 'row-tooltip');
  await page.keyboard.press('Escape');

  // Restore Conversation into turn 12: turns 13..25 become an abandoned branch, titles intact.
  await wb.contextMenu(await scrollTo(gist(12 * STEPS - 15)), 'Restore Conversation');
  await waitFor('turn 13 marked abandoned', async () => (await scrollTo('13. Turn 13:')).innerText().then(t => t.includes('abandoned branch')), 30000);
  await shot(page, 'abandoned-branch');

  // Reload the window: the server is asked again; every turn keeps its prompt.
  await page.reload();
  await openTimeline();
  for (const n of [1, 12, 13, 25]) {
    const turnRow = await scrollTo(`${n}. Turn ${n}: tune the scale constants, round ${n}`);
    const text = (await turnRow.innerText()).replace(/\s+/g, ' ');
    assert.equal(text.includes('abandoned branch'), n > 12, `turn ${n}: ${text}`);
  }
  assert.equal((await rowTexts()).filter(t => /^Turn \d+$/.test(t)).length, 0, 'no untitled turns after the reload');
  await shot(page, 'after-reload');
});
