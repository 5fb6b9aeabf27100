// Real-browser E2E for the Health panel: the packaged .vsix in code-server and headless Chromium.
// A first window creates the folder's store; with code-server stopped, it is moved to where older
// extensions kept it (the workbench's storage) and tests/e2e/seed_health.py writes a real session
// into it (edit_file checkpoints, a 3 MiB file, code restores through the
// `retrace` CLI with different reasons and one with none) and the retention budget is set so the
// store fills 85 % of it. Then "Retrace: Show Health" from the command palette opens the panel.
// Checks: before the seed (only a baseline) the panel says "No checkpoints yet", no empty axes; the
// restarted extension adopts the old store (moved back home, the old place empty); every chart has drawn (its canvas holds painted pixels) with an aria-label, the storage
// banner (≥ 80 %) offers the alert's two fixes, restores by reason and the targets are in the text
// alternatives, the slowest-checkpoints table has rows; switching to a light theme draws again in
// another text colour (the theme's); a slowest checkpoint's link selects it in the timeline and
// opens its changes. Screenshots: .e2e/screenshots/health-*.png (dark and light).
// Usage: node tests/e2e/health.mjs [vsix]   (npm run package first; one code-server at a time)
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import fs from 'node:fs';
import { root, log, findStore, oldStoreDir, scenario, runScenario, newPage, openFolder, stopCodeServer, waitFor, workbench, writeUserSettings, PYTHON } from './harness.mjs';

const sc = scenario('health');
const { userDataDir, workspace, ws, shot } = sc;
const DARK = 'Default Dark Modern';
const LIGHT = 'Default Light Modern';
const VIEWPORT = { viewport: { width: 1500, height: 1100 } };

/** The Health panel's document (inside the webview's iframes), once it has drawn. */
function healthFrame(page) {
  return waitFor('the health webview drawn', async () => {
    for (const f of page.frames()) {
      if ((await f.title().catch(() => '')) === 'Retrace Health' && (await f.locator('body[data-rendered]').count()) > 0) return f;
    }
    return undefined;
  }, 60000);
}

