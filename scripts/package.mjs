// Builds the .vsix for one VS Code target from a staging folder that holds only what ships:
//   package.json (no private/devDependencies/scripts) with package.nls.json and l10n/ (its strings
//   and the extension's), dist/ (minified bundles), extension/media,
//   README.md (the Marketplace README), LICENSE, CHANGELOG.md,
//   server/requirements.lock (hash-pinned, universal), server/requirements-<extra>.lock (the cloud
//   providers' extras, installed from the index when chosen), server/retrace_checkpoints-<version>-py3-none-any.whl,
//   bin/uv[.exe] (this target's uv, hash-pinned: scripts/fetch-uv.sh),
//   server/wheels/ (every locked dependency as a wheel for this target and each bundled CPython,
//   hash-checked against the lock: scripts/bundle_wheels.py), so the first use needs no index,
//   server/bundle.json (what is bundled, with the sha256 of uv and of the server wheel: the
//   extension checks uv's before it runs it). The universal package has no uv and no wheels.
// Then `vsce package --target <target>` there, with no bypass flag (--no-dependencies only: the
// bundle has none). Why per-platform packages with a bundled uv: see extension/src/client/serverEnv.ts.
//
// Usage: npm run package:platform -- --target win32-x64 [--out dist/retrace-win32-x64.vsix]
//        (npm run package: this machine's target)
// Environment (the arguments win):
//   RETRACE_PACKAGE_TARGET   VS Code target (linux-x64, linux-arm64, alpine-x64, alpine-arm64,
//                            darwin-x64, darwin-arm64, win32-x64, win32-arm64, or universal);
//                            default: this machine's
//   RETRACE_PACKAGE_PYTHONS  CPython versions to bundle wheels for (default 3.11,3.12,3.13,3.14)
//   RETRACE_PACKAGE_VERSION  version of the package and of the server wheel (default: package.json's);
//                            the install test builds an "update" with it
//   RETRACE_PACKAGE_OUT      output path (default: dist/retrace.vsix)
import * as esbuild from 'esbuild';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** `--target X` / `--out F` (also `--target=X`), over the environment. */
function argOf(name) {
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === `--${name}`) return argv[i + 1];
    if (argv[i].startsWith(`--${name}=`)) return argv[i].slice(name.length + 3);
  }
  return undefined;
}
const stage = path.join(root, 'dist', 'pkg');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const version = process.env.RETRACE_PACKAGE_VERSION || manifest.version;
const out = path.resolve(root, argOf('out') || process.env.RETRACE_PACKAGE_OUT || 'dist/retrace.vsix');
// One version string for the extension (semver) and the wheel (PEP 440) that both keep verbatim,
// since the initialize handshake compares them as strings.
if (!/^\d+\.\d+\.\d+$/.test(version)) {
  console.error(`[package] version ${version} must be MAJOR.MINOR.PATCH (the same string for the extension and the Python wheel)`);
  process.exit(2);
}

function hostTarget() {
  const os_ = { linux: 'linux', darwin: 'darwin', win32: 'win32' }[process.platform];
  const arch = { x64: 'x64', arm64: 'arm64' }[process.arch];
  if (os_ === undefined || arch === undefined) {
    throw new Error(`no VS Code target for ${process.platform}-${process.arch}; set RETRACE_PACKAGE_TARGET`);
  }
  return `${os_}-${arch}`;
}
const target = argOf('target') || process.env.RETRACE_PACKAGE_TARGET || hostTarget();
const pythons = process.env.RETRACE_PACKAGE_PYTHONS || '3.11,3.12,3.13,3.14';

function log(msg) {
  console.log(`[package] ${msg}`);
}

function copy(from, to) {
  fs.mkdirSync(path.dirname(path.join(stage, to)), { recursive: true });
  fs.cpSync(path.join(root, from), path.join(stage, to), { recursive: true });
}

