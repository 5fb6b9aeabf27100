/**
 * The network side of building the server environment, as pure functions of the editor's settings
 * and the process environment (no `vscode` import: unit tested as tables).
 *
 * Contracts:
 * - The user's package-index configuration is never overridden: `UV_INDEX_URL`, `UV_DEFAULT_INDEX`,
 *   `UV_EXTRA_INDEX_URL`, `PIP_INDEX_URL`, `PIP_EXTRA_INDEX_URL`, uv.toml and pip.conf reach uv and
 *   pip as they are (we pass no `--index-url` and no `--no-config`).
 * - VS Code's `http.proxy` wins over the proxy variables of the environment (as in VS Code itself:
 *   the variables are used only when the setting is empty) and is handed to uv and pip as
 *   `HTTPS_PROXY`/`HTTP_PROXY` (both cases); `http.noProxy` is added to `NO_PROXY`. With
 *   `http.proxySupport: off` none of the `http.*` settings apply: the environment alone decides.
 * - `http.proxyStrictSSL: false` means the user accepts unverified certificates from the hosts a
 *   download may use: those hosts (the configured indexes, PyPI's, the Python download mirror) go
 *   to `UV_INSECURE_HOST` and `PIP_TRUSTED_HOST`, and the log says so. `http.systemCertificates`
 *   (default on) makes uv trust the system's certificate store (`UV_SYSTEM_CERTS`), where a
 *   company's proxy certificate lives.
 * - `describeDownload` says exactly what may be fetched and from where, for the log; a proxy's
 *   password never reaches the log.
 */

/** The editor's network settings (`http.*`). */
export interface NetworkSettings {
    /** `http.proxySupport`: 'off' means extensions do not use the editor's proxy settings. */
    readonly proxySupport?: string | undefined;
    readonly proxy: string;
    readonly proxyStrictSSL: boolean;
    readonly noProxy: readonly string[];
    readonly systemCertificates: boolean;
}

export const DEFAULT_NETWORK: NetworkSettings = { proxy: '', proxyStrictSSL: true, noProxy: [], systemCertificates: true };

type Env = Readonly<Record<string, string | undefined>>;

export const PYPI_SIMPLE = 'https://pypi.org/simple';
const PYPI_HOSTS = ['pypi.org', 'files.pythonhosted.org'];
const PYTHON_DOWNLOADS = 'https://github.com/astral-sh/python-build-standalone/releases';
const PYTHON_DOWNLOAD_HOSTS = ['github.com', 'objects.githubusercontent.com', 'release-assets.githubusercontent.com'];

/** The variables that choose a package index, in the order uv reads them, then pip's. */
export const INDEX_VARIABLES = ['UV_DEFAULT_INDEX', 'UV_INDEX_URL', 'UV_INDEX', 'UV_EXTRA_INDEX_URL', 'UV_FIND_LINKS', 'PIP_INDEX_URL', 'PIP_EXTRA_INDEX_URL', 'PIP_FIND_LINKS'] as const;

function present(env: Env, key: string): string | undefined {
    const v = env[key] ?? env[key.toLowerCase()];
    return v !== undefined && v.trim() !== '' ? v.trim() : undefined;
}

/** A URL with its password (and a user name that looks like a token) replaced, for the log. */
export function redactUrl(url: string): string {
    return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^@/]*)@/i, (_m, scheme: string, auth: string) => {
        const user = auth.split(':')[0] ?? '';
        return `${scheme}${auth.includes(':') ? `${user}:***` : '***'}@`;
    });
}

function hostOf(url: string): string | undefined {
    try {
        const u = new URL(url);
        return u.host === '' ? undefined : u.host;
    } catch {
        return undefined;
    }
}

