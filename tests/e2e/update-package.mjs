// The install scenario's "update": the package under test built again with the next patch version
// (scripts/package.mjs with RETRACE_PACKAGE_VERSION), so the scenario can install it over the first.
// scripts/test.sh builds it in the background beside the Python tests (a core is partly idle there;
// ~30 CPU-seconds that the workbench pool, where both cores are busy, no longer spends) and hands
// its path to the scenario in RETRACE_E2E_UPDATE_VSIX; alone, the scenario builds it itself.
// Usage: node tests/e2e/update-package.mjs <out.vsix> [package.vsix]   (default: dist/retrace.vsix)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { root, PYTHON } from './harness.mjs';
import { isMain } from './pool.mjs';

/** The version in a .vsix's manifest (read with the standard library of the repo's Python). */
export function manifestVersion(file) {
  const out = execFileSync(PYTHON, ['-c', 'import sys, zipfile, json; print(json.loads(zipfile.ZipFile(sys.argv[1]).read("extension/package.json"))["version"])', file], { encoding: 'utf8' });
  return out.trim();
}

/** The update's version: the next patch version of `version`. */
export function updateVersion(version) {
  const [a, b, c] = version.split('.').map(Number);
  return `${a}.${b}.${c + 1}`;
}

/** Build the update of the package `vsix` at `out` (its folder created); `out`. */
export function buildUpdatePackage(vsix, out) {
  fs.mkdirSync(path.dirname(out), { recursive: true });
  execFileSync('node', [path.join(root, 'scripts/package.mjs')], {
    cwd: root, stdio: 'inherit', env: { ...process.env, RETRACE_PACKAGE_VERSION: updateVersion(manifestVersion(vsix)), RETRACE_PACKAGE_OUT: out },
  });
  return out;
}

if (isMain(import.meta.url)) {
  const [out, vsix = path.join(root, 'dist', 'retrace.vsix')] = process.argv.slice(2);
  if (out === undefined) {
    console.error('usage: node tests/e2e/update-package.mjs <out.vsix> [package.vsix]');
    process.exit(2);
  }
  buildUpdatePackage(path.resolve(vsix), path.resolve(out));
}
