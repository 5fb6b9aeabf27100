/**
 * `retrace` in the integrated terminal: the launcher text (table) and, with real processes, the
 * exact environment the extension's collection makes — the launcher directory first on PATH and
 * the window's folders named — running the repo's real `retrace log` from a subfolder: it lists
 * the folder's store (the one the server opens), not an empty one of the subfolder.
 */
import * as assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FOLDERS_ENV, launcher, shellQuote, terminalEnv, withoutTerminalEnv, type EnvChange } from '../../../extension/src/client/terminalModel';

const repo = path.join(__dirname, '../../..');
const PYTHON = path.join(repo, '.venv/bin/python');

/** What VS Code does with the collection's changes when it creates a terminal's process. */
function apply(env: NodeJS.ProcessEnv, changes: readonly EnvChange[]): NodeJS.ProcessEnv {
    const out = { ...env };
    for (const c of changes) {
        out[c.variable] = c.op === 'prepend' ? `${c.value}${out[c.variable] ?? ''}` : c.value;
    }
    return out;
}

function writeLauncher(binDir: string, python: string): string {
    const l = launcher(python, 'posix');
    assert.ok(l);
    fs.mkdirSync(binDir, { recursive: true });
    const file = path.join(binDir, l.name);
    fs.writeFileSync(file, l.text, { mode: l.mode });
    return file;
}

suite('terminal launcher and environment (pure)', () => {
    test('the POSIX launcher execs the interpreter isolated, every argument passed on', () => {
        const l = launcher('/home/u/.venv/bin/python', 'posix');
        assert.equal(l?.name, 'retrace');
        assert.equal(l?.mode, 0o755);
        assert.match(l?.text ?? '', /^#!\/bin\/sh\n/);
        assert.match(l?.text ?? '', /\nexec '\/home\/u\/\.venv\/bin\/python' -I -m retrace "\$@"\n$/);
    });

    test('the Windows launcher is a .cmd with % doubled', () => {
        const l = launcher('C:\\Users\\a%b\\python.exe', 'win32');
        assert.equal(l?.name, 'retrace.cmd');
        assert.match(l?.text ?? '', /\r\n"C:\\Users\\a%%b\\python\.exe" -I -m retrace %\*\r\n$/);
    });

    test('a path no script can hold gives no launcher', () => {
        for (const bad of ['', 'a\nb', 'a\rb', 'a\0b']) {
            assert.equal(launcher(bad, 'posix'), undefined, JSON.stringify(bad));
        }
        assert.equal(launcher('C:\\a"b\\python.exe', 'win32'), undefined);
    });

    test('shell quoting keeps quotes, dollars and backticks literal', () => {
        assert.equal(shellQuote(`it's`), `'it'\\''s'`);
        assert.equal(shellQuote('$HOME `x`'), `'$HOME \`x\`'`);
    });

    test('PATH gets the launcher directory first; the folders are named; a folder holding the delimiter is left out', () => {
        assert.deepEqual(terminalEnv('/s/bin', ['/w/a', '/w/b', '/w/c:d', ''], ':'), [
            { variable: 'PATH', op: 'prepend', value: '/s/bin:' },
            { variable: FOLDERS_ENV, op: 'replace', value: '/w/a:/w/b' },
        ]);
        assert.deepEqual(terminalEnv('C:\\s\\bin', ['C:\\w\\a'], ';')[0], { variable: 'PATH', op: 'prepend', value: 'C:\\s\\bin;' });
    });

    test("the server's environment never carries the terminal's folders", () => {
        assert.deepEqual(withoutTerminalEnv({ A: '1', [FOLDERS_ENV]: '/x' }), { A: '1' });
    });
});

suite('terminal launcher and environment (real processes)', function () {
    this.timeout(120_000);
    let tmp: string;

    suiteSetup(() => {
        tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'retrace-term-'));
    });
    suiteTeardown(() => fs.rmSync(tmp, { recursive: true, force: true }));

    test('a real sh runs the launcher of an interpreter whose path holds quotes, spaces and $', () => {
        const odd = path.join(tmp, `it's a $HOME "dir"`);
        fs.mkdirSync(odd);
        const fake = path.join(odd, 'python');
        fs.writeFileSync(fake, '#!/bin/sh\nfor a in "$@"; do printf "<%s>" "$a"; done\n', { mode: 0o755 });
        const file = writeLauncher(path.join(tmp, 'odd-bin'), fake);
        const out = execFileSync(file, ['log', 'two words', '$x'], { encoding: 'utf8' });
        assert.equal(out, '<-I><-m><retrace><log><two words><$x>');
    });

    test("`retrace log` from a subfolder, in the extension's terminal environment, lists the folder's store", () => {
        const ws = path.join(tmp, 'my project');
        fs.mkdirSync(path.join(ws, 'src', 'deep'), { recursive: true });
        fs.writeFileSync(path.join(ws, 'a.txt'), 'one\n');
        const base: NodeJS.ProcessEnv = { ...process.env, XDG_DATA_HOME: path.join(tmp, 'xdg-data'), RETRACE_NO_HOLDER: '1' };
        delete base['RETRACE_STORE'];
        delete base[FOLDERS_ENV];
        // PATH without the repo's venv: only the launcher can make `retrace` a command.
        base['PATH'] = (base['PATH'] ?? '').split(path.delimiter).filter(p => !p.startsWith(path.join(repo, '.venv'))).join(path.delimiter);
        const retrace = (args: string[], cwd: string, env: NodeJS.ProcessEnv) => spawnSync('sh', ['-c', `retrace ${args.join(' ')}`], { cwd, env, encoding: 'utf8' });
        execFileSync(PYTHON, ['-m', 'retrace', 'init', '--workspace', ws], { env: base });
        fs.writeFileSync(path.join(ws, 'a.txt'), 'two\n');
        execFileSync(PYTHON, ['-m', 'retrace', 'checkpoint', '--workspace', ws, '--label', 'from the editor'], { env: base });

        const binDir = path.join(tmp, 'storage with space', 'bin');
        const file = writeLauncher(binDir, PYTHON);
        const env = apply(base, terminalEnv(binDir, [ws, path.join(tmp, 'other')], path.delimiter));
        assert.equal(spawnSync('sh', ['-c', 'command -v retrace'], { env, encoding: 'utf8' }).stdout.trim(), file);

        const run = retrace(['log', '--json'], path.join(ws, 'src', 'deep'), env);
        assert.equal(run.status, 0, run.stderr);
        const rows = JSON.parse(run.stdout) as { label: string; head: boolean }[];
        assert.deepEqual(rows.map(r => r.label), ['baseline', 'from the editor']);
        assert.equal(rows[1]?.head, true);
        // Without the folders (a plain shell in the subfolder) the subfolder is a workspace of its own.
        const plain = retrace(['log'], path.join(ws, 'src'), { ...env, [FOLDERS_ENV]: '' });
        assert.notEqual(plain.status, 0);
    });
});