/** Index URLs the environment names (uv's and pip's variables; several are space-separated lists). */
export function indexUrls(env: Env): string[] {
    return INDEX_VARIABLES.flatMap(k => (present(env, k) ?? '').split(/\s+/)).filter(u => u !== '' && !u.includes('=') && /^[a-z]+:\/\//i.test(u));
}

/** Hosts a download may contact: the configured indexes, else PyPI's; and where uv gets a Python. */
export function downloadHosts(env: Env): string[] {
    const indexes = indexUrls(env)
        .map(hostOf)
        .filter((h): h is string => h !== undefined);
    const mirror = present(env, 'UV_PYTHON_INSTALL_MIRROR');
    const python = mirror === undefined ? PYTHON_DOWNLOAD_HOSTS : [hostOf(mirror)].filter((h): h is string => h !== undefined);
    return [...new Set([...indexes, ...PYPI_HOSTS, ...python])];
}

/** The environment uv and pip run with: the user's, plus the editor's proxy and certificate settings. */
export function networkEnv(base: Env, net: NetworkSettings): Record<string, string | undefined> {
    const env: Record<string, string | undefined> = { ...base };
    if (net.proxySupport === 'off') {
        return env; // the user keeps extensions off the editor's proxy: the environment decides
    }
    const proxy = net.proxy.trim();
    if (proxy !== '') {
        for (const k of ['HTTPS_PROXY', 'HTTP_PROXY', 'https_proxy', 'http_proxy']) {
            env[k] = proxy;
        }
    }
    if (net.noProxy.length > 0) {
        const merged = [...new Set([...(present(base, 'NO_PROXY') ?? '').split(','), ...net.noProxy].map(s => s.trim()).filter(s => s !== ''))].join(',');
        env['NO_PROXY'] = merged;
        env['no_proxy'] = merged;
    }
    if (net.systemCertificates && present(base, 'UV_SYSTEM_CERTS') === undefined && present(base, 'UV_NATIVE_TLS') === undefined) {
        env['UV_SYSTEM_CERTS'] = '1';
    }
    if (!net.proxyStrictSSL) {
        const hosts = downloadHosts(base);
        env['UV_INSECURE_HOST'] = [present(base, 'UV_INSECURE_HOST'), ...hosts].filter(h => h !== undefined).join(' ');
        env['PIP_TRUSTED_HOST'] = [present(base, 'PIP_TRUSTED_HOST'), ...hosts].filter(h => h !== undefined).join(' ');
    }
    return env;
}

/** One line a step's download is described by, in the log: what, from where, through which proxy. */
export function describeDownload(what: 'packages' | 'python', env: Env): string {
    const proxy = present(env, 'HTTPS_PROXY');
    const via = proxy === undefined ? 'no proxy' : `proxy ${redactUrl(proxy)}`;
    const insecure = present(env, 'UV_INSECURE_HOST');
    const tls = insecure === undefined ? '' : `; certificates NOT verified for ${insecure} (http.proxyStrictSSL is off)`;
    if (what === 'python') {
        const mirror = present(env, 'UV_PYTHON_INSTALL_MIRROR');
        const from = mirror === undefined ? `${PYTHON_DOWNLOADS} (uv's managed CPython builds)` : `${redactUrl(mirror)} (UV_PYTHON_INSTALL_MIRROR)`;
        return `if no Python 3.11+ is found, uv downloads one from ${from}, ${via}${tls}`;
    }
    const named = INDEX_VARIABLES.filter(k => present(env, k) !== undefined).map(k => `${k}=${(present(env, k) ?? '').split(/\s+/).map(redactUrl).join(' ')}`);
    const from = named.length > 0 ? named.join(', ') : `the index your uv.toml / pip.conf names, else ${PYPI_SIMPLE}`;
    return `downloading the locked packages (every file checked against its pinned sha256) from ${from}, ${via}${tls}`;
}

/** `name==version` of every pin in a hash-pinned lock (markers left out): what a download fetches at most. */
export function lockedPins(lock: string): string[] {
    return lock
        .split('\n')
        .map(line => /^([A-Za-z0-9][A-Za-z0-9._-]*==[^\s;\\]+)/.exec(line)?.[1])
        .filter((pin): pin is string => pin !== undefined);
}
