// Real-browser E2E for issue 28's readability findings, at a 300 px sidebar: a session of three
// turns (a write and two read-only calls; 50 edits of one file; 24 edits alternating between two
// files) and a restore with its safety capture is written into the store (tests/e2e/seed_readable.py,
// before the workbench starts), then the packaged .vsix shows it and three more restores are made
// from the timeline. Checks: a restore is ONE row (its safety capture inside it), the work it left
// behind one collapsed "Abandoned: N steps" node, 50 edits of one file one "edit_file scale.py ×50"
// row, the read-only calls one "read 1 file · 1 listing" row, the head row in view after each restore
// (the restore target picked after scrolling away), labels not cut at 300 px.
// Screenshot: .e2e/screenshots/readable-300px-three-restores.png. Usage: node tests/e2e/readable.mjs [vsix]
import assert from 'node:assert/strict';
import { log, scenario, runScenario, seedBeforeStart, waitFor } from './harness.mjs';

const sc = scenario('readable', { shots: { numbered: false } });
const { shot } = sc;
const VIEWPORT = { width: 1280, height: 720 };
const SIDEBAR = 300;

// The session is written into the folder's store before the workbench starts.
const { seeded } = seedBeforeStart(sc, 'seed_readable.py');
log('seeded', seeded);
assert.deepEqual(seeded.lastKinds, ['tool', 'safety', 'restore']);