await runScenario(sc, { settings: { 'workbench.colorTheme': DARK }, page: VIEWPORT }, async ctx => {
  let page = ctx.page;
  let wb = ctx.wb;

  // 1. A first window creates the store; then, with everything stopped, the session is seeded.
  await wb.openRetrace();
  await wb.row('Baseline').waitFor({ timeout: 60000 });
  const store = await waitFor("the extension's store", () => findStore(userDataDir));
  // Nothing but the baseline yet: the panel says so instead of drawing empty axes.
  await wb.runCommand('Retrace: Show Health');
  const fresh = await healthFrame(page);
  assert.ok(await fresh.locator('#empty').isVisible(), 'the empty state');
  assert.match(await fresh.locator('#empty').innerText(), /No checkpoints yet/);
  assert.equal(await fresh.locator('canvas').count(), 0, 'no empty axes');
  await shot(page, 'empty');
  await page.locator('.tab', { hasText: 'Retrace Health' }).locator('.codicon-close').click();
  await page.locator('.tab', { hasText: 'Retrace Health' }).waitFor({ state: 'detached' });
  await page.close();
  await stopCodeServer(ctx.server);
  // An older extension's store: where it kept it (the workbench's storage for the folder).
  const oldStore = oldStoreDir(userDataDir);
  fs.mkdirSync(path.dirname(oldStore), { recursive: true });
  fs.renameSync(store, oldStore);
  const seeded = JSON.parse(execFileSync(PYTHON, [path.join(root, 'tests/e2e/seed_health.py'), workspace, '--store', oldStore], { encoding: 'utf8' }));
  log('seeded', seeded);
  const budget = Math.max(1024 * 1024, Math.ceil(seeded.usedBytes / 0.85));
  const settings = { 'workbench.colorTheme': DARK, 'retrace.retention.maxBytes': budget };
  writeUserSettings(userDataDir, settings);

  ctx.server = await ctx.startServer(ctx.server.port);
  ctx.page = page = await newPage(ctx.browser, VIEWPORT);
  const refused = [];
  page.on('console', m => {
    if (/Content Security Policy|Refused to/i.test(m.text()) && m.location().url.includes('health')) refused.push(m.text());
  });
  wb = workbench(page, ws);
  await openFolder(page, ctx.server, workspace);
  await wb.openRetrace();
  await page.locator('.statusbar-item', { hasText: /Retrace: idle/ }).first().waitFor({ timeout: 90000 });
  // The storage alert (85 % of the budget) arrives as a notification with the same fixes.
  await wb.toast('Retrace checkpoint storage').waitFor({ timeout: 30000 });
  await wb.dismissToasts();
  // The old store was adopted: moved home in one rename (the seeded session is what the panel shows).
  assert.equal(findStore(userDataDir), store, 'the store is back at its home');
  assert.equal(fs.existsSync(oldStore), false, 'nothing left at the old place');

  // 2. The panel, from the command palette.
  await wb.runCommand('Retrace: Show Health');
  await page.locator('.tab', { hasText: 'Retrace Health' }).waitFor({ timeout: 30000 });
  const panel = await healthFrame(page);
  const drawn = await panel.evaluate(() => [...document.querySelectorAll('canvas')].map(c => {
    const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
    let painted = 0;
    for (let i = 3; i < data.length; i += 4) if (data[i] > 0) painted++;
    return { label: c.getAttribute('aria-label'), painted, w: c.width, h: c.height };
  }));
  log('canvases', drawn);
  assert.equal(drawn.length, 4, 'storage, capture, restore, reasons');
  for (const c of drawn) {
    assert.ok(c.painted > 500, `painted: ${c.label}`);
    assert.ok(c.label && c.label.length > 20, 'an aria-label in words');
  }
  assert.match(drawn[0].label, /Storage over time: .* MiB of .* MiB \(8\d %\)/);

  // The banner with the alert's two fixes, the tiles, the text alternatives, the slowest rows.
  const banner = panel.locator('#banner');
  assert.match(await banner.innerText(), /Checkpoint storage is filling up|almost full/);
  assert.equal(await banner.locator('button', { hasText: 'Collect garbage now' }).count(), 1);
  assert.equal(await banner.locator('button', { hasText: 'Retention settings' }).count(), 1);
  const tiles = (await panel.locator('.tile').allInnerTexts()).map(t => t.replace(/\s+/g, ' '));
  log('tiles', tiles);
  assert.ok(tiles.some(t => /Checkpoint success 100 % \d+ attempts \(target 99\.9 %\)/.test(t)), 'success tile');
  assert.ok(tiles.some(t => /Restore p95 .*target < 2\.0 s/.test(t)), 'p95 tile');
  const reasons = await panel.locator('table.sr-only', { hasText: 'Restores by reason' }).evaluate(t => t.textContent);
  assert.match(reasons, /Broke tests2/);
  assert.match(reasons, /Wrong approach1/);
  assert.match(reasons, /No reason given2/);
  const links = panel.locator('a.checkpoint-link');
  assert.ok((await links.count()) >= 5, 'slowest checkpoints listed');
  assert.deepEqual(refused, [], 'no CSP refusal in the panel');
  await shot(page, 'dark');
  const darkColor = await panel.locator('body').getAttribute('data-chart-color');

  // 3. A light theme: the charts are drawn again in its colours.
  const before = Number(await panel.locator('body').getAttribute('data-rendered'));
  // The theme picker (the palette's exact entry: "Browse Color Themes…" would match the words too).
  const pick = page.locator('.quick-input-widget input');
  await page.keyboard.press('F1');
  await pick.fill('>Preferences: Color Theme');
  await page.locator('.quick-input-list .monaco-list-row[aria-label^="Preferences: Color Theme"]').first().click();
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Dark Modern' }).first().waitFor();
  await pick.fill('Light Modern'); // the picker lists themes by label ("Light Modern" is "Default Light Modern")
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Light Modern' }).first().click();
  await waitFor('the panel drawn in the light theme', async () => Number(await panel.locator('body').getAttribute('data-rendered')) > before
    && (await panel.locator('body').getAttribute('data-chart-color')) !== darkColor, 30000);
  const lightColor = await panel.locator('body').getAttribute('data-chart-color');
  log('chart text colour', darkColor, '→', lightColor);
  assert.notEqual(lightColor, darkColor);
  assert.ok(await panel.locator('body.vscode-light').count(), 'the webview is told the theme');
  await shot(page, 'light');
  await panel.locator('dl.facts').scrollIntoViewIfNeeded();
  await shot(page, 'light-lower');
  await panel.locator('h1').scrollIntoViewIfNeeded();

  // 4. A slowest checkpoint's link: the timeline selects it and its changes open.
  const first = links.first();
  const id = await first.getAttribute('data-checkpoint-id');
  await first.click();
  await waitFor('the checkpoint selected in the timeline', async () => (await wb.sidebar().locator('.monaco-list-row.selected').count()) > 0, 30000);
  await waitFor('its changes open', async () => {
    const active = await page.locator('.tab.active').first().innerText().catch(() => '');
    return active !== '' && !active.includes('Retrace Health');
  }, 30000);
  log('link to', id, 'selected', await wb.sidebar().locator('.monaco-list-row.selected').first().innerText(), 'opened', await page.locator('.tab.active').first().innerText());
  await shot(page, 'link-opened');

  // Shown again (one panel): the command reveals it.
  await wb.runCommand('Retrace: Show Health');
  await page.locator('.tab.active', { hasText: 'Retrace Health' }).waitFor({ timeout: 30000 });
  assert.equal(await page.locator('.tab', { hasText: 'Retrace Health' }).count(), 1, 'one panel');
});
