import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { judgeSetting, probePython, type PythonProbe } from '../../../extension/src/client/serverEnv';
import { realEnvIo } from '../../../extension/src/client/serverEnvHost';
import { serverLaunch, spawnServer } from '../../../extension/src/client/serverProcess';

const repo = path.join(__dirname, '../../..');

suite('server interpreter probe (real processes)', function () {
    this.timeout(60_000);
    // The probe production runs on retrace.pythonPath and the managed env: real processes, real IO.
    const probe = (interpreter: string): Promise<PythonProbe> => probePython(realEnvIo(() => undefined), interpreter);
    const extensionVersion = (JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8')) as { version: string }).version;
    /** What the user is told about `interpreter` as retrace.pythonPath (undefined: usable). */
    const reason = (interpreter: string, r: PythonProbe): string | undefined => judgeSetting(interpreter, r, extensionVersion)?.detail;

    test('the repo venv can run the server', async () => {
        const python = path.join(repo, '.venv/bin/python');
        const r = await probe(python);
        assert.equal(r.kind, 'ran', JSON.stringify(r));
        assert.equal(r.kind === 'ran' ? r.retrace : undefined, extensionVersion, JSON.stringify(r));
        assert.equal(reason(python, r), undefined);
    });

    test('a missing interpreter says so', async () => {
        const r = await probe('/nonexistent/bin/python');
        assert.equal(r.kind, 'missing');
        assert.match(reason('/nonexistent/bin/python', r) ?? '', /does not exist/);
    });

    test('a Python without the server package names the missing module', async () => {
        const r = await probe('/usr/bin/python3');
        assert.equal(r.kind, 'ran', JSON.stringify(r));
        assert.equal(r.kind === 'ran' ? r.retrace : 'n/a', undefined);
        assert.match(reason('/usr/bin/python3', r) ?? '', /No module named 'retrace'/);
    });
});

suite('server key hand-off (real processes)', function () {
    this.timeout(60_000);
    const python = path.join(repo, '.venv/bin/python');
    // The server's own start-up code reads the key; the answers say what a tool command could see.
    const child = [
        'import os, sys',
        'from retrace import credentials',
        'credentials.secure_process_start()',
        'environ = open("/proc/self/environ", "rb").read().decode(errors="replace")',
        'print("held", credentials.get("ANTHROPIC_API_KEY") or "")',
        'print("environ-has-key", "sk-ant-handoff" in environ)',
        'print("env-vars", sorted(k for k in os.environ if "ANTHROPIC_API" in k or "_FD" in k))',
    ].join('\n');

    function run(env: NodeJS.ProcessEnv, apiKey: string | undefined): Promise<string> {
        return new Promise((resolve, reject) => {
            const proc = spawnServer(python, ['-c', child], { cwd: repo, env, apiKey });
            let out = '';
            proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
            proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
            proc.on('error', reject);
            proc.on('exit', () => resolve(out));
        });
    }

    test('the key from SecretStorage reaches the server through a pipe, not the environment', async () => {
        const key = `sk-ant-handoff-${Date.now()}`;
        const base = { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-handoff-from-shell' };
        const launch = serverLaunch(base, key);
        assert.equal(launch.env['ANTHROPIC_API_KEY'], undefined);
        assert.equal(launch.env['RETRACE_API_KEY_FD'], '3');
        assert.deepEqual(launch.handoffs, [key]);
        const out = await run(base, key);
        assert.match(out, new RegExp(`^held ${key}$`, 'm'), out);
        assert.match(out, /^environ-has-key False$/m, out);
        assert.match(out, /^env-vars \[\]$/m, out);
    });

    test('a key only in the editor environment is handed off the same way', async () => {
        const out = await run({ ...process.env, ANTHROPIC_API_KEY: 'sk-ant-handoff-shell' }, undefined);
        assert.match(out, /^held sk-ant-handoff-shell$/m, out);
        assert.match(out, /^environ-has-key False$/m, out);
    });

    test('remote credentials from SecretStorage reach the server on pipes; tool commands never see them', async () => {
        const secrets = { AWS_ACCESS_KEY_ID: 'AKIAHANDOFFTEST1', AWS_SECRET_ACCESS_KEY: 'secret-handoff-test', RETRACE_REMOTE_KEY: 'a2V5LWhhbmRvZmY=' };
        const env = { ...process.env };
        delete env['ANTHROPIC_API_KEY'];
        delete env['ANTHROPIC_AUTH_TOKEN'];
        const launch = serverLaunch(env, undefined, secrets);
        assert.equal(launch.env['RETRACE_AWS_ACCESS_KEY_ID_FD'], '3');
        assert.equal(launch.env['AWS_ACCESS_KEY_ID'], env['AWS_ACCESS_KEY_ID']);
        const script = [
            'from retrace import credentials',
            'credentials.secure_process_start()',
            'remote = credentials.remote_env()',
            'print("remote", remote.get("AWS_ACCESS_KEY_ID"), remote.get("AWS_SECRET_ACCESS_KEY"), remote.get("RETRACE_REMOTE_KEY"))',
            'child = credentials.child_env()',
            'print("child-sees", sorted(k for k, v in child.items() if "handoff" in v.lower() or k.endswith("_FD")))',
        ].join('\n');
        const out = await new Promise<string>((resolve, reject) => {
            const proc = spawnServer(python, ['-c', script], { cwd: repo, env, apiKey: undefined, remoteSecrets: secrets });
            let text = '';
            proc.stdout?.on('data', (d: Buffer) => (text += d.toString()));
            proc.stderr?.on('data', (d: Buffer) => (text += d.toString()));
            proc.on('error', reject);
            proc.on('exit', () => resolve(text));
        });
        assert.match(out, /^remote AKIAHANDOFFTEST1 secret-handoff-test a2V5LWhhbmRvZmY=$/m, out);
        assert.match(out, /^child-sees \[\]$/m, out);
    });

    test('a local endpoint’s key from SecretStorage goes on its own pipe, like the Anthropic key; never in the environment', async () => {
        const env: NodeJS.ProcessEnv = { ...process.env, OPENAI_API_KEY: 'sk-openai-from-shell' };
        delete env['ANTHROPIC_API_KEY'];
        delete env['ANTHROPIC_AUTH_TOKEN'];
        const launch = serverLaunch(env, 'sk-ant-x', {}, { OPENAI_API_KEY: 'sk-local-handoff' });
        assert.equal(launch.env['OPENAI_API_KEY'], undefined, 'the shell’s key leaves the environment too');
        assert.equal(launch.env['RETRACE_API_KEY_FD'], '3');
        assert.equal(launch.env['RETRACE_OPENAI_API_KEY_FD'], '4');
        assert.deepEqual(launch.handoffs, ['sk-ant-x', 'sk-local-handoff'], 'the stored key wins over the shell’s');
        // Only the shell has one: handed off the same way (the server holds it, tools never see it).
        const shellOnly = serverLaunch(env, undefined);
        assert.equal(shellOnly.env['OPENAI_API_KEY'], undefined);
        assert.deepEqual(shellOnly.handoffs, ['sk-openai-from-shell']);
        // A descriptor variable planted in the editor's environment is never passed on.
        const planted = serverLaunch({ ...env, OPENAI_API_KEY: '', RETRACE_OPENAI_API_KEY_FD: '0' }, undefined);
        assert.equal(planted.env['RETRACE_OPENAI_API_KEY_FD'], undefined);
        assert.deepEqual(planted.handoffs, []);
        // Through a real process: the named descriptor carries the key; the environment does not.
        const script = [
            'import os',
            'fd = int(os.environ["RETRACE_OPENAI_API_KEY_FD"])',
            'print("got", os.read(fd, 4096).decode())',
            'print("env-has", "sk-local-handoff" in open("/proc/self/environ", "rb").read().decode(errors="replace"))',
        ].join('\n');
        const out = await new Promise<string>((resolve, reject) => {
            const proc = spawnServer('/usr/bin/python3', ['-c', script], { cwd: repo, env, apiKey: undefined, modelSecrets: { OPENAI_API_KEY: 'sk-local-handoff' } });
            let text = '';
            proc.stdout?.on('data', (d: Buffer) => (text += d.toString()));
            proc.stderr?.on('data', (d: Buffer) => (text += d.toString()));
            proc.on('error', reject);
            proc.on('exit', () => resolve(text));
        });
        assert.match(out, /^got sk-local-handoff$/m, out);
        assert.match(out, /^env-has False$/m, out);
    });

    test('no key: no descriptor, nothing held', async () => {
        const env = { ...process.env };
        delete env['ANTHROPIC_API_KEY'];
        delete env['ANTHROPIC_AUTH_TOKEN'];
        assert.deepEqual(serverLaunch(env, '').handoffs, []);
        const out = await run(env, undefined);
        assert.match(out, /^held $/m, out);
    });
});
