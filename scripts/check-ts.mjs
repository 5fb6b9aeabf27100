// The TypeScript half of the static gate (scripts/check.sh): `tsc --noEmit` and ESLint
// (`--max-warnings=0` over extension/) on ONE TypeScript program. The type-aware lint rules need
// the program the compiler builds; run as two commands, each built its own (the two took 31
// CPU-seconds, 20 s; this 21 CPU-seconds, 14 s, measured 2026-12-07). Exit status 1 when the
// compiler or the linter reports anything, 2 when the tsconfig itself cannot be read.
// Usage: node scripts/check-ts.mjs
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import ts from 'typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const configPath = path.join(root, 'extension', 'tsconfig.json');
const formatHost = {
  getCanonicalFileName: f => f,
  getCurrentDirectory: () => root,
  getNewLine: () => '\n',
};

function readConfig() {
  let fatal;
  const parsed = ts.getParsedCommandLineOfConfigFile(configPath, {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: d => { fatal = d; },
  });
  const errors = fatal !== undefined ? [fatal] : (parsed?.errors ?? []);
  if (parsed === undefined || errors.length > 0) {
    console.error(ts.formatDiagnosticsWithColorAndContext(errors, formatHost));
    process.exit(2);
  }
  return parsed;
}

const parsed = readConfig();
const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options, projectReferences: parsed.projectReferences });
const diagnostics = ts.getPreEmitDiagnostics(program);
if (diagnostics.length > 0) console.error(ts.formatDiagnosticsWithColorAndContext(diagnostics, formatHost));
console.log('[check] eslint (on the compiler\'s program)');
// The program replaces the config's `project`: typescript-eslint then parses every file from it.
const eslint = new ESLint({
  cwd: root,
  overrideConfig: { languageOptions: { parserOptions: { project: false, programs: [program] } } },
});
const results = await eslint.lintFiles(['extension']);
const problems = results.reduce((n, r) => n + r.errorCount + r.warningCount, 0);
if (problems > 0) console.error((await eslint.loadFormatter('stylish')).format(results));
process.exit(diagnostics.length > 0 || problems > 0 ? 1 : 0);
