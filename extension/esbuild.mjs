// Bundles the extension (Node, CommonJS, `vscode` external) and the webview scripts, chat and
// health (browser, IIFE). `--tests` also bundles the unit and extension-host test suites into out/.
import * as esbuild from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const withTests = process.argv.includes('--tests');
// ESM entry points first: jsonc-parser's UMD build hides its modules behind dynamic requires.
const common = { bundle: true, sourcemap: true, logLevel: 'warning', absWorkingDir: root, mainFields: ['module', 'main'] };

const builds = [
  esbuild.build({
    ...common,
    entryPoints: ['extension/src/extension.ts'],
    outfile: 'dist/extension.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['vscode'],
  }),
  esbuild.build({
    ...common,
    entryPoints: ['extension/src/webview/chat.ts'],
    outfile: 'dist/webview/chat.js',
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
  }),
  esbuild.build({
    ...common,
    entryPoints: ['extension/src/webview/health.ts'],
    outfile: 'dist/webview/health.js',
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
  }),
];

const testEntries = dir =>
  fs.existsSync(path.join(root, dir))
    ? fs.readdirSync(path.join(root, dir)).filter(f => f.endsWith('.ts')).map(f => `${dir}/${f}`)
    : [];

if (withTests) {
  builds.push(
    // Unit tests: every module bundled on its own; `vscode` comes from the stand-in at run time.
    esbuild.build({
      ...common,
      entryPoints: testEntries('tests/extension/unit'),
      outdir: 'out/tests/unit',
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      external: ['vscode', 'mocha'],
    }),
    // Extension-host suites run inside code-server against the real `vscode` API.
    esbuild.build({
      ...common,
      entryPoints: testEntries('tests/extension/exthost'),
      outdir: 'out/tests/exthost',
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      external: ['vscode', 'mocha'],
    }),
  );
}

await Promise.all(builds);
