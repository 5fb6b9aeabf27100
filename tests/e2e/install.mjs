// Clean-machine install, in the real browser, with the package registries blocked: the packaged
// platform .vsix installed with --install-extension into a fresh user-data and extensions folder,
// a fresh HOME, a plain PATH (no project venv, no pyenv), and NO retrace.pythonPath. The model is a
// fake Messages API this test starts on loopback, configured in *user* settings (retrace.baseUrl),
// key via ANTHROPIC_API_KEY.
//   0. Both packages (the one under test and its "update", update-package.mjs) exist first, built with the network.
//      Then the scenario runs again inside a new network namespace with only loopback up
//      (`unshare -n`, as root): PyPI, GitHub and every other host are unreachable. Where that is
//      not possible it says so and runs with the index variables below only.
//      The user's index variables point at a closed local port (UV_INDEX_URL, PIP_INDEX_URL,
//      UV_PYTHON_INSTALL_MIRROR): any download attempt fails at once.
//   1. The package holds what ships and nothing else (no tests, sources, .e2e, node_modules,
//      server source tree; wheel + lock + uv + bundled wheels + bundle.json present).
//   2. The first prompt builds the server env in global storage from the bundled wheels (the log
//      says no download; the bundled uv matched its pin), the server runs from
//      server-env/<version>-<lockhash>/ with -I, and a checkpoint appears.
//   3. "Update" to a newer build (offline too): the new env is used, the old one is gone, the
//      server reports the new version, and the conversation carries on.
// Usage: node tests/e2e/install.mjs [path/to/retrace.vsix] (npm run test:e2e packages first).
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  root, log, freshDir, scenario, runScenario, installVsix, newPage, openFolder, stopCodeServer, startFakeModel, serverPids, cmdline,
  waitFor, workbench, PYTHON, VSIX,
} from './harness.mjs';
import { buildUpdatePackage, manifestVersion, updateVersion } from './update-package.mjs';

const EXT_ID = 'retrace.retrace';
const CHILD = process.env.RETRACE_E2E_INSTALL_OFFLINE === 'child';
/** A port nothing listens on: the user's package index, as far as this test's user knows. */
const CLOSED = 'http://127.0.0.1:9';
/** Entries of a .vsix (a zip), read with the standard library of the repo's Python. */
function vsixEntries(file) {
  const out = execFileSync(PYTHON, ['-c', 'import sys, zipfile; print("\\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))', file], { encoding: 'utf8' });
  return out.split('\n').filter(Boolean);
}

/** `unshare -n` works here (root, util-linux, iproute2): the scenario can run with no network. */
function canIsolate() {
  const r = spawnSync('unshare', ['-n', '--', 'sh', '-c', 'ip link set lo up'], { stdio: 'ignore' });
  return r.status === 0;
}

const vsix1 = VSIX;
const updateDir = path.join(root, '.e2e', 'install-update');
const v1 = manifestVersion(vsix1);
const v2 = updateVersion(v1);
const vsix2 = path.join(updateDir, `retrace-${v2}.vsix`);
if (!CHILD) {
  // 0. Packages: the update is built now, while the network is there, unless the caller built it
  //    already (RETRACE_E2E_UPDATE_VSIX, scripts/test.sh: see update-package.mjs), then it is copied.
  freshDir(updateDir);
  const prebuilt = process.env.RETRACE_E2E_UPDATE_VSIX;
  if (prebuilt) {
    assert.equal(manifestVersion(prebuilt), v2, `RETRACE_E2E_UPDATE_VSIX (${prebuilt}) is not the update of ${vsix1}`);
    fs.copyFileSync(prebuilt, vsix2);
    log(`the update package built beside the tests: ${path.relative(root, prebuilt)}`);
  } else {
    buildUpdatePackage(vsix1, vsix2);
  }
  if (canIsolate()) {
    log('running the install scenario in a network namespace with only loopback (package registries unreachable)');
    const started = Date.now();
    const r = spawnSync('unshare', ['-n', '--', 'sh', '-c', 'ip link set lo up && exec "$@"', 'sh', process.execPath, fileURLToPath(import.meta.url), vsix1], {
      stdio: 'inherit',
      env: { ...process.env, RETRACE_E2E_INSTALL_OFFLINE: 'child' },
    });
    log(`offline install scenario: exit ${r.status} after ${((Date.now() - started) / 1000).toFixed(0)}s`);
    process.exit(r.status ?? 1);
  }
  log('NOTE: no network namespace here (unshare -n needs root): registries are blocked by the index variables only');
}
const sc = scenario('install', { shots: { dir: path.join(root, '.e2e', 'screenshots-install'), prefix: '' } });
const { work, userDataDir, extensionsDir, workspace, ws, shot } = sc;
const home = freshDir(path.join(work, 'home'));
const globalStorage = path.join(userDataDir, 'User', 'globalStorage', EXT_ID);
const envRoot = path.join(globalStorage, 'server-env');

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
  for (const want of [/^extension\/server\/requirements\.lock$/, /^extension\/server\/bundle\.json$/, /^extension\/server\/wheels\/pydantic_core-.+\.whl$/, /^extension\/server\/retrace_checkpoints-[\d.]+-py3-none-any\.whl$/, /^extension\/bin\/uv(\.exe)?$/,
    /^extension\/dist\/extension\.js$/, /^extension\/dist\/webview\/chat\.js$/, /^extension\/readme\.md$/i, /^extension\/LICENSE(\.txt)?$/i, /^extension\/changelog\.md$/i,
    /^extension\/extension\/media\/demo-workspace\/src\/app\.py$/]) {
    assert.ok(entries.some(e => want.test(e)), `the package lacks ${want}:\n${entries.join('\n')}`);
  }
  checkReadmeLinks(file, entries);
  log(`package contents ok (${entries.length} entries)`);
}