function fetchUv(t) {
  return execFileSync('bash', [path.join(root, 'scripts/fetch-uv.sh'), t], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

/** The server as a pure-Python wheel, built from a copy of the sources (nothing written in the tree). */
function buildWheel(uv) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'retrace-wheel-'));
  try {
    for (const item of ['pyproject.toml', 'server/README.md', 'LICENSE']) {
      fs.cpSync(path.join(root, item), path.join(tmp, item));
    }
    fs.cpSync(path.join(root, 'server', 'retrace'), path.join(tmp, 'server', 'retrace'), {
      recursive: true,
      filter: src => !src.includes('__pycache__') && !src.endsWith('.pyc'),
    });
    const pyproject = path.join(tmp, 'pyproject.toml');
    const text = fs.readFileSync(pyproject, 'utf8');
    const bumped = text.replace(/^version = "[^"]*"/m, `version = "${version}"`);
    if (!bumped.includes(`version = "${version}"`)) {
      throw new Error('pyproject.toml has no [project] version line to set');
    }
    fs.writeFileSync(pyproject, bumped);
    // The server's own version constant (what `initialize` and `retrace --version` report) is
    // the same string: a package built at another version must say so when it runs.
    const init = path.join(tmp, 'server', 'retrace', '__init__.py');
    const initText = fs.readFileSync(init, 'utf8');
    const initBumped = initText.replace(/^__version__ = "[^"]*"/m, `__version__ = "${version}"`);
    if (!initBumped.includes(`__version__ = "${version}"`)) {
      throw new Error('server/retrace/__init__.py has no __version__ line to set');
    }
    fs.writeFileSync(init, initBumped);
    execFileSync(uv, ['build', '--wheel', '--no-config', '--quiet', '--out-dir', path.join(tmp, 'wheelhouse'), tmp], {
      cwd: tmp,
      stdio: 'inherit',
      env: { ...process.env, UV_NO_PROGRESS: '1' },
    });
    const wheels = fs.readdirSync(path.join(tmp, 'wheelhouse')).filter(f => f.endsWith('-py3-none-any.whl'));
    if (wheels.length !== 1) {
      throw new Error(`expected one pure-Python wheel, got ${wheels.join(', ') || 'none'}`);
    }
    fs.mkdirSync(path.join(stage, 'server'), { recursive: true });
    fs.copyFileSync(path.join(tmp, 'wheelhouse', wheels[0]), path.join(stage, 'server', wheels[0]));
    return wheels[0];
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

function stagedManifest() {
  const m = { ...manifest, version };
  for (const key of ['private', 'devDependencies', 'scripts', 'dependencies']) {
    delete m[key];
  }
  if (target === 'universal') {
    // No bundled uv: the extension builds the env with a found Python (vsce refuses a pattern matching nothing).
    m.files = m.files.filter(f => !f.startsWith('bin/') && !f.startsWith('server/wheels/'));
  }
  return m;
}

function sha256(file) {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/** The locked wheels for this target, hash-checked against the lock (scripts/bundle_wheels.py). */
function bundleWheels(uvHost) {
  const venvPython = path.join(root, '.venv', 'bin', 'python');
  const py = fs.existsSync(venvPython) ? venvPython : 'python3';
  const dir = path.join(stage, 'server', 'wheels');
  // --uv: then prove the set complete for every bundled Python (an offline dry-run install for the target).
  // --cache: a set proven complete is kept (dist/wheels-cache/<target>) and taken again by the next
  // build of the same lock, target and Pythons instead of running pip again (the install test's
  // update package is the second build of every CI run).
  const cache = path.join(root, 'dist', 'wheels-cache', target);
  execFileSync(py, [path.join(root, 'scripts/bundle_wheels.py'), '--target', target, '--out', dir, '--pythons', pythons, '--uv', uvHost, '--cache', cache], { cwd: root, stdio: 'inherit' });
  return JSON.parse(fs.readFileSync(path.join(dir, 'bundle-wheels.json'), 'utf8'));
}

async function main() {
  log(`target ${target}, version ${version} → ${path.relative(root, out)}`);
  fs.rmSync(stage, { recursive: true, force: true });
  fs.mkdirSync(stage, { recursive: true });
  const common = { bundle: true, minify: true, sourcemap: false, logLevel: 'warning', absWorkingDir: root, legalComments: 'none', mainFields: ['module', 'main'] };
  await Promise.all([
    esbuild.build({ ...common, entryPoints: ['extension/src/extension.ts'], outfile: path.join(stage, 'dist/extension.js'), platform: 'node', format: 'cjs', target: 'node20', external: ['vscode'] }),
    esbuild.build({ ...common, entryPoints: ['extension/src/webview/chat.ts'], outfile: path.join(stage, 'dist/webview/chat.js'), platform: 'browser', format: 'iife', target: 'es2022' }),
    esbuild.build({ ...common, entryPoints: ['extension/src/webview/health.ts'], outfile: path.join(stage, 'dist/webview/health.js'), platform: 'browser', format: 'iife', target: 'es2022' }),
  ]);
  copy('extension/media', 'extension/media');
  const marketplaceReadme = path.join(root, 'extension/marketplace/README.md');
  copy(fs.existsSync(marketplaceReadme) ? 'extension/marketplace/README.md' : 'README.md', 'README.md');
  copy('LICENSE', 'LICENSE');
  copy('package.nls.json', 'package.nls.json');
  copy('l10n', 'l10n');
  copy('CHANGELOG.md', 'CHANGELOG.md');
  copy('server/requirements.lock', 'server/requirements.lock');
  // The cloud providers' extras, installed from the index when retrace.model.provider needs them
  // (serverEnvExtras.ts); not bundled as wheels: those providers are reached over the network anyway.
  for (const lock of fs.readdirSync(path.join(root, 'server')).filter(n => /^requirements-[a-z]+\.lock$/.test(n))) {
    copy(`server/${lock}`, `server/${lock}`);
  }
  const uvHost = fetchUv(hostTarget());
  const wheel = buildWheel(uvHost);
  log(`server wheel ${wheel}`);
  const bundle = { target, server: { file: `server/${wheel}`, sha256: sha256(path.join(stage, 'server', wheel)) }, uv: null, wheels: null };
  if (target !== 'universal') {
    const uv = fetchUv(target);
    const name = target.startsWith('win32-') ? 'uv.exe' : 'uv';
    fs.mkdirSync(path.join(stage, 'bin'), { recursive: true });
    fs.copyFileSync(uv, path.join(stage, 'bin', name));
    fs.chmodSync(path.join(stage, 'bin', name), 0o755);
    bundle.uv = { file: `bin/${name}`, sha256: sha256(path.join(stage, 'bin', name)) };
    const wheels = bundleWheels(uvHost);
    bundle.wheels = { dir: 'server/wheels', pythons: wheels.pythons, count: Object.keys(wheels.files).length };
    log(`bundled ${bundle.wheels.count} wheels for CPython ${wheels.pythons.join(', ')}`);
  }
  fs.writeFileSync(path.join(stage, 'server', 'bundle.json'), `${JSON.stringify(bundle, null, 2)}\n`);
  fs.writeFileSync(path.join(stage, 'package.json'), `${JSON.stringify(stagedManifest(), null, 2)}\n`);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  const vsce = path.join(root, 'node_modules/.bin/vsce');
  // The Marketplace README's relative links point into extension/marketplace/ of the repository
  // (vsce rewrites them to absolute URLs; by default it would point at the repository root).
  const repo = manifest.repository.url.replace(/\.git$/, '');
  const args = ['package', '--no-dependencies', '--out', out,
    '--baseContentUrl', `${repo}/blob/HEAD/extension/marketplace`, '--baseImagesUrl', `${repo}/raw/HEAD/extension/marketplace`];
  if (target !== 'universal') {
    args.push('--target', target);
  }
  execFileSync(vsce, args, { cwd: stage, stdio: 'inherit' });
  log(`wrote ${path.relative(root, out)} (${(fs.statSync(out).size / 1e6).toFixed(1)} MB)`);
}

main().catch(err => {
  console.error(`[package] ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
