// Clean-machine install, in the real browser: the packaged .vsix installed with
// --install-extension into a fresh user-data and extensions folder, a fresh HOME, a plain PATH (no
// project venv, no pyenv), and NO retrace.pythonPath. The model is a fake Messages API this test
// starts, configured in *user* settings (retrace.baseUrl), key via ANTHROPIC_API_KEY.
//   1. The package holds what ships and nothing else (no tests, sources, .e2e, node_modules,
//      server source tree; wheel + lock + uv present).
//   2. The first prompt builds the server env in global storage (downloads the locked set), the
//      server runs from server-env/<version>-<lockhash>/ with -I, and a checkpoint appears.
//   3. "Update" to a newer build: the new env is used, the old one is gone, the server reports
//      the new version, and the conversation carries on.
// Usage: node tests/e2e/install.mjs [path/to/retrace.vsix] (npm run test:e2e packages first).
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  root, log, freshDir, copyWorkspace, writeUserSettings, installVsix, freePort, launchBrowser, waitFor, workbench, CODE_SERVER, PYTHON,
} from './harness.mjs';

const EXT_ID = 'retrace.retrace';
const vsix1 = path.resolve(process.argv[2] || path.join(root, 'dist', 'retrace.vsix'));
const work = freshDir(path.join(root, '.e2e', 'install'));
const userDataDir = freshDir(path.join(work, 'user-data'));
const extensionsDir = freshDir(path.join(work, 'extensions'));
const home = freshDir(path.join(work, 'home'));
const workspace = copyWorkspace(path.join(work, 'workspace'));
const globalStorage = path.join(userDataDir, 'User', 'globalStorage', EXT_ID);
const envRoot = path.join(globalStorage, 'server-env');
const shots = freshDir(path.join(root, '.e2e', 'screenshots-install'));
const ws = rel => path.join(workspace, rel);

/** Entries of a .vsix (a zip), read with the standard library of the repo's Python. */
function vsixEntries(file) {
  const out = execFileSync(PYTHON, ['-c', 'import sys, zipfile; print("\\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))', file], { encoding: 'utf8' });
  return out.split('\n').filter(Boolean);
}

function manifestVersion(file) {
  const out = execFileSync(PYTHON, ['-c', 'import sys, zipfile, json; print(json.loads(zipfile.ZipFile(sys.argv[1]).read("extension/package.json"))["version"])', file], { encoding: 'utf8' });
  return out.trim();
}

/** Every image and relative link of the packaged README points at a file the repository has. */
function checkReadmeLinks(file, entries) {
  const name = entries.find(e => /^extension\/readme\.md$/i.test(e));
  const readme = execFileSync(PYTHON, ['-c', 'import sys, zipfile; sys.stdout.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]).decode())', file, name], { encoding: 'utf8' });
  const repo = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).repository.url.replace(/\.git$/, '');
  const links = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map(m => m[1]).filter(u => u.startsWith(repo));
  assert.ok(links.some(u => u.endsWith('.png')), 'the README shows screenshots');
  for (const url of links) {
    const rel = url.slice(repo.length).replace(/^\/(raw|blob)\/HEAD\//, '').split('#')[0];
    assert.ok(fs.existsSync(path.join(root, rel)), `README link ${url} names ${rel}, which the repository does not have`);
  }
}

function checkContents(file) {
  const entries = vsixEntries(file);
  // The demo's sample project (Try the Demo copies it) is the only Python source that ships.
  const demo = 'extension/extension/media/demo-workspace/';
  const bad = entries.filter(e =>
    /(^|\/)(tests?|\.e2e|node_modules|\.venv|\.tools|out|bench|scripts|shared-schema)\//.test(e) ||
    /\.(ts|map|pyc)$/.test(e) || (e.endsWith('.py') && !e.startsWith(demo)) ||
    e.startsWith('extension/server/retrace/') ||
    e.startsWith('extension/extension/src/'));
  assert.deepEqual(bad, [], `the package must not ship these:\n${bad.join('\n')}`);
  for (const want of [/^extension\/server\/requirements\.lock$/, /^extension\/server\/retrace-[\d.]+-py3-none-any\.whl$/, /^extension\/bin\/uv(\.exe)?$/,
    /^extension\/dist\/extension\.js$/, /^extension\/dist\/webview\/chat\.js$/, /^extension\/readme\.md$/i, /^extension\/LICENSE(\.txt)?$/i, /^extension\/changelog\.md$/i,
    /^extension\/extension\/media\/demo-workspace\/src\/app\.py$/]) {
    assert.ok(entries.some(e => want.test(e)), `the package lacks ${want}:\n${entries.join('\n')}`);
  }
  checkReadmeLinks(file, entries);
  log(`package contents ok (${entries.length} entries)`);
}

