/**
 * The server's Python environment: where it lives, when it may be used, how it is (re)built, and
 * what the user is told when it cannot be (in the user's language: the host passes `vscode.l10n`
 * as `Translator`; English without it). Nothing here imports `vscode`: decisions are pure
 * functions of probe results, and the build runs against an injected `EnvIo`, so both are unit
 * tested (including a simulated Windows layout) without an editor.
 *
 * Why this design (a per-platform .vsix bundling `uv`, a committed hash-pinned lock and the server
 * as a prebuilt pure-Python wheel, installed on first use into global storage):
 * - Reproducible: `uv pip install --require-hashes -r requirements.lock` installs exactly the set
 *   CI tested, for every platform (the lock is universal), and nothing unpinned.
 * - Works without a suitable Python: `uv venv --python ">=3.11"` uses one it finds, else downloads
 *   a managed CPython into global storage. Where no uv is bundled (the universal .vsix) a found
 *   Python >= 3.11 builds it with `venv` + `pip --require-hashes` instead.
 * - Works without an index: a platform .vsix bundles every locked wheel for its target and each
 *   CPython it names (`server/wheels/`, described by `server/bundle.json`), installed with
 *   `--no-index --find-links` and still `--require-hashes`. Only when those do not fit the machine
 *   (another Python, another libc) is the index used, with the user's own index and proxy
 *   configuration (serverEnvNet.ts), and the log says what is fetched from where.
 * - The bundled uv is hash-pinned: its sha256 in `server/bundle.json` is checked before every
 *   build; a mismatch (or no manifest) is the `bundle-damaged` failure, and uv is not run.
 * - Keyed to the release: the directory is `server-env/<extension version>-<lock hash>`, and a
 *   marker written last (the build happens in a temporary directory renamed into place) says it is
 *   complete. An update gets a new directory; older ones are deleted (a newer one is kept for the
 *   windows already updated). A broken env is deleted
 *   and rebuilt once, then reported.
 * - Nothing is written inside the extension folder (it may be read-only), and the user's project
 *   environments never need our dependencies.
 */
import { createHash } from 'node:crypto';
import * as nodePath from 'node:path';

/** `process.platform` of the machine the env is for (`win32` selects Windows paths). */
export type Platform = string;

/** The minimum Python the server supports (pyproject `requires-python`). */
export const MIN_PYTHON: readonly [number, number] = [3, 11];

export const ENV_MARKER = 'retrace-env.json';
export const PYTHON_DOWNLOADS_URL = 'https://www.python.org/downloads/';

/** Partial builds older than this are taken to be abandoned (a window that died mid-build). */
export const STALE_BUILD_MS = 30 * 60_000;

/** Where things are, for one platform (paths use that platform's separators). */
export interface EnvLayout {
    readonly platform: Platform;
    readonly globalStorage: string;
    readonly extensionRoot: string;
    readonly version: string;
    readonly lockHash: string;
}

export function pathFor(platform: Platform): typeof nodePath.posix {
    return platform === 'win32' ? nodePath.win32 : nodePath.posix;
}

export function lockHashOf(lock: string | Uint8Array): string {
    return createHash('sha256').update(lock).digest('hex');
}

export function envRoot(layout: EnvLayout): string {
    return pathFor(layout.platform).join(layout.globalStorage, 'server-env');
}

export function envDirName(version: string, lockHash: string): string {
    return `${version}-${lockHash.slice(0, 12)}`;
}

export function envDir(layout: EnvLayout): string {
    return pathFor(layout.platform).join(envRoot(layout), envDirName(layout.version, layout.lockHash));
}

/** The interpreter inside a virtual environment. */
export function venvPython(dir: string, platform: Platform): string {
    const p = pathFor(platform);
    return platform === 'win32' ? p.join(dir, 'Scripts', 'python.exe') : p.join(dir, 'bin', 'python');
}

export function bundledUv(layout: EnvLayout): string {
    const p = pathFor(layout.platform);
    return p.join(layout.extensionRoot, 'bin', layout.platform === 'win32' ? 'uv.exe' : 'uv');
}

export function lockFile(layout: EnvLayout): string {
    return pathFor(layout.platform).join(layout.extensionRoot, 'server', 'requirements.lock');
}

export function bundleFile(layout: EnvLayout): string {
    return pathFor(layout.platform).join(layout.extensionRoot, 'server', 'bundle.json');
}

