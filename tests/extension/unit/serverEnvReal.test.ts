/**
 * The managed-env build against the real uv (the one the package bundles, from
 * scripts/fetch-uv.sh) and real files: the failures a user meets — no Python and none can be
 * downloaded, downloads disabled, the package index unreachable, a broken env left behind — each
 * end as the one failure the user is shown, with no half-built env kept. Offline by construction:
 * every URL points at a closed local port.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ENV_MARKER, envDir, envRoot, fixIt, importFailure, venvPython, type EnvFailure, type EnvLayout } from '../../../extension/src/client/serverEnv';
import { ensureManagedEnv } from '../../../extension/src/client/serverEnvBuild';
import { installExtra } from '../../../extension/src/client/serverEnvExtras';
import { realEnvIo } from '../../../extension/src/client/serverEnvHost';

const repo = path.join(__dirname, '../../..');
const CLOSED = 'http://127.0.0.1:9';

suite('server environment: real uv, no network', function () {
    this.timeout(120_000);
    let tmp: string;
    let layout: EnvLayout;

    suiteSetup(() => {
        const uv = execFileSync('bash', [path.join(repo, 'scripts/fetch-uv.sh')], { cwd: repo, encoding: 'utf8' }).trim();
        tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'retrace-env-'));
        const ext = path.join(tmp, 'extension');
        fs.mkdirSync(path.join(ext, 'bin'), { recursive: true });
        fs.mkdirSync(path.join(ext, 'server'), { recursive: true });
        fs.copyFileSync(uv, path.join(ext, 'bin', 'uv'));
        fs.chmodSync(path.join(ext, 'bin', 'uv'), 0o755);
        fs.copyFileSync(path.join(repo, 'server/requirements.lock'), path.join(ext, 'server', 'requirements.lock'));
        for (const extra of ['bedrock', 'vertex']) {
            fs.copyFileSync(path.join(repo, `server/requirements-${extra}.lock`), path.join(ext, 'server', `requirements-${extra}.lock`));
        }
        fs.writeFileSync(path.join(ext, 'server', 'retrace-0.9.0-py3-none-any.whl'), 'not reached');
        // The manifest a platform package carries: the uv it runs is the pinned one.
        const uvSha = createHash('sha256').update(fs.readFileSync(path.join(ext, 'bin', 'uv'))).digest('hex');
        fs.writeFileSync(path.join(ext, 'server', 'bundle.json'), JSON.stringify({ target: 'linux-x64', uv: { file: 'bin/uv', sha256: uvSha }, wheels: null }));
        layout = { platform: process.platform, globalStorage: path.join(tmp, 'global'), extensionRoot: ext, version: '0.9.0', lockHash: 'feedbeef0000111122223333' };
    });

    suiteTeardown(() => fs.rmSync(tmp, { recursive: true, force: true }));

    function extensionFiles(): string[] {
        return fs.readdirSync(layout.extensionRoot, { recursive: true }).map(String).sort();
    }

    async function build(env: Record<string, string>): Promise<EnvFailure> {
        const before = extensionFiles();
        const base = { HOME: path.join(tmp, 'home'), UV_HTTP_RETRIES: '0', UV_PYTHON_INSTALL_MIRROR: CLOSED, UV_INDEX_URL: `${CLOSED}/simple`, ...env };
        const r = await ensureManagedEnv(realEnvIo(() => undefined), { layout, baseEnv: base, offeredPython: () => Promise.resolve(undefined), now: () => Date.now(), pid: process.pid });
        assert.ok('failure' in r, JSON.stringify(r));
        assert.deepEqual(extensionFiles(), before, 'nothing written in the extension folder');
        const left = fs.existsSync(envRoot(layout)) ? fs.readdirSync(envRoot(layout)) : [];
        assert.deepEqual(left, [], 'no half-built env is kept');
        return r.failure;
    }

    test('a bundled uv whose bytes differ from the pin is not run (real hashing)', async () => {
        const manifest = path.join(layout.extensionRoot, 'server', 'bundle.json');
        const good = fs.readFileSync(manifest, 'utf8');
        fs.writeFileSync(manifest, good.replace(/"sha256":"[0-9a-f]{64}"/, `"sha256":"${'0'.repeat(64)}"`));
        try {
            const f = await build({ PATH: '/usr/local/bin:/usr/bin:/bin' });
            assert.equal(f.kind, 'bundle-damaged', f.detail);
            assert.match(f.detail, /pinned 0{64}/);
        } finally {
            fs.writeFileSync(manifest, good);
        }
    });

    test('no Python on PATH and the Python download fails: no-python, naming the failed download and the mirror setting', async () => {
        const f = await build({ PATH: '/nonexistent' });
        assert.equal(f.kind, 'no-python', f.detail);
        assert.match(f.detail, /no Python >=3\.11 was found, and downloading one failed/);
        assert.equal(fixIt(f).button, 'Install Python 3.11+');
        assert.match(fixIt(f).message, /UV_PYTHON_INSTALL_MIRROR/);
    });

    test('no Python on PATH and downloads disabled: no-python, "Install Python 3.11+"', async () => {
        const f = await build({ PATH: '/nonexistent', UV_PYTHON_DOWNLOADS: 'never' });
        assert.equal(f.kind, 'no-python', f.detail);
        assert.equal(fixIt(f).button, 'Install Python 3.11+');
    });

    test('a Python is found but the package index is unreachable; a broken env left behind is replaced, not reused', async function () {
        try {
            execFileSync('python3', ['-c', 'import sys; sys.exit(sys.version_info < (3, 11))'], { env: { PATH: '/usr/local/bin:/usr/bin:/bin' } });
        } catch {
            this.skip(); // this machine has no system Python 3.11+ to find
        }
        const broken = envDir(layout);
        fs.mkdirSync(broken, { recursive: true });
        fs.writeFileSync(path.join(broken, ENV_MARKER), JSON.stringify({ version: '0.9.0', lockHash: layout.lockHash, python: '/usr/bin' }));
        const f = await build({ PATH: '/usr/local/bin:/usr/bin:/bin' });
        assert.equal(f.kind, 'offline', f.detail);
        assert.match(f.detail, /Connection refused|tcp connect/);
    });

    test('a cloud provider’s real lock through the real uv: accepted as written, and an unreachable index is "offline"', async function () {
        const PATH = '/usr/local/bin:/usr/bin:/bin';
        try {
            execFileSync('python3', ['-c', 'import sys; sys.exit(sys.version_info < (3, 11))'], { env: { PATH } });
        } catch {
            this.skip(); // this machine has no system Python 3.11+ to make a venv from
        }
        const uv = path.join(layout.extensionRoot, 'bin', 'uv');
        const home = path.join(tmp, 'home');
        const venv = path.join(tmp, 'provider-env');
        execFileSync(uv, ['venv', '--python', 'python3', venv], { env: { PATH, HOME: home, UV_PYTHON_DOWNLOADS: 'never', UV_CACHE_DIR: path.join(tmp, 'uv-cache') }, stdio: 'pipe' });
        const logs: string[] = [];
        const io = { ...realEnvIo(() => undefined), log: (m: string) => logs.push(m) };
        const base = { PATH, HOME: home, UV_HTTP_RETRIES: '0', UV_INDEX_URL: `${CLOSED}/simple` };
        for (const extra of ['bedrock', 'vertex']) {
            const f = await installExtra(io, { layout, baseEnv: base, uv }, venvPython(venv, process.platform), extra);
            assert.equal(f?.kind, 'offline', `${extra}: ${f?.detail ?? 'installed?'}\n${logs.join('\n')}`);
            assert.match(f.detail, /Connection refused|tcp connect/);
        }
        assert.ok(logs.some(l => /boto3==\d/.test(l)) && logs.some(l => /google-auth==\d/.test(l)), 'the log lists the locked sets');
    });
});

suite('a failed start explained: the server’s own import, real processes', function () {
    this.timeout(60_000);
    // The probe before a start reads package metadata only; after a failed start the import says why.
    test('an interpreter that cannot import the server gives the import’s last line; one that can gives nothing', async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retrace-import-'));
        const broken = path.join(dir, 'python');
        fs.writeFileSync(
            broken,
            [
                '#!/bin/sh',
                '[ "$1 $2 $3" = "-I -c import retrace.lsp.server" ] || exit 3',
                'echo "Traceback (most recent call last):" >&2',
                'echo "ImportError: cannot import name \'LanguageServer\' from \'pygls.server\'" >&2',
                'exit 1',
            ].join('\n'),
        );
        fs.chmodSync(broken, 0o755);
        const io = realEnvIo(() => undefined);
        assert.equal(await importFailure(io, broken), "ImportError: cannot import name 'LanguageServer' from 'pygls.server'");
        assert.equal(await importFailure(io, path.join(repo, '.venv', 'bin', 'python')), undefined);
        const missing = await importFailure(io, path.join(dir, 'nothing-here'));
        assert.ok(missing !== undefined && missing !== '', 'a missing interpreter is explained too');
        fs.rmSync(dir, { recursive: true, force: true });
    });
});
