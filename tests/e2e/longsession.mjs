// Real-browser E2E for a 10,000-checkpoint session: a pre-generated session (tests/e2e/seed_long.py:
// 500 turns × 20 tool calls — edit_file, run_command, write_file — generated once per machine and
// cached) is copied into the folder's store before the workbench starts, then the packaged
// .vsix shows it. Checks: the newest page opens (turn 500 shown, older turns collapsed), "Load
// older…" brings the previous page, the filter (tool, path, text) shows only matching rows and
// is described on the view, "Jump to Head" reveals the head, and hovering a row shows its diff
// preview, and the chat opens as the newest items of its 10,000 tool calls ("Show earlier
// messages" for more) instead of freezing the workbench. Prints the measured open and hover
// latencies (no timed assertions: timings are noisy).
// Screenshots: .e2e/screenshots/longsession-*.png. Usage: node tests/e2e/longsession.mjs [vsix]
import assert from 'node:assert/strict';
import { log, scenario, runScenario, seedBeforeStart, waitFor } from './harness.mjs';

const sc = scenario('longsession', { shots: { prefix: 'longsession-' } });
const { shot } = sc;
const TURNS = 500;
const HOVERS = 6;
const HOVER_DELAY = 50;

// The cached 10,000-step session is put in place as the folder's store before the workbench starts.
const tSeed = Date.now();
const { seeded } = seedBeforeStart(sc, 'seed_long.py', ['--cached']);
log(`session of ${seeded.checkpoints} checkpoints in place in ${Date.now() - tSeed} ms (generated once per machine)`);
assert.equal(seeded.checkpoints, 10000);

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
};

