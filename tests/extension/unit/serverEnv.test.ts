/**
 * The managed server environment: decisions (pure) and the build (against a simulated machine:
 * files in memory, processes that answer like uv / pip / Python do), on a Windows layout and a
 * POSIX one. What the real tools do is covered by the install test in the browser.
 */
import * as assert from 'node:assert/strict';
import {
    ENV_MARKER,
    classifyBuildFailure,
    envDir,
    envDirsToDelete,
    fixIt,
    judgeSetting,
    parseMarker,
    parseProbe,
    versionMismatchFrom,
    STALE_BUILD_MS,
    venvPython,
    type EnvFailure,
} from '../../../extension/src/client/serverEnv';
import { CLOUD_EXTRAS, ensure, failureOf, LINUX, Machine, WIN } from './serverEnvMachine';

suite('server environment: build and reuse (simulated machine)', () => {
    for (const layout of [WIN, LINUX]) {
        test(`${layout.platform}: a fresh machine gets a complete env in global storage, keyed to version and lock`, async () => {
            const m = new Machine(layout);
            const r = await ensure(m);
            assert.ok('python' in r, JSON.stringify(r));
            const dir = envDir(layout);
            assert.equal(dir, m.p.join(layout.globalStorage, 'server-env', '0.2.0-abcdef012345'));
            assert.equal(r.python, venvPython(dir, layout.platform));
            assert.equal(r.python, layout.platform === 'win32' ? `${dir}\\Scripts\\python.exe` : `${dir}/bin/python`);
            assert.deepEqual(parseMarker(m.files.get(m.p.join(dir, ENV_MARKER))?.text), r.marker);
            assert.equal(r.marker.version, '0.2.0');
            // Nothing was written in the extension folder, and no temporary build is left.
            const written = [...m.files.keys()].filter(k => k.startsWith(layout.extensionRoot));
            assert.equal(written.length, 4 + CLOUD_EXTRAS.length, written.join('\n')); // what the extension ships, unchanged
            assert.deepEqual([...m.files.keys()].filter(k => k.includes('.tmp-')), []);
            // uv keeps its cache and any Python it downloads in global storage; no PYTHONPATH leaks in.
            const venvCall = m.calls.find(c => c.args[0] === 'venv');
            assert.equal(venvCall?.env?.['UV_PYTHON_INSTALL_DIR'], m.p.join(layout.globalStorage, 'python'));
            assert.equal(venvCall?.env?.['UV_CACHE_DIR'], m.p.join(layout.globalStorage, 'uv-cache'));
            assert.equal(venvCall?.env?.['PYTHONPATH'], undefined);
            assert.ok(m.calls.some(c => c.args.includes('--require-hashes')), 'the lock is installed with hashes required');
            // The second start reuses it: no build.
            const again = await ensure(m);
            assert.ok('python' in again);
            assert.equal(m.venvBuilds(), 1);
        });
    }

    test('an update builds the new env and deletes the old one (and stale half-builds), not a build in progress', async () => {
        const m = new Machine(LINUX);
        const root = m.p.join(LINUX.globalStorage, 'server-env');
        m.put(m.p.join(root, '0.1.0-0123456789ab', 'bin', 'python'), 'old');
        m.put(m.p.join(root, '0.1.0-0123456789ab', ENV_MARKER), JSON.stringify({ version: '0.1.0', lockHash: '0123456789ab', python: '/usr/bin' }));
        m.put(m.p.join(root, '0.2.0-abcdef012345.tmp-7-1', 'pyvenv.cfg'), '', 0);
        m.put(m.p.join(LINUX.globalStorage, 'server-venv', 'bin', 'python'), 'unpinned venv of an earlier release');
        m.put(m.p.join(root, '0.2.0-abcdef012345.tmp-8-2', 'pyvenv.cfg'), '', 100_000_000 - 1000);
        const r = await ensure(m);
        assert.ok('python' in r);
        const left = (await m.list(root)).map(e => e.name).sort();
        assert.deepEqual(left, ['0.2.0-abcdef012345', '0.2.0-abcdef012345.tmp-8-2']);
        assert.equal(await m.exists(m.p.join(LINUX.globalStorage, 'server-venv')), false);
    });

    test('a half-built env (no marker) is deleted and rebuilt', async () => {
        const m = new Machine(WIN);
        m.put(venvPython(envDir(WIN), 'win32'), 'python');
        const r = await ensure(m);
        assert.ok('python' in r);
        assert.equal(m.venvBuilds(), 1);
    });

    test('a broken env is rebuilt once; if the rebuild is broken too, that is reported (no loop)', async () => {
        const m = new Machine(LINUX);
        const dir = envDir(LINUX);
        m.put(venvPython(dir, 'linux'), 'python');
        m.put(m.p.join(dir, ENV_MARKER), JSON.stringify({ version: '0.2.0', lockHash: LINUX.lockHash, python: '/usr/bin' }));
        const healed = await ensure(m);
        assert.ok('python' in healed, 'marker ok but retrace missing: rebuilt');
        assert.equal(m.venvBuilds(), 1);

        const bad = new Machine(LINUX, { wheelVersion: '0.1.9' });
        const f = failureOf(await ensure(bad));
        assert.equal(f.kind, 'install-failed');
        assert.equal(bad.venvBuilds(), 1);
        assert.equal(await bad.exists(dir), false, 'the broken env is not kept for reuse');
    });

    test('offline with no bundled wheels: one clear failure whose fix-it is Retry and names the index and proxy settings', async () => {
        const m = new Machine(LINUX, { offline: true });
        const f = failureOf(await ensure(m));
        assert.equal(f.kind, 'offline');
        const fix = fixIt(f);
        assert.equal(fix.button, 'Retry');
        assert.match(fix.message, /UV_INDEX_URL.*PIP_INDEX_URL.*http\.proxy/);
        assert.equal(await m.exists(envDir(LINUX)), false);
        assert.ok(m.logs.some(l => /downloading the locked packages .* from the index your uv\.toml \/ pip\.conf names, else https:\/\/pypi\.org\/simple/.test(l)), m.logs.join('\n'));
    });

    test('no Python and uv cannot download one: "Install Python 3.11+"; a Python-extension interpreter is used when offered', async () => {
        const m = new Machine(WIN, { uvFindsPython: false });
        const f = failureOf(await ensure(m));
        assert.equal(f.kind, 'no-python');
        assert.deepEqual([fixIt(f).button, fixIt(f).action], ['Install Python 3.11+', 'open-python-downloads']);

        // Offline, the Python download fails: still "no Python", and the detail says the download failed.
        const offline = new Machine(WIN, { uvFindsPython: false, offline: true });
        const of = failureOf(await ensure(offline));
        assert.equal(of.kind, 'no-python');
        assert.match(of.detail, /no Python >=3\.11 was found, and downloading one failed: .*dns error/);
        assert.match(fixIt(of).message, /none could be downloaded .*UV_PYTHON_INSTALL_MIRROR/);

        const withExt = new Machine(WIN, { uvFindsPython: false });
        const r = await ensure(withExt, 'C:\\envs\\py312\\python.exe');
        assert.ok('python' in r, JSON.stringify(r));
        assert.equal(r.marker.builtFrom, 'python-extension');
        assert.equal(r.marker.python, 'C:\\envs\\py312\\python.exe');
    });

    test('no bundled uv (universal package): a system Python >= 3.11 builds it with venv + pip; an old one is named', async () => {
        const ok = new Machine(LINUX, { uv: false, systemPython: [3, 12, 0] });
        const r = await ensure(ok);
        assert.ok('python' in r, JSON.stringify(r));
        assert.ok(ok.calls.some(c => c.cmd === 'python3' && c.args.includes('venv')));
        assert.ok(ok.calls.some(c => c.args.includes('pip') && c.args.includes('--require-hashes')));

        const old = new Machine(LINUX, { uv: false, systemPython: [3, 9, 6] });
        const f = failureOf(await ensure(old));
        assert.equal(f.kind, 'no-python');
        assert.match(f.detail, /Python 3\.9\.6/);

        const win = new Machine(WIN, { uv: false, systemPython: [3, 11, 4] });
        assert.ok('python' in (await ensure(win)));
        assert.ok(win.calls.some(c => c.cmd === 'py' && c.args[0] === '-3'), 'Windows uses the py launcher');

        const none = new Machine(WIN, { uv: false });
        const nf = failureOf(await ensure(none));
        assert.equal(nf.kind, 'no-python');
        assert.doesNotMatch(fixIt(nf).message, /ENOENT/);
    });

    test('a development copy without wheel or lock says so instead of building', async () => {
        const m = new Machine(LINUX);
        await m.remove(m.p.join(LINUX.extensionRoot, 'server'));
        const f = failureOf(await ensure(m));
        assert.equal(f.kind, 'install-failed');
        assert.match(f.detail, /retrace\.pythonPath/);
        assert.equal(m.venvBuilds(), 0);
    });
});

