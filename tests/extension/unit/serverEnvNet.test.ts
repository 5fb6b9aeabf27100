/** The editor's network settings and the user's index configuration, as uv and pip get them. */
import * as assert from 'node:assert/strict';
import { DEFAULT_NETWORK, describeDownload, downloadHosts, indexUrls, lockedPins, networkEnv, redactUrl } from '../../../extension/src/client/serverEnvNet';

suite('server environment: network settings', () => {
    test('no setting: the environment passes through untouched (its proxy and index variables included)', () => {
        const base = { HTTPS_PROXY: 'http://env-proxy:1', UV_INDEX_URL: 'https://u/simple', PIP_INDEX_URL: 'https://p/simple', PIP_EXTRA_INDEX_URL: 'https://x/simple' };
        const env = networkEnv(base, { ...DEFAULT_NETWORK, systemCertificates: false });
        assert.deepEqual(env, base);
    });

    test('http.proxy wins over the environment, in both letter cases; http.noProxy is added to NO_PROXY', () => {
        const env = networkEnv({ https_proxy: 'http://env:1', NO_PROXY: 'localhost' }, { ...DEFAULT_NETWORK, proxy: ' http://p:8080 ', noProxy: ['.corp', 'localhost'] });
        for (const k of ['HTTPS_PROXY', 'HTTP_PROXY', 'https_proxy', 'http_proxy']) {
            assert.equal(env[k], 'http://p:8080', k);
        }
        assert.equal(env['NO_PROXY'], 'localhost,.corp');
        assert.equal(env['no_proxy'], 'localhost,.corp');
    });

    test('http.proxySupport off: no http.* setting is applied, the environment alone decides', () => {
        const base = { HTTPS_PROXY: 'http://env:1' };
        const env = networkEnv(base, { ...DEFAULT_NETWORK, proxySupport: 'off', proxy: 'http://p:8080', proxyStrictSSL: false, noProxy: ['.corp'] });
        assert.deepEqual(env, base);
    });

    test('system certificates: uv trusts the system store unless the user chose otherwise', () => {
        assert.equal(networkEnv({}, DEFAULT_NETWORK)['UV_SYSTEM_CERTS'], '1');
        assert.equal(networkEnv({ UV_SYSTEM_CERTS: 'false' }, DEFAULT_NETWORK)['UV_SYSTEM_CERTS'], 'false');
        assert.equal(networkEnv({ UV_NATIVE_TLS: '0' }, DEFAULT_NETWORK)['UV_SYSTEM_CERTS'], undefined);
        assert.equal(networkEnv({}, { ...DEFAULT_NETWORK, systemCertificates: false })['UV_SYSTEM_CERTS'], undefined);
    });

    test('proxyStrictSSL off: the download hosts (configured indexes, PyPI, the Python mirror) are named insecure; on: nothing is', () => {
        const base = { UV_INDEX_URL: 'https://mirror.corp:8443/simple', UV_PYTHON_INSTALL_MIRROR: 'https://py.corp/pbs', PIP_TRUSTED_HOST: 'old.corp' };
        const off = networkEnv(base, { ...DEFAULT_NETWORK, proxyStrictSSL: false });
        assert.equal(off['UV_INSECURE_HOST'], 'mirror.corp:8443 pypi.org files.pythonhosted.org py.corp');
        assert.equal(off['PIP_TRUSTED_HOST'], 'old.corp mirror.corp:8443 pypi.org files.pythonhosted.org py.corp');
        assert.match(describeDownload('packages', off), /certificates NOT verified for mirror\.corp:8443/);
        const on = networkEnv(base, DEFAULT_NETWORK);
        assert.equal(on['UV_INSECURE_HOST'], undefined);
        assert.equal(on['PIP_TRUSTED_HOST'], 'old.corp');
        assert.deepEqual(downloadHosts({}), ['pypi.org', 'files.pythonhosted.org', 'github.com', 'objects.githubusercontent.com', 'release-assets.githubusercontent.com']);
    });

    test('index URLs are read from every variable uv and pip know (space-separated lists, named indexes skipped)', () => {
        assert.deepEqual(indexUrls({ UV_INDEX: 'https://a/simple name=https://b/simple', PIP_EXTRA_INDEX_URL: 'https://c/simple https://d/simple', UV_FIND_LINKS: '' }), [
            'https://a/simple',
            'https://c/simple',
            'https://d/simple',
        ]);
    });

    test('the log line says what is fetched from where, and never a password', () => {
        const env = { UV_INDEX_URL: 'https://token:abc123@mirror/simple', HTTPS_PROXY: 'http://u:pw@proxy:3128' };
        const line = describeDownload('packages', env);
        assert.equal(line, 'downloading the locked packages (every file checked against its pinned sha256) from UV_INDEX_URL=https://token:***@mirror/simple, proxy http://u:***@proxy:3128');
        assert.match(describeDownload('packages', {}), /from the index your uv\.toml \/ pip\.conf names, else https:\/\/pypi\.org\/simple, no proxy$/);
        assert.match(describeDownload('python', {}), /downloads one from https:\/\/github\.com\/astral-sh\/python-build-standalone\/releases/);
        assert.match(describeDownload('python', { UV_PYTHON_INSTALL_MIRROR: 'https://py.corp/pbs' }), /from https:\/\/py\.corp\/pbs \(UV_PYTHON_INSTALL_MIRROR\)/);
        assert.equal(redactUrl('https://ghp_secret@h/x'), 'https://***@h/x');
        assert.equal(redactUrl('https://h/x'), 'https://h/x');
    });

    test('the locked set is listed for the log: every pin, markers and hashes left out', () => {
        const lock = "# header\nanyio==4.16.0 \\\n    --hash=sha256:aa\n    # via httpx\npywin32==312 ; sys_platform == 'win32' \\\n    --hash=sha256:bb\n";
        assert.deepEqual(lockedPins(lock), ['anyio==4.16.0', 'pywin32==312']);
    });
});