/** What a platform .vsix bundles (`server/bundle.json`, written by scripts/package.mjs). */
export interface BundleManifest {
    readonly target: string;
    /** The bundled uv, relative to the extension root, and its pinned sha256. */
    readonly uv?: { readonly file: string; readonly sha256: string } | undefined;
    /** The server wheel and its sha256. */
    readonly server?: { readonly file: string; readonly sha256: string } | undefined;
    /** The locked wheels for this target: their folder and the CPython versions they serve. */
    readonly wheels?: { readonly dir: string; readonly pythons: readonly string[] } | undefined;
}

/** A folder named relative to the extension root that stays inside it (no `..`, not absolute, no drive). */
function insideRelative(dir: string): boolean {
    return dir !== '' && !/^[\\/]|^[A-Za-z]:|(^|[\\/])\.\.([\\/]|$)/.test(dir);
}

function hashed(v: unknown): { file: string; sha256: string } | undefined {
    const o = v as { file?: unknown; sha256?: unknown } | null | undefined;
    return typeof o?.file === 'string' && typeof o.sha256 === 'string' && /^[0-9a-f]{64}$/.test(o.sha256) ? { file: o.file, sha256: o.sha256 } : undefined;
}

export function parseBundle(text: string | undefined): BundleManifest | undefined {
    if (text === undefined) {
        return undefined;
    }
    try {
        const m = JSON.parse(text) as { target?: unknown; uv?: unknown; server?: unknown; wheels?: { dir?: unknown; pythons?: unknown } | null };
        if (typeof m.target !== 'string') {
            return undefined;
        }
        const pythons = Array.isArray(m.wheels?.pythons) ? m.wheels.pythons.filter((v): v is string => typeof v === 'string' && /^3\.\d+$/.test(v)) : [];
        const dir = m.wheels?.dir;
        const wheels = typeof dir === 'string' && insideRelative(dir) && pythons.length > 0 ? { dir, pythons } : undefined;
        return { target: m.target, uv: hashed(m.uv), server: hashed(m.server), wheels };
    } catch {
        return undefined;
    }
}

/** The Python `uv venv` asks for: 3.11+, and no newer than the newest the bundled wheels serve. */
export function pythonRequest(bundle: BundleManifest | undefined): string {
    const minors = (bundle?.wheels?.pythons ?? []).map(v => Number(v.split('.')[1])).filter(m => m >= MIN_PYTHON[1]);
    const min = `>=${MIN_PYTHON[0]}.${MIN_PYTHON[1]}`;
    return minors.length === 0 ? min : `${min},<3.${Math.max(...minors) + 1}`;
}

/**
 * Environment variables for every uv call: its cache and any Python it downloads stay in global
 * storage. The user's uv configuration (uv.toml, UV_INDEX_URL, …) is honoured: we set no UV_NO_CONFIG
 * and pass no --no-config (and leave a UV_NO_CONFIG the user set themselves).
 */
export function uvEnv(layout: EnvLayout, base: Readonly<Record<string, string | undefined>>): Record<string, string | undefined> {
    const p = pathFor(layout.platform);
    return {
        ...base,
        UV_CACHE_DIR: p.join(layout.globalStorage, 'uv-cache'),
        UV_PYTHON_INSTALL_DIR: p.join(layout.globalStorage, 'python'),
        UV_NO_PROGRESS: '1',
        VIRTUAL_ENV: undefined,
        PYTHONPATH: undefined,
        PYTHONHOME: undefined,
    };
}

/** The server's launch arguments: isolated mode, so nothing in the workspace (cwd, PYTHONPATH, user site) can shadow it. */
export const SERVER_ARGS: readonly string[] = ['-I', '-m', 'retrace', 'serve'];

/**
 * Printed by the probe: the interpreter's version, and whether (and which) retrace can run here —
 * asked of the server's own `retrace/server_deps.py`, which reads the installed packages' metadata
 * instead of importing the server (that import cost ~1.3 CPU-seconds and a second of every start;
 * a server without that module is imported). Given a model provider as its argument, also the
 * pyproject extra that provider needs and this Python lacks (`missingExtra`: the server owns which
 * provider needs which packages, see serverEnvExtras.ts). Written for any Python 3 so an old
 * interpreter still reports its version.
 */
export const PROBE_SCRIPT = [
    'import json, sys',
    'r = {"python": list(sys.version_info[:3]), "executable": sys.executable}',
    'try:',
    '    import retrace',
    '    try:',
    '        from retrace.server_deps import problem',
    '    except ImportError:',
    '        import retrace.lsp.server',
    '        problem = lambda: None',
    '    p = problem()',
    '    if p:',
    '        r["error"] = p',
    '    else:',
    '        r["retrace"] = retrace.__version__',
    '    if not p and len(sys.argv) > 1:',
    '        import retrace.agent.model.cloud as cloud',
    '        r["missingExtra"] = getattr(cloud, "missing_extra", lambda provider: None)(sys.argv[1])',
    'except Exception as e:',
    '    r["error"] = "%s: %s" % (type(e).__name__, e)',
    'print(json.dumps(r))',
].join('\n');