await runScenario(sc, {
  settings: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  env: { RETRACE_FAKE_MODEL: 'e2e' },
  page: { viewport: VIEWPORT },
}, async ctx => {
  const page = ctx.page;
  const wb = ctx.wb;
  const sidebar = () => wb.sidebar();
  const row = text => wb.row(text);
  const list = () => sidebar().locator('.monaco-list').last();
  const labelOf = async r => (await r.locator('.label-name').first().innerText()).replace(/\s+/g, ' ').trim();
  const topLabels = async () => {
    const out = [];
    for (const r of await sidebar().locator('.monaco-list-row').all()) out.push({ level: await r.getAttribute('aria-level'), label: await labelOf(r).catch(() => '') });
    return out;
  };

  /** Move through the (virtualised) tree with the keyboard until a row with `text` is rendered. */
  async function scrollTo(text, { fromTop = true } = {}) {
    await list().focus();
    await page.keyboard.press(fromTop ? 'Home' : 'End');
    for (let i = 0; i < 40; i++) {
      if ((await row(text).count()) > 0) {
        await row(text).scrollIntoViewIfNeeded();
        return row(text);
      }
      await page.keyboard.press(fromTop ? 'PageDown' : 'PageUp');
    }
    throw new Error(`row "${text}" never appeared`);
  }

  /** The head row ("● …") is rendered and inside the visible part of the timeline. */
  async function headInView() {
    const head = sidebar().locator('.monaco-list-row', { has: page.locator('.label-name', { hasText: /^●/ }) }).first();
    if ((await head.count()) === 0) return false;
    const [box, view] = [await head.boundingBox(), await list().boundingBox()];
    return box !== null && view !== null && box.y >= view.y - 1 && box.y + box.height <= view.y + view.height + 1 ? head : false;
  }

  /** Every rendered row's label fits: its text ends inside the part of the row the workbench
   * gives the label (which shrinks for the row's inline actions on the selected row). */
  async function labelsNotCut() {
    const cut = await sidebar().locator('.monaco-list-row').evaluateAll(rows => rows.flatMap(r => {
      const name = r.querySelector('.label-name');
      if (name === null) return [];
      const room = (name.closest('.monaco-icon-label-container') ?? r).getBoundingClientRect();
      const text = document.createRange();
      text.selectNodeContents(name);
      const right = text.getBoundingClientRect().right;
      return right > room.right + 0.5 ? [`${name.textContent} (${Math.round(right)} > ${Math.round(room.right)})`] : [];
    }));
    assert.deepEqual(cut, [], `labels cut at ${SIDEBAR} px`);
  }

  async function setSidebarWidth(width) {
    const bar = await page.locator('.part.sidebar').first().boundingBox();
    assert.ok(bar !== null);
    const y = bar.y + bar.height / 2;
    await page.mouse.move(bar.x + bar.width + 1, y);
    await page.mouse.down();
    await page.mouse.move(bar.x + width + 1, y, { steps: 6 });
    await page.mouse.up();
    const now = await page.locator('.part.sidebar').first().boundingBox();
    log(`sidebar width ${now?.width}`);
    assert.ok(now !== null && Math.abs(now.width - width) <= 8, `sidebar at ${width} px: ${now?.width}`);
  }

  /** Restore Code to the row `target` (a locator), confirmed; resolves once the new head row — a
   * restore naming `expected` — is in view. */
  async function restoreTo(target, n, expected) {
    await wb.contextMenu(target, 'Restore Code');
    // The confirmation, or (README.md was changed by hand after the agent's work) the conflict
    // question: Overwrite (the seeded safety capture keeps the hand edit).
    const confirm = page.locator('.monaco-dialog-box .monaco-button').filter({ hasText: /^(Restore|Overwrite)$/ }).first();
    await confirm.waitFor({ timeout: 20000 });
    await confirm.click();
    const head = await waitFor(`restore ${n}: the head row in view`, async () => {
      const h = await headInView();
      return h !== false && expected.test(await labelOf(h)) ? h : false;
    }, 30000);
    log(`restore ${n}: head row "${await labelOf(head)}" in view`);
    await wb.dismissToasts();
  }

  /** Open or close the (last) row with `text` through its twistie, until it says so (a click
   * landing while the tree re-renders is lost). */
  async function setExpanded(text, open, fromTop = false) {
    await waitFor(`"${text}" ${open ? 'open' : 'closed'}`, async () => {
      const r = await scrollTo(text, { fromTop });
      if ((await r.getAttribute('aria-expanded')) === String(open)) return true;
      await r.locator('.monaco-tl-twistie').click();
      return false;
    }, 20000, 500);
  }

  await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
  await wb.openRetrace();
  await page.locator('.statusbar-item', { hasText: /Retrace: idle/ }).first().waitFor({ timeout: 90000 });
  const chatHeader = sidebar().locator('.pane-header', { hasText: 'Chat' }).first();
  if ((await chatHeader.getAttribute('aria-expanded')) === 'true') await chatHeader.click();
  await row('Session of').waitFor({ timeout: 60000 });
  await setSidebarWidth(SIDEBAR);

  // 1. The seeded restore is one row, its safety capture inside it; the head is in view.
  await waitFor('the head row in view on open', () => headInView(), 20000);
  const restoreRow = await scrollTo('Back to', { fromTop: false });
  assert.equal(await sidebar().locator('.monaco-list-row', { hasText: 'Before restore' }).count(), 0, 'no "Before restore" row between turns');
  assert.equal(await restoreRow.getAttribute('aria-expanded'), 'false', 'the restore row opens on demand');
  await setExpanded('Back to', true);
  await scrollTo('Before restore', { fromTop: false });
  const abandoned = await scrollTo('Abandoned:', { fromTop: false });
  assert.equal(await labelOf(abandoned), 'Abandoned: 74 steps');
  assert.equal(await abandoned.getAttribute('aria-expanded'), 'false', 'abandoned work is one collapsed node');
  await shot(page, '300px-restore-open');
  await setExpanded('Back to', false);

  // 2. 50 edits of one file are one row; the two read-only calls one compact row.
  await setExpanded('2. Tune the scale', true, true);
  const repeated = await scrollTo('edit_file scale.py ×50');
  assert.equal(await sidebar().locator('.monaco-list-row', { hasText: /edit_file scale\.py$/ }).count(), 0, 'no single scale.py rows');
  assert.equal(await repeated.getAttribute('aria-expanded'), 'false');
  await setExpanded('1. Create the app', true, true);
  await scrollTo('read 1 file · 1 listing');
  await labelsNotCut();

  // 3. Three restores from the timeline, each picked after scrolling away from the head: the new
  // head (one "Back to ‘…’" row) comes into view every time.
  await restoreTo(await scrollTo('Starting point'), 1, /^● Back to ‘Starting point’$/);
  await labelsNotCut();
  await restoreTo(await scrollTo('edit_file: alpha.py'), 2, /^● Back to ‘alpha\.py’$/);
  await restoreTo(await scrollTo('write_file: main.py'), 3, /^● Back to ‘main\.py’$/);
  const labels = await topLabels();
  log('rows after three restores:', labels.map(l => `${l.level}:${l.label}`));
  assert.equal(labels.filter(l => /^Before restore/.test(l.label) && l.level === '2').length, 0, 'no safety capture row at the top level');
  assert.equal(await headInView() !== false, true, 'the head row is in view');
  await labelsNotCut();
  await page.keyboard.press('End');
  await shot(page, '300px-three-restores');
});
