// Runs the mocha suites of tests/extension/exthost INSIDE code-server's Node extension host
// (the equivalent of `code --extensionDevelopmentPath --extensionTestsPath`, which code-server
// only accepts through the workbench URL's `payload` parameter). The Retrace server is the real
// one (repo .venv) with the deterministic fake model scenario `e2e`.
// Usage: npm run test:exthost   (builds dist/ and out/tests first)
import fs from 'node:fs';
import util from 'node:util';
import path from 'node:path';
import { root, log, scenario, writeUserSettings, startCodeServer, launchBrowser } from './harness.mjs';

const testsEntry = path.join(root, 'out', 'tests', 'exthost', 'index');
if (!fs.existsSync(`${testsEntry}.js`)) throw new Error(`${testsEntry}.js missing: run npm run build:tests`);
/**
 * One workbench launch: a fresh workspace and profile, `settings` added to the user settings,
 * the mocha suite `<suite>.test.js`. Resolves to the runner's exit code.
 */
async function launch(suite, settings) {
  const { work, userDataDir, extensionsDir, workspace } = scenario(`exthost-${suite}`);
  writeUserSettings(userDataDir, settings);
  const server = await startCodeServer({
    userDataDir, extensionsDir, workspace, logFile: path.join(work, 'code-server.log'),
    env: { RETRACE_FAKE_MODEL: 'e2e', RETRACE_LOG_CONSOLE: '1', RETRACE_EXTHOST_SUITE: suite },
  });
  log(`[${suite}] code-server up at ${server.url}`);
  const browser = await launchBrowser();
  const page = await browser.newPage();
  let exitCode = 1;
  try {
    let resolveExit;
    const done = new Promise(resolve => { resolveExit = resolve; });
    await page.exposeFunction('codeAutomationExit', code => resolveExit(code));
    await page.exposeFunction('codeAutomationLog', (type, args) => {
      const line = util.format(...args).replace(/^%c\s*\S+\s*color: #\w+\s*/, '');
      if (!/ENOTFOUND|Failed to load resource|socket|connection token/.test(line)) console.log(line);
    });
    const authority = new URL(server.url).host;
    const remote = p => `vscode-remote://${authority}${p}`;
    const payload = [
      ['extensionDevelopmentPath', remote(root)],
      ['extensionTestsPath', remote(testsEntry)],
    ];
    await page.goto(`${server.url}/?folder=${encodeURIComponent(workspace)}&payload=${encodeURIComponent(JSON.stringify(payload))}`);
    exitCode = await Promise.race([
      done,
      new Promise((_, rej) => setTimeout(() => rej(new Error('timeout waiting for codeAutomationExit')), 240000)),
    ]);
    log(`[${suite}] extension-host tests finished with exit code ${exitCode}`);
  } catch (e) {
    log(`[${suite}] ERROR`, e);
    await page.screenshot({ path: path.join(work, 'failure.png') }).catch(() => {});
  } finally {
    await browser.close();
    server.stop();
  }
  return exitCode;
}

const suites = {
  retrace: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  fileHistory: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  background: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  serverDown: { 'retrace.pythonPath': '/nonexistent/retrace-test/python' },
  // run_command asks, so a turn can be caught waiting while its server is killed.
  recovery: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'ask' },
};
// RETRACE_EXTHOST_ONLY=recovery,serverDown runs only those launches.
const only = (process.env.RETRACE_EXTHOST_ONLY || '').split(',').filter(Boolean);
let failed = 0;
for (const [suite, settings] of Object.entries(suites)) {
  if (only.length > 0 && !only.includes(suite)) continue;
  if ((await launch(suite, settings)) !== 0) failed++;
}
process.exit(failed === 0 ? 0 : 1);