/** What one interpreter is (from `PROBE_SCRIPT`), or that it cannot run at all. */
export type PythonProbe =
    | { readonly kind: 'missing'; readonly detail: string }
    | {
          readonly kind: 'ran';
          readonly python: readonly number[];
          readonly executable: string;
          readonly retrace?: string | undefined;
          readonly error?: string | undefined;
          /** The extra the provider given to the probe needs and this Python lacks (a plain name). */
          readonly missingExtra?: string | undefined;
      };

/** An extra's name as it may reach a file name (`requirements-<extra>.lock`). */
const EXTRA_NAME = /^[a-z][a-z0-9-]{0,31}$/;

export function parseProbe(code: number, output: string, interpreter: string): PythonProbe {
    const line = output
        .split('\n')
        .map(l => l.trim())
        .reverse()
        .find(l => l.startsWith('{'));
    if (line !== undefined) {
        try {
            const r = JSON.parse(line) as { python?: number[]; executable?: string; retrace?: string; error?: string; missingExtra?: unknown };
            if (Array.isArray(r.python)) {
                const missingExtra = typeof r.missingExtra === 'string' && EXTRA_NAME.test(r.missingExtra) ? r.missingExtra : undefined;
                const ran = { kind: 'ran', python: r.python, executable: r.executable ?? interpreter, retrace: r.retrace, error: r.error } as const;
                return missingExtra === undefined ? ran : { ...ran, missingExtra };
            }
        } catch {
            // fall through: not the probe's output
        }
    }
    if (/ENOENT|not recognized as an internal or external command|No such file or directory/.test(output)) {
        return { kind: 'missing', detail: `${interpreter} does not exist` };
    }
    const last = output.split('\n').filter(l => l.trim() !== '').pop();
    return { kind: 'missing', detail: last ?? `${interpreter} exited with code ${code}` };
}

export function atLeast(version: readonly number[], min: readonly [number, number] = MIN_PYTHON): boolean {
    const [major = 0, minor = 0] = version;
    return major > min[0] || (major === min[0] && minor >= min[1]);
}

/** Why the server cannot start; each kind has exactly one fix-it (see `fixIt`). */
export type EnvFailure =
    | { readonly kind: 'no-python'; readonly detail: string }
    | { readonly kind: 'python-too-old'; readonly detail: string }
    | { readonly kind: 'setting-unusable'; readonly detail: string }
    | { readonly kind: 'install-failed'; readonly detail: string }
    | { readonly kind: 'offline'; readonly detail: string }
    | { readonly kind: 'bundle-damaged'; readonly detail: string }
    | { readonly kind: 'version-mismatch'; readonly detail: string; readonly fromSetting: boolean };

export type FixItAction = 'open-python-downloads' | 'open-setting' | 'retry' | 'rebuild';

export interface FixIt {
    readonly message: string;
    readonly button: string;
    readonly action: FixItAction;
}

/** `vscode.l10n` as this module needs it: a message's translation with `{0}`… filled in. */
export interface Translator {
    t(message: string, ...args: (string | number)[]): string;
}

/** English: the message itself with its arguments filled in (a missing one stays as written). */
export const ENGLISH: Translator = {
    t: (message, ...args) => message.replace(/\{(\d+)\}/g, (whole, i: string) => String(args[Number(i)] ?? whole)),
};

