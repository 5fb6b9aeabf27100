// Runs the mocha suites of tests/extension/exthost INSIDE code-server's Node extension host
// (the equivalent of `code --extensionDevelopmentPath --extensionTestsPath`, which code-server
// only accepts through the workbench URL's `payload` parameter). The Retrace server is the real
// one (repo .venv) with the deterministic fake model scenario `e2e`.
// Usage: npm run test:exthost   (builds dist/ and out/tests first); CI runs these launches and the
// browser scenarios in one pool (run-workbenches.mjs).
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import util from 'node:util';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { root, scenario, writeUserSettings, startCodeServer, launchBrowser, PAGE_DEFAULTS } from './harness.mjs';
import { isMain, jobsFromEnv, runPool } from './pool.mjs';

const testsEntry = path.join(root, 'out', 'tests', 'exthost', 'index');
/**
 * One workbench launch: a fresh workspace and profile, `settings` added to the user settings,
 * the mocha suite `<suite>.test.js`; its output goes to `log` (the pool's buffer); `installs`: more
 * extension folders installed beside Retrace (`installFolder`). Resolves to the runner's exit code.
 */
async function launch(suite, settings, extraEnv, log, open = undefined, installs = []) {
  const { work, userDataDir, extensionsDir, workspace } = scenario(`exthost-${suite}`);
  // `open(work, workspace)`: the workbench URL's target (default: the sample folder).
  const target = open === undefined ? `folder=${encodeURIComponent(workspace)}` : open(work, workspace);
  writeUserSettings(userDataDir, settings);
  for (const folder of installs) installFolder(folder, extensionsDir);
  const server = await startCodeServer({
    userDataDir, extensionsDir, workspace, logFile: path.join(work, 'code-server.log'),
    env: { RETRACE_FAKE_MODEL: 'e2e', RETRACE_LOG_CONSOLE: '1', RETRACE_EXTHOST_SUITE: suite, ...extraEnv },
  });
  log(`[${suite}] code-server up at ${server.url}`);
  const browser = await launchBrowser();
  const page = await browser.newPage(PAGE_DEFAULTS);
  let exitCode = 1;
  try {
    let resolveExit;
    const done = new Promise(resolve => { resolveExit = resolve; });
    await page.exposeFunction('codeAutomationExit', code => resolveExit(code));
    await page.exposeFunction('codeAutomationLog', (type, args) => {
      const line = util.format(...args).replace(/^%c\s*\S+\s*color: #\w+\s*/, '');
      if (!/ENOTFOUND|Failed to load resource|socket|connection token/.test(line)) log(line);
    });
    const authority = new URL(server.url).host;
    const remote = p => `vscode-remote://${authority}${p}`;
    const payload = [
      ['extensionDevelopmentPath', remote(root)],
      ['extensionTestsPath', remote(testsEntry)],
    ];
    await page.goto(`${server.url}/?${target}&payload=${encodeURIComponent(JSON.stringify(payload))}`);
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

// Longest first (measured: recovery takes about as long as two others together), so the two
// workbenches of the pool finish close together.
const suites = {
  // run_command asks, so a turn can be caught waiting while its server is killed.
  recovery: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'ask' },
  retrace: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  fileHistory: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  // A real S3 server (rclone) holding a session another machine pushed: "Open a remote session…".
  remote: remoteSuite,
  background: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  serverDown: { 'retrace.pythonPath': '/nonexistent/retrace-test/python' },
  // Remote-style host (code-server), a non-disk folder refused, `retrace` in the integrated terminal.
  reach: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
  // A two-folder .code-workspace: the sample folder first, then `api`.
  multiroot: multirootSuite,
  // The vscode-lm provider: a test language model (tests/extension/exthost/lm-provider, proposed
  // `chatProvider` API) answers; no fake model, no key.
  vscodeLm: async () => ({
    settings: {
      'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto',
      'retrace.model.provider': 'vscode-lm', 'retrace.model.id': 'retrace-test-model', 'retrace.model.vscodeLm.vendor': 'retrace-test',
    },
    env: { RETRACE_FAKE_MODEL: '' },
    installs: [path.join(root, 'tests', 'extension', 'exthost', 'lm-provider')],
    stop: () => {},
  }),
};

/**
 * An unpacked extension folder installed as code-server would record it (the workbench URL's
 * `payload` takes one extensionDevelopmentPath only: its entries become a map).
 */
function installFolder(folder, extensionsDir) {
  const manifest = JSON.parse(fs.readFileSync(path.join(folder, 'package.json'), 'utf8'));
  const id = `${manifest.publisher}.${manifest.name}`;
  const relativeLocation = `${id}-${manifest.version}`;
  const at = path.join(extensionsDir, relativeLocation);
  fs.cpSync(folder, at, { recursive: true });
  const record = path.join(extensionsDir, 'extensions.json');
  const entries = fs.existsSync(record) ? JSON.parse(fs.readFileSync(record, 'utf8')) : [];
  entries.push({
    identifier: { id }, version: manifest.version, relativeLocation,
    location: { $mid: 1, fsPath: at, external: pathToFileURL(at).href, path: at, scheme: 'file' },
    metadata: { installedTimestamp: Date.now(), source: 'vsix' },
  });
  fs.writeFileSync(record, JSON.stringify(entries));
}

/** The multiroot suite: its second folder, its .code-workspace and its scripted model. */
async function multirootSuite() {
  return {
    settings: { 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' },
    env: { RETRACE_FAKE_MODEL: path.join(root, 'tests', 'extension', 'exthost', 'multiroot-model.json') },
    stop: () => {},
    open: (work, workspace) => {
      const second = path.join(work, 'api');
      fs.mkdirSync(second, { recursive: true });
      fs.writeFileSync(path.join(second, 'main.go'), 'package main\n');
      const file = path.join(work, 'multi.code-workspace');
      fs.writeFileSync(file, JSON.stringify({ folders: [{ path: path.relative(work, workspace) }, { path: 'api' }] }));
      return `workspace=${encodeURIComponent(file)}`;
    },
  };
}

/** The remote suite's S3 server and seeded bucket; its settings, environment and clean-up. */
async function remoteSuite(log) {
  const { work } = scenario('exthost-remote-s3');
  const data = path.join(work, 's3data');
  fs.mkdirSync(path.join(data, 'bucket'), { recursive: true });
  const port = await new Promise(resolve => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => { const p = probe.address().port; probe.close(() => resolve(p)); });
  });
  const creds = { AWS_ACCESS_KEY_ID: 'retrace-e2e-access', AWS_SECRET_ACCESS_KEY: 'retrace-e2e-secret-0123456789' };
  const rclone = spawn(path.join(root, '.venv/bin/rclone'), ['serve', 's3', '--addr', `127.0.0.1:${port}`, '--auth-key', `${creds.AWS_ACCESS_KEY_ID},${creds.AWS_SECRET_ACCESS_KEY}`, data], { stdio: 'ignore', env: { ...process.env, RCLONE_CONFIG: '/dev/null' } });
  const endpoint = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    const up = await new Promise(resolve => { const s = net.connect(port, '127.0.0.1', () => { s.end(); resolve(true); }).on('error', () => resolve(false)); });
    if (up) break;
    await new Promise(r => setTimeout(r, 100));
  }
  const seeded = JSON.parse(execFileSync(path.join(root, '.venv/bin/python'), [path.join(root, 'tests/e2e/seed_remote.py'), path.join(work, 'other-machine'), endpoint, 's3://bucket/team'], { encoding: 'utf8', env: { ...process.env, ...creds } }));
  log(`[remote] rclone at ${endpoint}; seeded session ${seeded.sessionId}`);
  return {
    settings: { 'retrace.remote.url': 's3://bucket/team', 'retrace.remote.endpoint': endpoint, 'retrace.remote.workspaceName': 'proj' },
    env: { ...creds, RETRACE_E2E_REMOTE_SESSION: seeded.sessionId },
    stop: () => rclone.kill('SIGKILL'),
  };
}
// RETRACE_EXTHOST_ONLY=recovery,serverDown runs only those launches. The launches are
// independent (each its own scenario folder, code-server port and browser): RETRACE_E2E_JOBS at a
// time (see pool.mjs), alone (`npm run test:exthost`) or in one pool with the browser scenarios
// (`run-workbenches.mjs`, what CI runs).
export function exthostTasks() {
  if (!fs.existsSync(`${testsEntry}.js`)) throw new Error(`${testsEntry}.js missing: run npm run build:tests`);
  const only = (process.env.RETRACE_EXTHOST_ONLY || '').split(',').filter(Boolean);
  const t0 = Date.now();
  return Object.entries(suites).filter(([suite]) => only.length === 0 || only.includes(suite)).map(([suite, settings]) => ({
    name: `exthost-${suite}`,
    run: async write => {
      const log = (...a) => write(`[${((Date.now() - t0) / 1000).toFixed(1)}s] ${util.format(...a)}\n`);
      if (typeof settings !== 'function') return (await launch(suite, settings, {}, log)) === 0;
      const prepared = await settings(log);
      try {
        return (await launch(suite, prepared.settings, prepared.env, log, prepared.open, prepared.installs)) === 0;
      } finally {
        prepared.stop();
      }
    },
  }));
}

if (isMain(import.meta.url)) {
  const failed = await runPool(exthostTasks(), jobsFromEnv());
  process.exit(failed.length === 0 ? 0 : 1);
}
