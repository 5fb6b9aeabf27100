/**
 * First use without an index: a platform package's bundled wheels are installed with no download;
 * only wheels that do not fit the machine lead to the index (the user's, through the editor's
 * proxy, and the log says what from where); the bundled uv and server wheel run only with their
 * pinned hashes; the user's index configuration is never overridden.
 */
import * as assert from 'node:assert/strict';
import { envDir, fixIt, parseBundle, pythonRequest } from '../../../extension/src/client/serverEnv';
import { ensure, failureOf, LINUX, Machine, WIN } from './serverEnvMachine';

const isUv = (cmd: string): boolean => cmd.endsWith('uv') || cmd.endsWith('uv.exe');

suite('server environment: bundled wheels and pinned files', () => {
    for (const layout of [WIN, LINUX]) {
        test(`${layout.platform}: offline, the bundled wheels build the env with no index access`, async () => {
            const m = new Machine(layout, { wheels: true, offline: true });
            const r = await ensure(m);
            assert.ok('python' in r, JSON.stringify(r) + m.logs.join('\n'));
            const installs = m.calls.filter(c => c.args[0] === 'pip');
            assert.equal(installs.length, 2, JSON.stringify(installs.map(c => c.args)));
            const wheels = m.p.join(layout.extensionRoot, 'server', 'wheels');
            for (const c of installs) {
                assert.ok(c.args.includes('--no-index'), `no index: ${c.args.join(' ')}`);
                assert.equal(c.args[c.args.indexOf('--find-links') + 1], wheels);
            }
            assert.ok(installs[0]?.args.includes('--require-hashes'), 'still hash-checked against the lock');
            assert.ok(m.logs.some(l => /bundled with the extension .*no download/.test(l)));
            assert.ok(!m.logs.some(l => /downloading the locked packages/.test(l)));
            const venv = m.calls.find(c => c.args[0] === 'venv');
            assert.equal(venv?.args[venv.args.indexOf('--python') + 1], '>=3.11,<3.15', 'a Python the bundled wheels serve');
        });
    }

    test('bundled wheels that do not fit this machine: the index is used instead, and the log says from where', async () => {
        const m = new Machine(LINUX, { wheels: true, wheelsMisfit: true });
        const r = await ensure(m, undefined, { baseEnv: { PATH: '/usr/bin', UV_INDEX_URL: 'https://mirror.corp.example/simple' } });
        assert.ok('python' in r, JSON.stringify(r));
        assert.ok(m.logs.some(l => /bundled wheels do not fit this machine .*matching Python ABI tag/.test(l)), m.logs.join('\n'));
        assert.ok(m.logs.some(l => l.includes('downloading the locked packages') && l.includes('UV_INDEX_URL=https://mirror.corp.example/simple')));
        assert.ok(m.logs.some(l => /^the locked set \(1 pins; .*\): pygls==2\.1\.1$/.test(l)), m.logs.join('\n'));
        const online = m.calls.filter(c => c.args[0] === 'pip' && !c.args.includes('--no-index'));
        assert.ok(online.length >= 1);
        for (const c of online) {
            assert.equal(c.env?.['UV_INDEX_URL'], 'https://mirror.corp.example/simple', 'the user index reaches uv unchanged');
            assert.ok(!c.args.some(a => a.startsWith('--index-url') || a === '--no-config' || a === '--default-index'), c.args.join(' '));
        }

        const offline = new Machine(LINUX, { wheels: true, wheelsMisfit: true, offline: true });
        assert.equal(failureOf(await ensure(offline)).kind, 'offline');
    });

    test('a bundled wheel whose hash does not match the lock is reported, never fetched elsewhere instead', async () => {
        const m = new Machine(LINUX, { wheels: true, wheelTampered: true });
        const f = failureOf(await ensure(m));
        assert.equal(f.kind, 'bundle-damaged');
        assert.match(f.detail, /Hash mismatch/);
        assert.equal(m.calls.filter(c => c.args[0] === 'pip' && !c.args.includes('--no-index')).length, 0);
        assert.equal(await m.exists(envDir(LINUX)), false);
    });

    for (const layout of [WIN, LINUX]) {
        test(`${layout.platform}: a bundled uv that is not the pinned one is never run`, async () => {
            const m = new Machine(layout, { uvTampered: true });
            const f = failureOf(await ensure(m));
            assert.equal(f.kind, 'bundle-damaged');
            assert.match(f.detail, /has sha256 [0-9a-f]{64}, pinned [0-9a-f]{64}/);
            assert.equal(m.calls.filter(c => isUv(c.cmd)).length, 0, 'uv did not run');
            assert.match(fixIt(f).message, /do not match their pinned hashes.*Reinstall the extension/);
        });
    }

    test('a bundled uv with no manifest to check it against is not run either', async () => {
        const m = new Machine(LINUX, { noBundleManifest: true });
        const f = failureOf(await ensure(m));
        assert.equal(f.kind, 'bundle-damaged');
        assert.match(f.detail, /no pinned sha256/);
        assert.equal(m.calls.filter(c => isUv(c.cmd)).length, 0);
    });

    test('a server wheel changed after packaging is not installed', async () => {
        const m = new Machine(LINUX);
        m.put(m.p.join(LINUX.extensionRoot, 'server', 'retrace_checkpoints-0.2.0-py3-none-any.whl'), 'another wheel');
        const f = failureOf(await ensure(m));
        assert.equal(f.kind, 'bundle-damaged');
        assert.equal(m.calls.filter(c => c.args[0] === 'pip').length, 0);
    });

    test('the editor proxy reaches uv; the log names it without its password; no config switch overrides the user', async () => {
        const m = new Machine(LINUX);
        const network = { proxy: 'http://ada:s3cret@proxy.corp:3128', proxyStrictSSL: true, noProxy: ['.corp'], systemCertificates: true };
        const r = await ensure(m, undefined, { network, baseEnv: { PATH: '/usr/bin', PIP_INDEX_URL: 'https://pip.corp/simple' } });
        assert.ok('python' in r);
        for (const c of m.calls.filter(c => isUv(c.cmd))) {
            assert.equal(c.env?.['HTTPS_PROXY'], 'http://ada:s3cret@proxy.corp:3128');
            assert.equal(c.env?.['NO_PROXY'], '.corp');
            assert.equal(c.env?.['UV_NO_CONFIG'], undefined, 'uv reads the user configuration (uv.toml)');
            assert.equal(c.env?.['PIP_INDEX_URL'], 'https://pip.corp/simple');
            assert.ok(!c.args.includes('--no-config'));
        }
        // A user who turned uv's configuration off themselves keeps it off.
        const own = new Machine(LINUX);
        await ensure(own, undefined, { baseEnv: { PATH: '/usr/bin', UV_NO_CONFIG: '1' } });
        assert.ok(own.calls.filter(c => isUv(c.cmd)).every(c => c.env?.['UV_NO_CONFIG'] === '1'));
        const joined = m.logs.join('\n');
        assert.ok(joined.includes('proxy http://ada:***@proxy.corp:3128'), joined);
        assert.ok(!joined.includes('s3cret'));
    });

    test('the manifest reader takes only well-formed entries; the Python request follows the bundled versions', () => {
        assert.equal(parseBundle('{torn'), undefined);
        assert.equal(parseBundle('{"uv": {}}'), undefined);
        const b = parseBundle(JSON.stringify({ target: 'linux-x64', uv: { file: 'bin/uv', sha256: 'zz' }, wheels: { dir: 'server/wheels', pythons: ['3.11', 'x', '3.13'] } }));
        assert.equal(b?.uv, undefined, 'a malformed hash is no pin');
        assert.deepEqual(b?.wheels?.pythons, ['3.11', '3.13']);
        assert.equal(pythonRequest(b), '>=3.11,<3.14');
        assert.equal(pythonRequest(undefined), '>=3.11');
        assert.equal(pythonRequest(parseBundle('{"target": "universal", "wheels": null}')), '>=3.11');
        // A wheels folder must stay inside the extension; versions below 3.11 do not narrow the request.
        for (const dir of ['../../elsewhere', '/abs/wheels', 'C:\\wheels', 'server\\..\\..\\x', '']) {
            assert.equal(parseBundle(JSON.stringify({ target: 't', wheels: { dir, pythons: ['3.12'] } }))?.wheels, undefined, dir);
        }
        assert.equal(parseBundle(JSON.stringify({ target: 't', wheels: { dir: 'server/wheels..x', pythons: ['3.12'] } }))?.wheels?.dir, 'server/wheels..x');
        assert.equal(pythonRequest(parseBundle(JSON.stringify({ target: 't', wheels: { dir: 'w', pythons: ['3.9', '3.12'] } }))), '>=3.11,<3.13');
        assert.equal(pythonRequest(parseBundle(JSON.stringify({ target: 't', wheels: { dir: 'w', pythons: ['3.9'] } }))), '>=3.11');
    });
});