/** Retrace server processes (`-m retrace serve`) serving this test's workspace (other tests may run servers too). */
function serverProcesses() {
  const out = [];
  const mine = fs.realpathSync(workspace);
  for (const pid of fs.readdirSync('/proc').filter(p => /^\d+$/.test(p))) {
    let argv;
    let cwd;
    try {
      argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      cwd = fs.realpathSync(`/proc/${pid}/cwd`);
    } catch { continue; }
    const i = argv.indexOf('-m');
    if (i >= 0 && argv[i + 1] === 'retrace' && argv[i + 2] === 'serve' && cwd === mine) out.push({ pid: Number(pid), argv });
  }
  return out;
}

function envDirs() {
  return fs.existsSync(envRoot) ? fs.readdirSync(envRoot).sort() : [];
}

function retraceLog() {
  const logs = path.join(userDataDir, 'logs');
  const found = [];
  const walk = dir => {
    for (const e of fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/Retrace\.log$/.test(e.name) || (p.includes(EXT_ID) && e.name.endsWith('.log'))) found.push(p);
    }
  };
  walk(logs);
  return found.map(f => fs.readFileSync(f, 'utf8')).join('\n');
}

/** The fake Messages API (deterministic scenario `e2e`), outside code-server: it survives the update. */
async function startFakeModel() {
  const proc = spawn(PYTHON, ['-m', 'retrace.offline', '--scenario', 'e2e'], { stdio: ['ignore', 'pipe', 'inherit'] });
  process.on('exit', () => proc.kill());
  const url = await new Promise((resolve, reject) => {
    let buf = '';
    proc.stdout.on('data', d => {
      buf += d.toString();
      if (buf.includes('\n')) resolve(buf.split('\n')[0].trim());
    });
    proc.on('exit', code => reject(new Error(`fake model exited (${code})`)));
  });
  return { url, proc };
}

/** A user's machine: fresh HOME, a plain PATH, the key in the environment, nothing of the repo's. */
function userEnv() {
  const env = { ...process.env };
  for (const k of ['ANTHROPIC_BASE_URL', 'ANTHROPIC_AUTH_TOKEN', 'RETRACE_FAKE_MODEL', 'VIRTUAL_ENV', 'PYTHONPATH', 'PYTHONHOME', 'PYENV_VERSION', 'UV_CACHE_DIR', 'UV_PYTHON_INSTALL_DIR']) delete env[k];
  return {
    ...env,
    HOME: home,
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    ANTHROPIC_API_KEY: 'test',
    XDG_CONFIG_HOME: path.join(work, 'xdg-config'),
    XDG_DATA_HOME: path.join(work, 'xdg-data'),
    XDG_CACHE_HOME: path.join(work, 'xdg-cache'),
  };
}

async function startCodeServer(tag) {
  const port = await freePort();
  const logFile = path.join(work, `code-server-${tag}.log`);
  const args = ['--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
    '--disable-workspace-trust', '--disable-getting-started-override', '--user-data-dir', userDataDir, '--extensions-dir', extensionsDir, workspace];
  const proc = spawn(CODE_SERVER, args, { stdio: ['ignore', fs.openSync(logFile, 'w'), fs.openSync(logFile, 'a')], detached: true, env: userEnv() });
  const stop = () => { try { process.kill(-proc.pid, 'SIGTERM'); } catch { /* gone */ } };
  process.on('exit', stop);
  const url = `http://127.0.0.1:${port}`;
  await waitFor('code-server /healthz', async () => proc.exitCode === null && (await fetch(`${url}/healthz`).catch(() => ({ ok: false }))).ok, 60000, 200);
  return { url, proc, stop };
}

async function stopCodeServer(server) {
  server.stop();
  await waitFor('code-server and its children to exit', () => serverProcesses().length === 0 && server.proc.exitCode !== null, 30000, 200).catch(() => {
    try { process.kill(-server.proc.pid, 'SIGKILL'); } catch { /* gone */ }
  });
}

function bump(version) {
  const [a, b, c] = version.split('.').map(Number);
  return `${a}.${b}.${c + 1}`;
}