suite('server environment: decisions', () => {
    const ran = (python: number[], retrace?: string) => ({ kind: 'ran' as const, python, executable: '/x/python', retrace });

    test('retrace.pythonPath: missing, too old, without retrace, other version, fine', () => {
        const missing = judgeSetting('/nope/python', parseProbe(-2, 'spawn /nope/python ENOENT', '/nope/python'), '0.2.0');
        assert.equal(missing?.kind, 'setting-unusable');
        assert.match(missing?.detail ?? '', /\/nope\/python does not exist/);
        assert.doesNotMatch(fixIt(missing).message, /ENOENT/);
        const old = judgeSetting('/x/python', ran([3, 9, 6]), '0.2.0');
        assert.deepEqual([old?.kind, fixIt(old as EnvFailure).button], ['python-too-old', 'Choose interpreter']);
        assert.equal(judgeSetting('/x/python', { ...ran([3, 12]), error: 'ModuleNotFoundError' }, '0.2.0')?.kind, 'setting-unusable');
        const other = judgeSetting('/x/python', ran([3, 12], '0.1.0'), '0.2.0');
        assert.equal(other?.kind, 'version-mismatch');
        assert.equal(fixIt(other as EnvFailure).action, 'open-setting');
        assert.equal(judgeSetting('/x/python', ran([3, 11, 0], '0.2.0'), '0.2.0'), undefined);
    });

    test('every failure has one message and exactly one fix-it button', () => {
        const failures: EnvFailure[] = [
            { kind: 'no-python', detail: 'd' },
            { kind: 'python-too-old', detail: 'd' },
            { kind: 'setting-unusable', detail: 'd' },
            { kind: 'install-failed', detail: 'd' },
            { kind: 'offline', detail: 'd' },
            { kind: 'version-mismatch', detail: 'd', fromSetting: false },
            { kind: 'version-mismatch', detail: 'd', fromSetting: true },
            { kind: 'bundle-damaged', detail: 'd' },
        ];
        const actions = failures.map(f => fixIt(f).action);
        assert.deepEqual(actions, ['open-python-downloads', 'open-setting', 'open-setting', 'retry', 'retry', 'rebuild', 'open-setting', 'retry']);
        assert.equal(fixIt(failures[5] as EnvFailure).button, 'Rebuild server environment');
    });

    test("the server's version refusal becomes the version-mismatch fix-it", () => {
        // The exact message the server sends (tests/lsp/test_version_handshake.py checks that side).
        const reason =
            "server failed to start: The Retrace server is version 0.1.0 but the extension is version 0.1.1. Run 'Retrace: Rebuild Server Environment' (or, if retrace.pythonPath is set, install retrace 0.1.1 into that interpreter).";
        assert.deepEqual(versionMismatchFrom(reason, false), { kind: 'version-mismatch', detail: 'server 0.1.0, extension 0.1.1', fromSetting: false });
        assert.equal(fixIt(versionMismatchFrom(reason, false) as EnvFailure).button, 'Rebuild server environment');
        assert.equal(fixIt(versionMismatchFrom(reason, true) as EnvFailure).action, 'open-setting');
        assert.equal(versionMismatchFrom('server failed to start: connection closed', false), undefined);
    });

    test('build output is classified: network errors are offline, missing Python is no-python, the rest install-failed', () => {
        assert.equal(classifyBuildFailure('error: Failed to fetch: `https://pypi.org/simple/x/`').kind, 'offline');
        assert.equal(classifyBuildFailure("WARNING: Retrying ... NewConnectionError('<pip>: Failed to establish a new connection')").kind, 'offline');
        assert.equal(classifyBuildFailure('error: No interpreter found for Python >=3.11 in search path').kind, 'no-python');
        assert.equal(classifyBuildFailure('error: Hash mismatch for `pygls==2.1.1`').kind, 'install-failed');
    });

    test('probe output is parsed even after noise; garbage is "missing"', () => {
        assert.deepEqual(parseProbe(0, 'warning\n{"python":[3,12,1],"executable":"/p","retrace":"0.2.0"}\n', '/p'), {
            kind: 'ran',
            python: [3, 12, 1],
            executable: '/p',
            retrace: '0.2.0',
            error: undefined,
        });
        assert.equal(parseProbe(1, 'SyntaxError: invalid syntax', '/p').kind, 'missing');
        assert.equal(parseMarker('{"version": 1}'), undefined);
        assert.equal(parseMarker('{torn'), undefined);
    });

    test('cleanup deletes older releases, other locks and stale builds; keeps builds in progress and newer releases', () => {
        const now = 10 * STALE_BUILD_MS;
        const entries = [
            { name: '0.2.0-aaaaaaaaaaaa', mtimeMs: 0 },
            { name: '0.1.0-bbbbbbbbbbbb', mtimeMs: now },
            { name: '0.2.0-cccccccccccc', mtimeMs: now },
            { name: '0.10.0-dddddddddddd', mtimeMs: 0 },
            { name: '0.2.0-aaaaaaaaaaaa.tmp-1-1', mtimeMs: now - 1 },
            { name: '0.2.0-aaaaaaaaaaaa.tmp-2-2', mtimeMs: now - STALE_BUILD_MS - 1 },
            { name: 'junk', mtimeMs: now },
        ];
        assert.deepEqual(envDirsToDelete(entries, '0.2.0-aaaaaaaaaaaa', now), ['0.1.0-bbbbbbbbbbbb', '0.2.0-cccccccccccc', '0.2.0-aaaaaaaaaaaa.tmp-2-2', 'junk']);
        // The old window (0.1.0) after the update: it must not take the newer env away.
        assert.deepEqual(envDirsToDelete(entries, '0.1.0-bbbbbbbbbbbb', now), ['0.2.0-aaaaaaaaaaaa.tmp-2-2', 'junk']);
    });
});