/** Retrace server processes serving this test's workspace, with their argument vectors. */
function serverProcesses() {
  return serverPids(workspace).map(pid => ({ pid, argv: cmdline(pid) }));
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

/**
 * A user's machine: fresh HOME, a plain PATH, the key in the environment, nothing of the repo's
 * (an undefined value removes the variable from code-server's environment).
 */
const userEnv = {
  ...Object.fromEntries(['RETRACE_FAKE_MODEL', 'VIRTUAL_ENV', 'PYTHONPATH', 'PYTHONHOME', 'PYENV_VERSION', 'UV_CACHE_DIR', 'UV_PYTHON_INSTALL_DIR'].map(k => [k, undefined])),
  HOME: home,
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  ANTHROPIC_API_KEY: 'test',
  // The user's package index and Python mirror: closed. The bundled wheels must need neither.
  UV_INDEX_URL: `${CLOSED}/simple`,
  PIP_INDEX_URL: `${CLOSED}/simple`,
  UV_PYTHON_INSTALL_MIRROR: CLOSED,
};

// 1. Packages: the one under test and its "update".
checkContents(vsix1);
checkContents(vsix2);
assert.equal(manifestVersion(vsix2), v2);
if (CHILD) {
  // The registries really are out of reach from here.
  const reached = await fetch('https://pypi.org/simple/', { signal: AbortSignal.timeout(10000) }).then(() => true, () => false);
  assert.equal(reached, false, 'PyPI must be unreachable in the offline install scenario');
  log('PyPI is unreachable from this scenario (network namespace)');
}

// The fake Messages API runs outside code-server: it survives the update.
const model = await startFakeModel('e2e');
log(`fake Messages API at ${model.url}`);

await runScenario(sc, {
  realInstall: true, // code-server's own install of the package: installing is what this tests
  // No retrace.pythonPath: the extension builds its own server environment.
  settings: { 'retrace.baseUrl': model.url, 'retrace.permissions.write': 'auto', 'retrace.permissions.command': 'auto', 'retrace.pythonPath': undefined },
  env: userEnv,
  onFailure: () => console.error(`--- Retrace log ---\n${retraceLog().slice(-6000)}`),
}, async ctx => {
  const started = Date.now();
  // 1. First use: the env is built, the prompt makes checkpoints.
  let { page, wb } = ctx;
  await wb.openRetrace();
  await wb.sendPrompt('Create hello.txt, annotate src/app.py and generate a file');
  await wb.chat().locator('.assistant', { hasText: 'Done: created hello.txt' }).waitFor({ timeout: 240000 });
  await wb.row('write_file').waitFor({ timeout: 30000 });
  await shot(page, 'first-use');
  assert.equal(fs.readFileSync(ws('hello.txt'), 'utf8'), 'Hello from Retrace\n');
  log(`first prompt answered after ${((Date.now() - started) / 1000).toFixed(0)}s (env build included)`);

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
  // Built from the bundled wheels with the pinned uv; nothing was downloaded.
  const log1 = retraceLog();
  assert.match(log1, /bundled uv .*: sha256 [0-9a-f]{64} matches the pin/);
  assert.match(log1, /installing from the wheels bundled with the extension .*: no download/);
  assert.doesNotMatch(log1, /downloading the locked packages|bundled wheels do not fit/);

  // 2. Update: install the newer build, reload, the new env serves.
  await page.close();
  await stopCodeServer(ctx.server);
  installVsix(vsix2, { userDataDir, extensionsDir });
  ctx.server = await ctx.startServer();
  ctx.page = page = await newPage(ctx.browser);
  wb = workbench(page, ws);
  await openFolder(page, ctx.server, workspace);
  await wb.openRetrace();
  await wb.sendPrompt('Update hello.txt');
  await wb.chat().locator('.assistant', { hasText: 'Updated hello.txt' }).waitFor({ timeout: 180000 });
  await shot(page, 'after-update');
  assert.equal(fs.readFileSync(ws('hello.txt'), 'utf8'), 'Hello again from Retrace\n');
  const dirs2 = envDirs();
  assert.equal(dirs2.length, 1, `only the new env is left: ${dirs2}`);
  assert.match(dirs2[0], new RegExp(`^${v2.replace(/\./g, '\\.')}-[0-9a-f]{12}$`));
  assert.ok(!fs.existsSync(path.join(envRoot, dirs1[0])), 'the old env is deleted');
  const procs2 = serverProcesses();
  assert.equal(procs2.length, 1, JSON.stringify(procs2));
  assert.equal(procs2[0].argv[0], path.join(envRoot, dirs2[0], 'bin', 'python'));
  await waitFor('the log names the new server version', () => new RegExp(`server retrace ${v2.replace(/\./g, '\\.')} running`).test(retraceLog()), 10000);
  log(`install + update passed in ${((Date.now() - started) / 1000).toFixed(0)}s`);
});
