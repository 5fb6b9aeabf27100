/**
 * A Bedrock or Vertex user's packages: the managed environment asks the server (the probe, given
 * retrace.model.provider) which extra that provider lacks, installs exactly its hash-pinned lock
 * (through the pinned uv, else the env's pip), once; other providers install nothing; a failed
 * install never keeps the server from starting. Names from the probe never reach a path unchecked.
 */
import * as assert from 'node:assert/strict';
import { envDir, parseProbe, PROBE_SCRIPT, venvPython } from '../../../extension/src/client/serverEnv';
import { extraInstallCommand, extraLockFile } from '../../../extension/src/client/serverEnvExtras';
import { ensure, LINUX, Machine, WIN } from './serverEnvMachine';

const isUv = (cmd: string): boolean => cmd.endsWith('uv') || cmd.endsWith('uv.exe');
const extraInstalls = (m: Machine): { cmd: string; args: readonly string[] }[] => m.calls.filter(c => c.args.some(a => /requirements-[a-z]+\.lock$/.test(a)));

suite('server environment: the packages a model provider needs', () => {
    for (const layout of [WIN, LINUX]) {
        for (const provider of ['bedrock', 'vertex']) {
            test(`${layout.platform}: ${provider} gets its hash-pinned lock through the pinned uv, once`, async () => {
                const m = new Machine(layout);
                const r = await ensure(m, undefined, { provider });
                assert.ok('python' in r, JSON.stringify(r) + m.logs.join('\n'));
                const python = venvPython(envDir(layout), layout.platform);
                const installs = extraInstalls(m);
                assert.equal(installs.length, 1, JSON.stringify(installs));
                const lock = m.p.join(layout.extensionRoot, 'server', `requirements-${provider}.lock`);
                assert.ok(isUv(installs[0]?.cmd ?? ''));
                assert.deepEqual(installs[0]?.args, ['pip', 'install', '--python', python, '--require-hashes', '-r', lock]);
                const probes = m.calls.filter(c => c.args.includes(PROBE_SCRIPT));
                assert.ok(probes.every(c => c.args[c.args.indexOf(PROBE_SCRIPT) + 1] === provider), 'the server is asked about this provider');
                assert.ok(m.logs.some(l => l.includes(`${provider}-sdk==1.0`)), 'the log lists what is fetched');

                await ensure(m, undefined, { provider });
                assert.equal(extraInstalls(m).length, 1, 'already there: nothing installed again');
            });
        }
    }

    for (const provider of [undefined, '', 'anthropic', 'openai-compatible', 'vscode-lm', 'dev', '../../x']) {
        test(`provider ${JSON.stringify(provider)}: nothing beyond the main lock is installed`, async () => {
            const m = new Machine(LINUX);
            const r = await ensure(m, undefined, { provider });
            assert.ok('python' in r, JSON.stringify(r));
            assert.equal(extraInstalls(m).length, 0);
        });
    }

    test('switching providers installs the new one’s packages into the same env (no rebuild)', async () => {
        const m = new Machine(LINUX);
        await ensure(m, undefined, { provider: 'anthropic' });
        await ensure(m, undefined, { provider: 'vertex' });
        assert.equal(m.venvBuilds(), 1);
        assert.deepEqual(
            extraInstalls(m).map(c => c.args[c.args.length - 1]),
            [m.p.join(LINUX.extensionRoot, 'server', 'requirements-vertex.lock')],
        );
    });

    test('without a bundled uv (the universal package) the env’s own pip installs the lock, hash-checked', async () => {
        const m = new Machine(LINUX, { uv: false, systemPython: [3, 12, 1] });
        const r = await ensure(m, undefined, { provider: 'bedrock' });
        assert.ok('python' in r, JSON.stringify(r) + m.logs.join('\n'));
        const [install] = extraInstalls(m);
        const python = venvPython(envDir(LINUX), 'linux');
        assert.equal(install?.cmd, python);
        assert.deepEqual(install?.args.slice(0, 3), ['-m', 'pip', 'install']);
        assert.deepEqual(install?.args.slice(-3), ['--require-hashes', '-r', m.p.join(LINUX.extensionRoot, 'server', 'requirements-bedrock.lock')]);
    });

    test('offline: the install fails, the server still starts, and the log says what tries again', async () => {
        const m = new Machine(LINUX, { wheels: true, offline: true });
        const r = await ensure(m, undefined, { provider: 'bedrock' });
        assert.ok('python' in r, JSON.stringify(r));
        assert.equal(extraInstalls(m).length, 1);
        assert.ok(m.logs.some(l => /could not install the bedrock provider's packages \(offline: .*Rebuild Server Environment/.test(l)), m.logs.join('\n'));
    });

    test('a package without the provider’s lock reports it instead of installing anything else', async () => {
        const m = new Machine(LINUX);
        await m.remove(m.p.join(LINUX.extensionRoot, 'server', 'requirements-vertex.lock'));
        const r = await ensure(m, undefined, { provider: 'vertex' });
        assert.ok('python' in r);
        assert.equal(extraInstalls(m).length, 0);
        assert.ok(m.logs.some(l => /ships no lock for the vertex provider/.test(l)), m.logs.join('\n'));
    });

    test('only a plain extra name from the probe becomes a lock path', () => {
        for (const bad of ['../evil', 'Bedrock', '', 'a/b', 'x'.repeat(40), 'vertex\n']) {
            assert.equal(extraLockFile(LINUX, bad), undefined, bad);
            const probe = parseProbe(0, JSON.stringify({ python: [3, 12, 1], retrace: '0.2.0', missingExtra: bad }), 'py');
            assert.ok(probe.kind === 'ran' && probe.missingExtra === undefined, bad);
        }
        assert.equal(extraLockFile(WIN, 'vertex'), `${WIN.extensionRoot}\\server\\requirements-vertex.lock`);
        const ok = parseProbe(0, JSON.stringify({ python: [3, 12, 1], retrace: '0.2.0', missingExtra: 'bedrock' }), 'py');
        assert.ok(ok.kind === 'ran' && ok.missingExtra === 'bedrock');
        const none = parseProbe(0, JSON.stringify({ python: [3, 12, 1], retrace: '0.2.0', missingExtra: null }), 'py');
        assert.ok(none.kind === 'ran' && none.missingExtra === undefined);
    });

    test('the install command keeps the user’s index and proxy, and drops Python overrides', () => {
        const base = { PATH: '/usr/bin', PYTHONPATH: '/evil', UV_INDEX_URL: 'https://mirror.corp.example/simple' };
        const net = { proxy: 'http://proxy.corp:3128', proxyStrictSSL: true, noProxy: [], systemCertificates: true };
        const viaUv = extraInstallCommand(LINUX, '/env/bin/python', '/ext/server/requirements-bedrock.lock', '/ext/bin/uv', base, net);
        const viaPip = extraInstallCommand(LINUX, '/env/bin/python', '/ext/server/requirements-bedrock.lock', undefined, base, net);
        for (const c of [viaUv, viaPip]) {
            assert.equal(c.env['UV_INDEX_URL'], 'https://mirror.corp.example/simple');
            assert.equal(c.env['HTTPS_PROXY'], 'http://proxy.corp:3128');
            assert.equal(c.env['PYTHONPATH'], undefined);
            assert.ok(!c.args.some(a => a.startsWith('--index-url') || a === '--no-config'));
        }
        assert.equal(viaUv.env['UV_CACHE_DIR'], `${LINUX.globalStorage}/uv-cache`);
    });
});