let failed = false;
let browser;
let server;
const t0 = Date.now();
try {
  // 0. Packages: the one under test and its "update".
  checkContents(vsix1);
  const v1 = manifestVersion(vsix1);
  const v2 = bump(v1);
  const vsix2 = path.join(work, `retrace-${v2}.vsix`);
  execFileSync('node', [path.join(root, 'scripts/package.mjs')], { cwd: root, stdio: 'inherit', env: { ...process.env, RETRACE_PACKAGE_VERSION: v2, RETRACE_PACKAGE_OUT: vsix2 } });
  checkContents(vsix2);
  assert.equal(manifestVersion(vsix2), v2);

  const model = await startFakeModel();
  log(`fake Messages API at ${model.url}`);
  installVsix(vsix1, { userDataDir, extensionsDir });
  writeUserSettings(userDataDir, { 'retrace.baseUrl': model.url, 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto' });
  const settingsFile = path.join(userDataDir, 'User', 'settings.json');
  const settings = JSON.parse(fs.readFileSync(settingsFile, 'utf8'));
  delete settings['retrace.pythonPath'];
  fs.writeFileSync(settingsFile, JSON.stringify(settings, null, 2));

  // 1. First use: the env is built, the prompt makes checkpoints.
  server = await startCodeServer('v1');
  browser = await launchBrowser();
  let page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  let wb = workbench(page, ws);
  await page.goto(`${server.url}/?folder=${encodeURIComponent(workspace)}`);
  const icon = () => page.locator('.activitybar [aria-label^="Retrace"]').first();
  await icon().waitFor({ timeout: 60000 });
  await icon().click();
  await wb.sidebar().waitFor();
  await wb.sendPrompt('Create hello.txt, annotate src/app.py and generate a file');
  await wb.chat().locator('.assistant', { hasText: 'Done: created hello.txt' }).waitFor({ timeout: 240000 });
  await wb.row('write_file').waitFor({ timeout: 30000 });
  await page.screenshot({ path: path.join(shots, '01-first-use.png') });
  assert.equal(fs.readFileSync(ws('hello.txt'), 'utf8'), 'Hello from Retrace\n');
  log(`first prompt answered after ${((Date.now() - t0) / 1000).toFixed(0)}s (env build included)`);

  const dirs1 = envDirs();
  assert.equal(dirs1.length, 1, `one env: ${dirs1}`);
  assert.match(dirs1[0], new RegExp(`^${v1.replace(/\./g, '\\.')}-[0-9a-f]{12}$`));
  const marker1 = JSON.parse(fs.readFileSync(path.join(envRoot, dirs1[0], 'retrace-env.json'), 'utf8'));
  assert.equal(marker1.version, v1);
  const procs1 = serverProcesses();
  assert.equal(procs1.length, 1, JSON.stringify(procs1));
  assert.equal(procs1[0].argv[0], path.join(envRoot, dirs1[0], 'bin', 'python'), 'the server runs from the managed env');
  assert.ok(procs1[0].argv.includes('-I'), `isolated mode: ${procs1[0].argv.join(' ')}`);
  assert.equal(fs.realpathSync(`/proc/${procs1[0].pid}/cwd`), fs.realpathSync(workspace), 'cwd stays the workspace');
  // Nothing written inside the extension folder.
  const extDir = fs.readdirSync(extensionsDir).find(d => d.startsWith(`${EXT_ID}-${v1}`));
  const written = [];
  const walk = dir => fs.readdirSync(dir, { withFileTypes: true }).forEach(e => {
    const p = path.join(dir, e.name);
    if (/^(build|__pycache__|.*\.egg-info|server-venv|\.venv)$/.test(e.name)) written.push(p);
    if (e.isDirectory()) walk(p);
  });
  walk(path.join(extensionsDir, extDir));
  assert.deepEqual(written, [], 'the extension folder is left as installed');
  assert.match(retraceLog(), new RegExp(`server retrace ${v1.replace(/\./g, '\\.')} running`));

  // 2. Update: install the newer build, reload, the new env serves.
  await page.close();
  await stopCodeServer(server);
  installVsix(vsix2, { userDataDir, extensionsDir });
  server = await startCodeServer('v2');
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  wb = workbench(page, ws);
  await page.goto(`${server.url}/?folder=${encodeURIComponent(workspace)}`);
  await icon().waitFor({ timeout: 60000 });
  await icon().click();
  await wb.sidebar().waitFor();
  await wb.sendPrompt('Update hello.txt');
  await wb.chat().locator('.assistant', { hasText: 'Updated hello.txt' }).waitFor({ timeout: 180000 });
  await page.screenshot({ path: path.join(shots, '02-after-update.png') });
  assert.equal(fs.readFileSync(ws('hello.txt'), 'utf8'), 'Hello again from Retrace\n');
  const dirs2 = envDirs();
  assert.equal(dirs2.length, 1, `only the new env is left: ${dirs2}`);
  assert.match(dirs2[0], new RegExp(`^${v2.replace(/\./g, '\\.')}-[0-9a-f]{12}$`));
  assert.ok(!fs.existsSync(path.join(envRoot, dirs1[0])), 'the old env is deleted');
  const procs2 = serverProcesses();
  assert.equal(procs2.length, 1, JSON.stringify(procs2));
  assert.equal(procs2[0].argv[0], path.join(envRoot, dirs2[0], 'bin', 'python'));
  await waitFor('the log names the new server version', () => new RegExp(`server retrace ${v2.replace(/\./g, '\\.')} running`).test(retraceLog()), 10000);
  log(`install + update passed in ${((Date.now() - t0) / 1000).toFixed(0)}s`);
} catch (err) {
  failed = true;
  console.error(err);
  try {
    const pages = browser ? browser.contexts().flatMap(c => c.pages()) : [];
    if (pages[0]) await pages[0].screenshot({ path: path.join(shots, 'failure.png') });
  } catch { /* best effort */ }
  console.error(`--- Retrace log ---\n${retraceLog().slice(-6000)}`);
} finally {
  await browser?.close().catch(() => {});
  if (server) await stopCodeServer(server);
}
process.exit(failed ? 1 : 0);
