// Real-browser E2E for a readable chat: the packaged .vsix in code-server, headless Chromium, the
// real Retrace server and a scripted fake model (tests/e2e/scenarios/chat.json: one write_file,
// then a Markdown answer with a heading, a list, a code block, a table, a raw <img onerror> and a
// javascript: link). Checks: the Markdown is rendered (heading, list, table, code block with its
// language and a Copy button that copies the raw code), raw HTML stays text (no img element, no
// javascript: href), an https link opens through VS Code (its "open external website" prompt,
// never a navigation of the webview), the tool call shows its diff inline and its "Checkpoint"
// link opens the checkpoint's diff, the turn ends with its token/cost line, the finished answer is
// announced once through the polite live region (the log itself is not live), and after a window
// reload the same chat is rendered again from the server. Screenshots: .e2e/screenshots/chat-*.png.
// Usage: node tests/e2e/chat.mjs [vsix]   (npm run test:e2e packages first)
import assert from 'node:assert/strict';
import path from 'node:path';
import { root, log, scenario, runScenario, waitFor } from './harness.mjs';

const sc = scenario('chat');
const { read, shot } = sc;

await runScenario(sc, {
  settings: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  env: { RETRACE_FAKE_MODEL: path.join(root, 'tests/e2e/scenarios/chat.json') },
  page: { viewport: { width: 1500, height: 1000 }, permissions: ['clipboard-read', 'clipboard-write'] },
}, async ({ page, wb }) => {
  const { chat, row, dialogButton, sendPrompt } = wb;
  await wb.openRetrace();
  await row('Baseline').waitFor({ timeout: 60000 });
  // Room for the chat: widen the side bar.
  const bar = await page.locator('.part.sidebar').first().boundingBox();
  if (bar !== null && bar.width < 650) {
    const y = bar.y + bar.height / 2;
    await page.mouse.move(bar.x + bar.width + 1, y);
    await page.mouse.down();
    await page.mouse.move(bar.x + 700, y, { steps: 8 });
    await page.mouse.up();
  }

  // 1. The turn: a tool call, then the Markdown answer.
  await sendPrompt('Create hello.txt and tell me about it');
  const answer = chat().locator('.assistant', { has: chat().locator('h1', { hasText: 'Summary' }) });
  await answer.waitFor({ timeout: 90000 });
  await waitFor('hello.txt written', () => read('hello.txt') === 'Hello from Retrace\n');
  const usage = chat().locator('.usage').last();
  await usage.waitFor({ timeout: 30000 });
  await shot(page, 'rendered');

  // 2. Markdown elements, sanitized.
  assert.equal(await answer.locator('strong', { hasText: 'hello.txt' }).count(), 1);
  assert.deepEqual(await answer.locator('ul > li').allInnerTexts(), ['wrote hello.txt', 'kept everything else as it was']);
  assert.equal(await answer.locator('table td', { hasText: 'hello.txt' }).count(), 1);
  assert.equal((await answer.locator('.code-block .code-lang').innerText()).trim(), 'python');
  assert.equal(await answer.locator('.code-block code').innerText(), 'print("<b>hi</b>")\n', 'the raw code');
  assert.equal(await chat().locator('#log img').count(), 0, 'no img element from the model');
  assert.equal(await chat().locator('#log b').count(), 0, 'no raw HTML element');
  const hrefs = await chat().locator('#log a').evaluateAll(as => as.map(a => a.getAttribute('href')));
  log('links:', hrefs);
  assert.deepEqual(hrefs, ['https://example.com/docs']);
  const text = await answer.innerText();
  assert.match(text, /<img src=x onerror="document.title='pwned'">/, 'the raw HTML is shown as text');
  assert.match(text, /\[a bad link\]\(javascript:alert\(1\)\)/, 'the javascript: link is text');
  assert.notEqual(await chat().locator('body').evaluate(() => document.title), 'pwned');
  assert.equal(await chat().locator('#log').getAttribute('aria-live'), 'off', 'the log is not a live region');

  // 3. Copy copies the raw code.
  const copyButton = answer.locator('button.code-copy');
  assert.equal(await copyButton.getAttribute('aria-label'), 'Copy python code');
  await copyButton.click();
  await answer.locator('button.code-copy[data-copied]').waitFor({ timeout: 10000 });
  const copied = await waitFor('the clipboard holds the code', async () => {
    const clip = await page.evaluate(() => navigator.clipboard.readText());
    return clip === 'print("<b>hi</b>")\n' ? clip : false;
  }, 15000);
  log('clipboard:', JSON.stringify(copied));
  await shot(page, 'copied');

  // 4. The usage line and the announcement of the finished answer.
  const line = await usage.innerText();
  log('usage line:', line);
  assert.match(line, /^[\d.]+k? in( \([\d.]+k? cached\))? · [\d.]+k? out · (\$[\d.]+|<\$0\.001)$/);
  const announced = await chat().locator('#announce-polite').innerText();
  log('announced:', announced.replace(/\s+/g, ' '));
  assert.match(announced, /Summary I created hello\.txt and checked it/);
  assert.equal((announced.match(/Summary I created/g) ?? []).length, 1, 'said once');

  // 5. The tool call: its diff inline, its checkpoint link.
  const call = chat().locator('.tool-call', { hasText: 'write_file' }).first();
  await call.locator('details.tool-diff > summary').click();
  const diff = call.locator('.diff-text');
  await diff.waitFor({ timeout: 20000 });
  assert.match(await diff.innerText(), /\+Hello from Retrace/);
  await shot(page, 'tool-diff');
  const link = call.locator('button.checkpoint-link');
  assert.match((await link.getAttribute('aria-label')) ?? '', /^Open the changes of checkpoint \w{8} \(write_file hello\.txt\)$/);
  await link.click();
  await page.locator('.monaco-diff-editor').first().waitFor({ timeout: 20000 });
  await page.locator('.tab.active', { hasText: 'hello.txt' }).waitFor({ timeout: 20000 });
  await shot(page, 'checkpoint-diff');

  // 6. An https link opens through VS Code (its prompt), never inside the webview.
  await answer.locator('a', { hasText: 'the docs' }).click();
  const prompt = page.locator('.monaco-dialog-box', { hasText: 'example.com' }).first();
  await prompt.waitFor({ timeout: 20000 });
  await shot(page, 'link-prompt');
  await dialogButton('Cancel').click();
  await answer.waitFor(); // the webview is still the chat

  // 7. After a reload the chat comes back from the server: Markdown, usage line, checkpoint link.
  await page.reload();
  await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
  await wb.openRetrace();
  await chat().locator('.assistant h1', { hasText: 'Summary' }).waitFor({ timeout: 60000 });
  await chat().locator('.usage').first().waitFor({ timeout: 30000 });
  assert.equal(await chat().locator('.usage').first().innerText(), line, 'the same numbers, from the server');
  await chat().locator('.tool-call button.checkpoint-link').first().waitFor({ timeout: 30000 });
  assert.equal(await chat().locator('#log img').count(), 0);
  await shot(page, 'reloaded');
});