/** The one message and one button for each failure (details go to the log), in `l10n`'s language. */
export function fixIt(failure: EnvFailure, l10n: Translator = ENGLISH): FixIt {
    const retry = l10n.t('Retry');
    const choose = l10n.t('Choose interpreter');
    switch (failure.kind) {
        case 'no-python':
            return {
                message: l10n.t(
                    'Retrace needs Python 3.11 or newer to run its server: none was found on this machine, and none could be downloaded (uv fetches its Python builds from GitHub, or from UV_PYTHON_INSTALL_MIRROR when set). Install Python 3.11+ (or set retrace.pythonPath) and retry.',
                ),
                button: l10n.t('Install Python 3.11+'),
                action: 'open-python-downloads',
            };
        case 'python-too-old':
            return {
                message: l10n.t('The interpreter in retrace.pythonPath is too old for the Retrace server (it needs Python 3.11+): {0}', failure.detail),
                button: choose,
                action: 'open-setting',
            };
        case 'setting-unusable':
            return { message: l10n.t('The interpreter in retrace.pythonPath cannot run the Retrace server: {0}', failure.detail), button: choose, action: 'open-setting' };
        case 'install-failed':
            return { message: l10n.t('Retrace could not set up its server environment (see the Retrace log).'), button: retry, action: 'retry' };
        case 'offline':
            return {
                message: l10n.t(
                    'Retrace could not download what its server environment needs (see the Retrace log for what was fetched from where). Check the network, your package index settings (UV_INDEX_URL / PIP_INDEX_URL, uv.toml, pip.conf) and http.proxy, then retry.',
                ),
                button: retry,
                action: 'retry',
            };
        case 'bundle-damaged':
            return {
                message: l10n.t('The files bundled with the Retrace extension do not match their pinned hashes, so they are not run: {0}. Reinstall the extension.', failure.detail),
                button: retry,
                action: 'retry',
            };
        case 'version-mismatch':
            return failure.fromSetting
                ? { message: l10n.t('The server in retrace.pythonPath is another version than the extension: {0}', failure.detail), button: choose, action: 'open-setting' }
                : { message: l10n.t('The Retrace server environment is from another version: {0}', failure.detail), button: l10n.t('Rebuild server environment'), action: 'rebuild' };
    }
}

/** The server's refusal at `initialize` (the version handshake), read back from its error message. */
export function versionMismatchFrom(reason: string, fromSetting: boolean): EnvFailure | undefined {
    const m = /Retrace server is version (\S+) but the extension is version (\d[\w.+-]*\w)/.exec(reason);
    return m === null ? undefined : { kind: 'version-mismatch', detail: `server ${m[1] ?? '?'}, extension ${m[2] ?? '?'}`, fromSetting };
}

/** The user-chosen interpreter (`retrace.pythonPath`): used as is, or refused with the reason. */
export function judgeSetting(interpreter: string, probe: PythonProbe, extensionVersion: string): EnvFailure | undefined {
    if (probe.kind === 'missing') {
        return { kind: 'setting-unusable', detail: `${interpreter}: ${probe.detail}` };
    }
    if (!atLeast(probe.python)) {
        return { kind: 'python-too-old', detail: `${interpreter} is Python ${probe.python.join('.')}` };
    }
    if (probe.retrace === undefined) {
        return { kind: 'setting-unusable', detail: `${interpreter}: ${probe.error ?? 'retrace does not import'}` };
    }
    if (probe.retrace !== extensionVersion) {
        return { kind: 'version-mismatch', detail: `retrace ${probe.retrace} in ${interpreter}, extension ${extensionVersion}`, fromSetting: true };
    }
    return undefined;
}

/** Written last into a finished environment; an env without a matching marker is never used. */
export interface EnvMarker {
    readonly version: string;
    readonly lockHash: string;
    /** The base interpreter the env was created from. */
    readonly python: string;
    /** Who provided that interpreter (a Python-extension one is rebuilt when the user switches). */
    readonly builtFrom: 'uv' | 'python-extension' | 'system';
}

export function parseMarker(text: string | undefined): EnvMarker | undefined {
    if (text === undefined) {
        return undefined;
    }
    try {
        const m = JSON.parse(text) as Partial<EnvMarker>;
        if (typeof m.version === 'string' && typeof m.lockHash === 'string' && typeof m.python === 'string') {
            return { version: m.version, lockHash: m.lockHash, python: m.python, builtFrom: m.builtFrom ?? 'system' };
        }
    } catch {
        // a torn or foreign file: not a marker
    }
    return undefined;
}

/** May this managed environment run the server? Only with its marker for this release and a passing probe. */
export function managedEnvUsable(marker: EnvMarker | undefined, probe: PythonProbe | undefined, layout: EnvLayout): boolean {
    return (
        marker !== undefined &&
        marker.version === layout.version &&
        marker.lockHash === layout.lockHash &&
        probe?.kind === 'ran' &&
        probe.retrace === layout.version
    );
}

function releaseOf(name: string): number[] | undefined {
    const m = /^(\d+(?:\.\d+)*)-[0-9a-f]{12}$/.exec(name);
    return m?.[1]?.split('.').map(Number);
}

function newer(a: readonly number[], b: readonly number[]): boolean {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
        const d = (a[i] ?? 0) - (b[i] ?? 0);
        if (d !== 0) {
            return d > 0;
        }
    }
    return false;
}