await runScenario(sc, {
  // The workbench waits `workbench.hover.delay` before it asks a tree item for its tooltip: set
  // short here, so the measured hover latency is Retrace's (resolve + diff), not the wait.
  settings: {
    // The seed holds >10,000 checkpoints: keep them all (the default keeps 5,000 and the automatic
    // cleanup would trim the session at start-up).
    'retrace.retention.maxCheckpoints': 50000,
    'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto', 'workbench.hover.delay': HOVER_DELAY },
  env: { RETRACE_FAKE_MODEL: 'e2e' },
  page: { viewport: { width: 1500, height: 1000 } },
}, async ctx => {
  const page = ctx.page;
  const wb = ctx.wb;
  const sidebar = () => wb.sidebar();
  const row = text => wb.row(text);
  const rowTexts = async () => (await sidebar().locator('.monaco-list-row').allInnerTexts()).map(r => r.replace(/\s+/g, ' ').trim());
  const checkpointRows = async () => (await rowTexts()).filter(t => /^(edit_file|write_file|run_command): /.test(t));

  // 1. Open: measured from the server reporting ready to the newest turn shown.
  await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
  await wb.openRetrace();
  await page.locator('.statusbar-item', { hasText: /Retrace: idle/ }).first().waitFor({ timeout: 180000 });
  const tOpen = Date.now();
  const chatHeader = sidebar().locator('.pane-header', { hasText: 'Chat' }).first();
  if ((await chatHeader.getAttribute('aria-expanded')) === 'true') await chatHeader.click();
  await row(`${TURNS}. Turn ${TURNS}:`).waitFor({ timeout: 120000 });
  const openMs = Date.now() - tOpen;
  log(`MEASURED open: 10,000-checkpoint session's newest page shown ${openMs} ms after the server reported ready`);
  // The head is what the view shows first ("● you are here" kept in view); the page's top, with
  // its "Load older…" row, is one Home key away.
  await waitFor('the head in view', async () => (await rowTexts()).some(t => t.includes('you are here')), 30000);
  await shot(page, 'open');
  await sidebar().locator('.monaco-list').last().focus();
  await page.keyboard.press('Home');
  await row('Load older…').waitFor({ timeout: 30000 });
  const first = await rowTexts();
  assert.ok(first.some(t => /^Session of .*500 turns · 10,00[0-9] steps/.test(t)), `session row: ${first.slice(0, 3)}`);
  assert.ok(first.some(t => t.startsWith('Load older…')), 'a "Load older…" row');

  // 2. Paging: "Load older…" brings the previous page (its turns appear above).
  const oldestShown = Math.min(...first.map(t => /^(\d+)\. Turn /.exec(t)?.[1]).filter(Boolean).map(Number));
  // The view may still bring the head back into view once after opening: go to the top and
  // click "Load older…" until the click lands.
  let olderBefore = '';
  await waitFor('"Load older…" clicked', async () => {
    await sidebar().locator('.monaco-list').last().focus();
    await page.keyboard.press('Home');
    try {
      olderBefore = (await row('Load older…').innerText({ timeout: 3000 })).replace(/\s+/g, ' ');
      await row('Load older…').click({ timeout: 3000 });
      return true;
    } catch {
      return false;
    }
  }, 60000);
  // Merged: the older turn is there, or the "Load older…" row counts fewer earlier steps. Each
  // look starts at the top (a re-render may scroll the row out of the list's rendered window; a
  // row out of it has no text to read, which is not "unchanged").
  const olderTurn = `${oldestShown - 1}. Turn ${oldestShown - 1}:`;
  await waitFor('the older page merged', async () => {
    await sidebar().locator('.monaco-list').last().focus();
    await page.keyboard.press('Home');
    if (await row(olderTurn).count() > 0) return true;
    const now = await row('Load older…').innerText({ timeout: 3000 }).catch(() => olderBefore);
    return now.replace(/\s+/g, ' ') !== olderBefore;
  }, 120000, 500);
  await sidebar().locator('.monaco-list').last().focus();
  await page.keyboard.press('Home');
  await row(olderTurn).waitFor({ timeout: 60000 });
  log(`loaded older: turn ${oldestShown - 1} shown (oldest before: ${oldestShown})`);
  await shot(page, 'older-page');

  // 3. Filter by tool, by path, by text (QuickInput), described on the view; then cleared.
  async function filterBy(kind, value) {
    // No row hover may take the focus from the quick pick.
    await page.mouse.move(0, 0);
    await page.keyboard.press('Escape');
    await wb.runCommand('Retrace: Filter Timeline…');
    const pick = page.locator('.quick-input-list .monaco-list-row', { hasText: kind }).first();
    await pick.click();
    const input = page.locator('.quick-input-widget input');
    if (kind === 'Tool') {
      await page.locator('.quick-input-list .monaco-list-row', { hasText: value }).first().click();
    } else {
      await input.fill(value);
      await input.press('Enter');
    }
    await page.locator('.pane-header', { hasText: `Filter: ${kind.toLowerCase()}` }).first().waitFor({ timeout: 60000 });
  }
  async function clearFilter() {
    await wb.runCommand('Retrace: Clear Timeline Filter');
    await waitFor('the filter cleared', async () => (await page.locator('.pane-header', { hasText: 'Filter:' }).count()) === 0, 30000);
  }
  const expandAll = async () => {
    // Filter results keep turns collapsed except the newest (revealed): open the ones above it.
    for (let i = 0; i < 3; i++) {
      const collapsed = sidebar().locator('.monaco-list-row[aria-expanded="false"]', { hasText: /^\d+\. Turn/ }).last();
      if ((await collapsed.count()) === 0) break;
      await collapsed.click();
    }
  };

  await filterBy('Tool', 'write_file');
  await row('write_file: note_').waitFor({ timeout: 60000 });
  await expandAll();
  // The tree re-renders after the filtered answer arrives: wait until what is shown has settled.
  const byTool = await waitFor('rows of the tool filter', async () => { const r = await checkpointRows(); return r.length > 0 && r.every(t => t.startsWith('write_file: ')) && r; }, 30000).catch(async () => checkpointRows());
  assert.ok(byTool.length > 0 && byTool.every(t => t.startsWith('write_file: ')), `tool filter: ${byTool.slice(0, 5)}`);
  await sidebar().locator('.monaco-list').last().focus();
  await page.keyboard.press('Home'); // the session row, above the rows the view follows
  await waitFor('the session counts the matching rows', async () => (await rowTexts()).some(t => /659 steps/.test(t)), 30000);
  await shot(page, 'filter-tool');
  await clearFilter();

  await filterBy('Path', 'mod_07');
  await row('edit_file: mod_07.py').waitFor({ timeout: 60000 });
  await expandAll();
  const byPath = await waitFor('rows of the path filter', async () => { const r = await checkpointRows(); return r.length > 0 && r.every(t => t.includes('mod_07')) && r; }, 30000).catch(async () => checkpointRows());
  assert.ok(byPath.length > 0 && byPath.every(t => t.includes('mod_07')), `path filter: ${byPath.slice(0, 5)}`);
  await shot(page, 'filter-path');
  await clearFilter();

  await filterBy('Text', 'batch 17 ');
  await row('17. Turn 17:').waitFor({ timeout: 60000 });
  const byText = (await rowTexts()).filter(t => /^\d+\. Turn /.test(t));
  assert.deepEqual(byText.map(t => t.split('.')[0]), ['17'], `text filter turns: ${byText}`);
  await shot(page, 'filter-text');
  await clearFilter();
  await row(`${TURNS}. Turn ${TURNS}:`).waitFor({ timeout: 60000 });

  // 4. Jump to Head: the head row is selected.
  await wb.runCommand('Retrace: Jump to Head');
  await sidebar().locator('.monaco-list-row.selected', { hasText: 'you are here' }).first().waitFor({ timeout: 30000 });
  log('jump to head: the head row is selected');

  // 5. Hover: the diff preview appears; latency from the hover to the diff block.
  const hovers = [];
  const candidates = sidebar().locator('.monaco-list-row', { hasText: /^edit_file: mod_/ });
  for (let i = 0; i < HOVERS; i++) {
    const target = candidates.nth(i);
    await page.mouse.move(0, 0);
    await page.keyboard.press('Escape');
    await page.locator('.monaco-hover').first().waitFor({ state: 'hidden', timeout: 5000 }).catch(() => {});
    const t = Date.now();
    await target.hover();
    // The diff lines ("-value_3 = 4"), not the row's gist (which the hover shows at once).
    await page.locator('.monaco-hover', { hasText: /[-+]value_\d+ = \d+/ }).first().waitFor({ timeout: 20000 });
    hovers.push(Date.now() - t);
  }
  const hoverText = await page.locator('.monaco-hover').first().innerText();
  assert.match(hoverText, /[-+]value_\d+ = \d+/, 'the hover shows the diff');
  await shot(page, 'hover');
  log(`MEASURED hover preview (workbench hover delay set to ${HOVER_DELAY} ms, included): p50 ${percentile(hovers, 50)} ms, p95 ${percentile(hovers, 95)} ms, all ${hovers.join(', ')} ms`);
  log(`MEASURED summary: open ${openMs} ms; hover p95 ${percentile(hovers, 95)} ms`);

  // 6. The chat of the 10,000-call session opens as its newest items, with the rest one click away.
  await chatHeader.click();
  const earlier = wb.chat().locator('button.earlier');
  await earlier.waitFor({ timeout: 60000 });
  const shown = await wb.chat().locator('.msg').count();
  assert.match(await earlier.innerText(), /Show earlier messages \([\d,]+ more\)/);
  assert.ok(shown > 0 && shown <= 400, `the chat shows its newest items only (${shown})`);
  await earlier.click();
  await waitFor('earlier messages shown', async () => (await wb.chat().locator('.msg').count()) > shown, 60000);
  log(`chat: ${shown} newest items shown, then ${await wb.chat().locator('.msg').count()} after "Show earlier messages"`);
  // Past the messages fetched at first (the chat asks the server for the newest ones only), the
  // button fetches older ones: the chat keeps growing.
  for (let i = 0; i < 3; i++) {
    const before = await wb.chat().locator('.msg').count();
    await earlier.click();
    await waitFor('older messages fetched and shown', async () => (await wb.chat().locator('.msg').count()) > before, 60000);
  }
  log(`chat: ${await wb.chat().locator('.msg').count()} items after three more "Show earlier messages"`);
  await shot(page, 'chat');
});