/**
 * Entries of `server-env/` to delete: older releases, other lock hashes of this release, stale
 * partial builds and anything else. Kept: the current env, builds still in progress, and envs of
 * a *newer* release (a window already updated may be running from it; an old window that has not
 * reloaded yet must not take it away).
 */
export function envDirsToDelete(
    entries: readonly { readonly name: string; readonly mtimeMs: number }[],
    current: string,
    nowMs: number,
): string[] {
    const mine = releaseOf(current);
    return entries
        .filter(e => e.name !== current)
        .filter(e => !(e.name.includes('.tmp-') && nowMs - e.mtimeMs < STALE_BUILD_MS))
        .filter(e => {
            const theirs = releaseOf(e.name);
            return mine === undefined || theirs === undefined || !newer(theirs, mine);
        })
        .map(e => e.name);
}

const OFFLINE_PATTERNS: readonly RegExp[] = [
    /failed to fetch/i,
    /failed to download/i,
    /dns error/i,
    /tcp connect error/i,
    /error sending request/i,
    /connection (refused|reset|timed out)/i,
    /network is unreachable/i,
    /temporary failure in name resolution/i,
    /getaddrinfo/i,
    /could not connect/i,
    /NewConnectionError|ConnectTimeoutError|Max retries exceeded/,
];

const NO_PYTHON_PATTERNS: readonly RegExp[] = [/no interpreter found/i, /no python (installation|interpreter)s? (was |were )?found/i, /python downloads are not allowed/i];

/** What a failed build step's output says went wrong. */
export function classifyBuildFailure(output: string): EnvFailure {
    const last = output.split('\n').filter(l => l.trim() !== '').slice(-3).join(' | ');
    if (NO_PYTHON_PATTERNS.some(re => re.test(output))) {
        return { kind: 'no-python', detail: last };
    }
    if (OFFLINE_PATTERNS.some(re => re.test(output))) {
        return { kind: 'offline', detail: last };
    }
    return { kind: 'install-failed', detail: last };
}

/** The boundary the build crosses: processes and files. Real in the extension, simulated in tests. */
export interface EnvIo {
    run(cmd: string, args: readonly string[], opts: { readonly env?: Record<string, string | undefined>; readonly cwd?: string; readonly timeoutMs: number }): Promise<{ code: number; output: string }>;
    exists(p: string): Promise<boolean>;
    readText(p: string): Promise<string | undefined>;
    writeText(p: string, text: string): Promise<void>;
    mkdirp(p: string): Promise<void>;
    list(dir: string): Promise<{ name: string; mtimeMs: number }[]>;
    remove(p: string): Promise<void>;
    rename(from: string, to: string): Promise<void>;
    /** The sha256 (hex) of a file's bytes, or undefined when it cannot be read. */
    sha256(p: string): Promise<string | undefined>;
    log(message: string): void;
    /** What the user sees while the environment is built (words from `l10n`). */
    progress(message: string): void;
    /** The user's language for `progress` (English without it). */
    readonly l10n?: Translator;
}

export type EnvResult = { readonly python: string; readonly marker: EnvMarker } | { readonly failure: EnvFailure };

/**
 * Why `interpreter` cannot import the server, asked after a start failed: the probe before a start
 * reads package metadata only (`PROBE_SCRIPT`), so a dependency at a version the server cannot use,
 * or with damaged files, shows only here — the import's own last line (`ImportError: …`).
 * `undefined` when the server imports (the start failed for another reason).
 */
export async function importFailure(io: EnvIo, interpreter: string): Promise<string | undefined> {
    const r = await io.run(interpreter, ['-I', '-c', 'import retrace.lsp.server'], { timeoutMs: 60_000 });
    if (r.code === 0) {
        return undefined;
    }
    const last = r.output
        .split('\n')
        .map(l => l.trim())
        .filter(l => l !== '')
        .pop();
    // A process's output is shown to the user: one line, bounded.
    return last === undefined ? `${interpreter} exited with code ${r.code}` : last.slice(0, 500);
}

/** Run `PROBE_SCRIPT`; with `provider`, it also reports the extra that provider lacks. */
export async function probePython(io: EnvIo, interpreter: string, prefix: readonly string[] = [], provider?: string): Promise<PythonProbe> {
    const r = await io.run(interpreter, [...prefix, '-I', '-c', PROBE_SCRIPT, ...(provider === undefined ? [] : [provider])], { timeoutMs: 60_000 });
    return parseProbe(r.code, r.output, interpreter);
}
