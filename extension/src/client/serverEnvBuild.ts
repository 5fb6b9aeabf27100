/**
 * Building and checking the managed server environment (`server-env/<version>-<lockhash12>/`)
 * through an injected `EnvIo` (see serverEnv.ts for the design and the pure decisions).
 *
 * Contracts:
 * - The env is used only when its marker matches this release and the probe imports the server.
 * - A build happens in `<dir>.tmp-<pid>-<time>` and is renamed into place after the marker is
 *   written, so a half-built env never has the final name (two windows building at once: the
 *   first rename wins, the other build is dropped).
 * - A broken env is deleted and rebuilt once; if that one fails its probe too, the failure is
 *   reported instead of looping.
 * - Older releases, other locks and stale partial builds in `server-env/` are deleted; builds in
 *   progress and newer releases (a window already updated) are kept.
 * - The bundled uv runs only after its sha256 matches `server/bundle.json` (else `bundle-damaged`).
 * - With bundled wheels the install is `--no-index --find-links` (no download); when they do not
 *   fit this machine, the index is used as the user configured it, and the log says what is
 *   fetched from where. A hash mismatch is never retried elsewhere: it is reported.
 * - With `provider` (`retrace.model.provider`) the probe also asks the server which extra that
 *   provider lacks; it is installed into the env before the server starts (serverEnvExtras.ts).
 */
import {
    atLeast,
    bundledUv,
    bundleFile,
    classifyBuildFailure,
    ENV_MARKER,
    envDir,
    envDirName,
    envDirsToDelete,
    envRoot,
    lockFile,
    managedEnvUsable,
    parseBundle,
    parseMarker,
    pathFor,
    probePython,
    pythonRequest,
    uvEnv,
    venvPython,
    type EnvFailure,
    type EnvIo,
    type EnvLayout,
    type EnvMarker,
    type EnvResult,
    type BundleManifest,
    ENGLISH,
    type Translator,
} from './serverEnv';
import { installExtra } from './serverEnvExtras';
import { DEFAULT_NETWORK, describeDownload, lockedPins, networkEnv, type NetworkSettings } from './serverEnvNet';

export interface BuildOptions {
    readonly layout: EnvLayout;
    /** The environment the extension host runs with (uv and pip get it, minus Python overrides). */
    readonly baseEnv: Readonly<Record<string, string | undefined>>;
    /** A Python >= 3.11 the Python extension offers, used only when none is found otherwise. */
    readonly offeredPython: () => Promise<string | undefined>;
    readonly now: () => number;
    readonly pid: number;
    /** VS Code's `http.*` settings (proxy, certificate checks) for any download. */
    readonly network?: NetworkSettings;
    /** `retrace.model.provider`: the packages it needs are installed too (serverEnvExtras.ts). */
    readonly provider?: string | undefined;
}

const STEP_TIMEOUT_MS = 10 * 60_000;

type Usable = { readonly python: string; readonly marker: EnvMarker; readonly missingExtra?: string | undefined };

async function usableEnv(io: EnvIo, layout: EnvLayout, dir: string, provider: string | undefined): Promise<Usable | undefined> {
    const marker = parseMarker(await io.readText(pathFor(layout.platform).join(dir, ENV_MARKER)));
    if (marker === undefined) {
        return undefined;
    }
    const python = venvPython(dir, layout.platform);
    const probe = await probePython(io, python, [], provider === '' ? undefined : provider);
    if (managedEnvUsable(marker, probe, layout)) {
        return { python, marker, missingExtra: probe.kind === 'ran' ? probe.missingExtra : undefined };
    }
    io.log(`server environment ${dir} is not usable (marker ${JSON.stringify(marker)}, probe ${JSON.stringify(probe)})`);
    return undefined;
}

/** The private venv earlier releases built (`server-venv/`, unpinned); nothing uses it any more. */
export const LEGACY_VENV = 'server-venv';

async function removeOthers(io: EnvIo, layout: EnvLayout, now: number): Promise<void> {
    const legacy = pathFor(layout.platform).join(layout.globalStorage, LEGACY_VENV);
    if (await io.exists(legacy)) {
        io.log(`deleting the environment of an earlier release: ${legacy}`);
        await io.remove(legacy).catch((err: unknown) => io.log(`could not delete ${legacy}: ${String(err)}`));
    }
    const root = envRoot(layout);
    const entries = await io.list(root);
    for (const name of envDirsToDelete(entries, envDirName(layout.version, layout.lockHash), now)) {
        const p = pathFor(layout.platform).join(root, name);
        io.log(`deleting the server environment of another release: ${p}`);
        try {
            await io.remove(p);
        } catch (err) {
            // On Windows an env still used by an older window's server cannot go yet: next time.
            io.log(`could not delete ${p}: ${String(err)}`);
        }
    }
}

/** The managed environment for this release: reused, else built (once more if broken). */
export async function ensureManagedEnv(io: EnvIo, opts: BuildOptions): Promise<EnvResult> {
    const { layout } = opts;
    const dir = envDir(layout);
    await io.mkdirp(envRoot(layout));
    await removeOthers(io, layout, opts.now());
    const existing = await usableEnv(io, layout, dir, opts.provider);
    if (existing !== undefined) {
        return withExtra(io, opts, existing);
    }
    if (await io.exists(dir)) {
        io.log(`deleting the broken server environment ${dir} and building it again`);
        await io.remove(dir);
    }
    const built = await build(io, opts, dir);
    if (built !== undefined) {
        return { failure: built };
    }
    const fresh = await usableEnv(io, layout, dir, opts.provider);
    if (fresh !== undefined) {
        return withExtra(io, opts, fresh);
    }
    await io.remove(dir);
    return { failure: { kind: 'install-failed', detail: `the new server environment ${dir} does not run the server (see the log)` } };
}

/** The env, after installing the extra its provider lacks (a failure is logged: the server starts anyway). */
async function withExtra(io: EnvIo, opts: BuildOptions, env: Usable): Promise<EnvResult> {
    const { python, marker, missingExtra } = env;
    if (missingExtra === undefined) {
        return { python, marker };
    }
    const { layout } = opts;
    const uv = bundledUv(layout);
    const pinned = (await io.exists(uv)) && (await checkUv(io, uv, parseBundle(await io.readText(bundleFile(layout))))) === undefined;
    const failure = await installExtra(io, { layout, baseEnv: opts.baseEnv, network: opts.network, uv: pinned ? uv : undefined }, python, missingExtra);
    if (failure === undefined) {
        io.log(`installed the ${missingExtra} provider's packages into ${python}; the server starts with them`);
    } else {
        io.log(`could not install the ${missingExtra} provider's packages (${failure.kind}: ${failure.detail}); the server starts without them, and 'Retrace: Rebuild Server Environment' tries again`);
    }
    return { python, marker };
}

async function findWheel(io: EnvIo, layout: EnvLayout): Promise<string | undefined> {
    const serverDir = pathFor(layout.platform).join(layout.extensionRoot, 'server');
    // The distribution is `retrace-checkpoints` (wheel `retrace_checkpoints-…`); `retrace-…` is an older build's.
    const wheels = (await io.list(serverDir)).map(e => e.name).filter(n => /^retrace(_checkpoints)?-.+\.whl$/.test(n));
    const wheel = wheels.find(n => n.startsWith(`retrace_checkpoints-${layout.version}-`) || n.startsWith(`retrace-${layout.version}-`)) ?? wheels[0];
    return wheel === undefined ? undefined : pathFor(layout.platform).join(serverDir, wheel);
}

/** Build into a temporary directory and rename it into place; a failure, or undefined when built. */
async function build(io: EnvIo, opts: BuildOptions, dir: string): Promise<EnvFailure | undefined> {
    const { layout } = opts;
    const wheel = await findWheel(io, layout);
    const lock = lockFile(layout);
    if (wheel === undefined || !(await io.exists(lock))) {
        return {
            kind: 'install-failed',
            detail: `this copy of the extension ships no server wheel or lock under ${layout.extensionRoot} (a development checkout: set retrace.pythonPath)`,
        };
    }
    const tmp = `${dir}.tmp-${opts.pid}-${opts.now()}`;
    await io.remove(tmp);
    const uv = bundledUv(layout);
    const bundle = parseBundle(await io.readText(bundleFile(layout)));
    const paths: Paths = { tmp, lock, wheel, wheels: bundle?.wheels === undefined ? undefined : pathFor(layout.platform).join(layout.extensionRoot, bundle.wheels.dir) };
    let result: StepResult;
    const wheelDamaged = await checkServerWheel(io, wheel, bundle);
    if (wheelDamaged !== undefined) {
        result = { failure: wheelDamaged };
    } else if (await io.exists(uv)) {
        const damaged = await checkUv(io, uv, bundle);
        result = damaged !== undefined ? { failure: damaged } : await buildWithUv(io, opts, { ...paths, uv, bundle });
    } else {
        result = await buildWithPython(io, opts, paths);
    }
    if ('failure' in result) {
        await io.remove(tmp);
        return result.failure;
    }
    await io.writeText(pathFor(layout.platform).join(tmp, ENV_MARKER), JSON.stringify(result.marker, null, 2));
    try {
        await io.rename(tmp, dir);
    } catch (err) {
        io.log(`another window finished this environment first (${String(err)}); using theirs`);
        await io.remove(tmp);
    }
    return undefined;
}

interface Paths {
    readonly tmp: string;
    readonly lock: string;
    readonly wheel: string;
    /** The bundled wheels' folder (a platform .vsix), or undefined. */
    readonly wheels: string | undefined;
}

/** The bundled uv runs only when its bytes are the pinned ones; otherwise the reason. */
async function checkUv(io: EnvIo, uv: string, bundle: BundleManifest | undefined): Promise<EnvFailure | undefined> {
    if (bundle?.uv === undefined) {
        return { kind: 'bundle-damaged', detail: `${uv} has no pinned sha256 (server/bundle.json is missing or unreadable)` };
    }
    const actual = await io.sha256(uv);
    if (actual !== bundle.uv.sha256) {
        return { kind: 'bundle-damaged', detail: `${uv} has sha256 ${actual ?? '(unreadable)'}, pinned ${bundle.uv.sha256}` };
    }
    io.log(`bundled uv ${uv}: sha256 ${actual} matches the pin`);
    return undefined;
}

/** The server wheel is installed only when its bytes are the ones the package was built with. */
async function checkServerWheel(io: EnvIo, wheel: string, bundle: BundleManifest | undefined): Promise<EnvFailure | undefined> {
    if (bundle?.server === undefined) {
        return undefined; // a package from before the manifest: uv checks nothing more than before
    }
    const actual = await io.sha256(wheel);
    return actual === bundle.server.sha256 ? undefined : { kind: 'bundle-damaged', detail: `${wheel} has sha256 ${actual ?? '(unreadable)'}, pinned ${bundle.server.sha256}` };
}

type StepResult = { readonly marker: EnvMarker } | { readonly failure: EnvFailure };

type StepName = 'creating the server environment' | 'installing the locked dependencies' | 'installing the locked dependencies (bundled)' | 'installing the Retrace server';

/** A step's words for the user (the log keeps them in English). */
function stepText(what: StepName, l10n: Translator): string {
    switch (what) {
        case 'creating the server environment':
            return l10n.t('creating the server environment');
        case 'installing the locked dependencies':
            return l10n.t('installing the locked dependencies');
        case 'installing the locked dependencies (bundled)':
            return l10n.t('installing the locked dependencies (bundled)');
        case 'installing the Retrace server':
            return l10n.t('installing the Retrace server');
    }
}

async function step(io: EnvIo, what: StepName, cmd: string, args: readonly string[], env: Record<string, string | undefined>, cwd: string): Promise<EnvFailure | undefined> {
    io.progress(stepText(what, io.l10n ?? ENGLISH));
    io.log(`${what}: ${cmd} ${args.join(' ')}`);
    const r = await io.run(cmd, args, { env, cwd, timeoutMs: STEP_TIMEOUT_MS });
    io.log(r.output);
    return r.code === 0 ? undefined : classifyBuildFailure(`${what} failed (exit ${r.code}): ${r.output}`);
}

async function installInto(io: EnvIo, python: string, installer: readonly string[], p: Paths, env: Record<string, string | undefined>, cwd: string): Promise<EnvFailure | undefined> {
    const [cmd = python, ...pre] = installer;
    if (p.wheels !== undefined) {
        const local = ['--no-index', '--find-links', p.wheels];
        io.log(`installing from the wheels bundled with the extension (${p.wheels}): no download`);
        const offline = await step(io, 'installing the locked dependencies (bundled)', cmd, [...pre, ...local, '--require-hashes', '-r', p.lock], env, cwd);
        if (offline === undefined) {
            return step(io, 'installing the Retrace server', cmd, [...pre, ...local, '--no-deps', p.wheel], env, cwd);
        }
        if (/hash mismatch|hashes? (do|does) not match/i.test(offline.detail)) {
            return { kind: 'bundle-damaged', detail: offline.detail };
        }
        io.log(`the bundled wheels do not fit this machine (${offline.detail}); downloading instead`);
    }
    io.log(describeDownload('packages', env));
    const pins = lockedPins((await io.readText(p.lock)) ?? '');
    io.log(`the locked set (${pins.length} pins; those this platform needs are fetched unless uv has them cached): ${pins.join(' ')}`);
    return (
        (await step(io, 'installing the locked dependencies', cmd, [...pre, '--require-hashes', '-r', p.lock], env, cwd)) ??
        (await step(io, 'installing the Retrace server', cmd, [...pre, '--no-deps', p.wheel], env, cwd))
    );
}

async function buildWithUv(io: EnvIo, opts: BuildOptions, p: Paths & { readonly uv: string; readonly bundle: BundleManifest | undefined }): Promise<StepResult> {
    const { layout } = opts;
    const env = uvEnv(layout, networkEnv(opts.baseEnv, opts.network ?? DEFAULT_NETWORK));
    const cwd = layout.globalStorage;
    const venv = await createUvVenv(io, opts, p, env);
    if (venv.failure !== undefined) {
        return { failure: venv.failure };
    }
    const python = venvPython(p.tmp, layout.platform);
    const failure = await installInto(io, python, [p.uv, 'pip', 'install', '--python', python], p, env, cwd);
    if (failure !== undefined) {
        return { failure };
    }
    const home = /^home\s*=\s*(.+)$/m.exec((await io.readText(pathFor(layout.platform).join(p.tmp, 'pyvenv.cfg'))) ?? '')?.[1]?.trim();
    const { base, builtFrom } = venv;
    return { marker: { version: layout.version, lockHash: layout.lockHash, python: builtFrom === 'uv' ? (home ?? base) : base, builtFrom } };
}

/** The venv uv made: with a Python it has or downloads, else the Python extension's (if it offers one). */
interface UvVenv {
    readonly failure: EnvFailure | undefined;
    /** The Python asked for (a version request, or the offered interpreter's path). */
    readonly base: string;
    readonly builtFrom: EnvMarker['builtFrom'];
}

async function createUvVenv(io: EnvIo, opts: BuildOptions, p: Paths & { readonly uv: string; readonly bundle: BundleManifest | undefined }, env: Record<string, string | undefined>): Promise<UvVenv> {
    const cwd = opts.layout.globalStorage;
    const base = pythonRequest(p.bundle);
    io.log(describeDownload('python', env));
    const failure = await step(io, 'creating the server environment', p.uv, ['venv', '--python', base, p.tmp], env, cwd);
    const offered = failure?.kind === 'no-python' || failure?.kind === 'offline' ? await opts.offeredPython() : undefined;
    if (failure === undefined || offered === undefined) {
        return { failure: noPythonWording(failure, base), base, builtFrom: 'uv' };
    }
    io.log(`uv found no Python 3.11+ (${failure.detail}); using the Python extension's ${offered}`);
    await io.remove(p.tmp);
    const again = await step(io, 'creating the server environment', p.uv, ['venv', '--python', offered, p.tmp], env, cwd);
    return { failure: noPythonWording(again, offered), base: offered, builtFrom: 'python-extension' };
}

/** Creating the venv downloads nothing but a Python: "offline" there means none was found and
 * that download failed. */
function noPythonWording(failure: EnvFailure | undefined, base: string): EnvFailure | undefined {
    return failure?.kind === 'offline' ? { kind: 'no-python', detail: `no Python ${base} was found, and downloading one failed: ${failure.detail}` } : failure;
}

/** No bundled uv (the universal .vsix): a found Python >= 3.11 builds the env with venv + pip. */
async function buildWithPython(io: EnvIo, opts: BuildOptions, p: Paths): Promise<StepResult> {
    const { layout } = opts;
    const offered = await opts.offeredPython();
    const candidates: { cmd: string; pre: string[]; from: EnvMarker['builtFrom'] }[] = [];
    if (offered !== undefined) {
        candidates.push({ cmd: offered, pre: [], from: 'python-extension' });
    }
    if (layout.platform === 'win32') {
        candidates.push({ cmd: 'py', pre: ['-3'], from: 'system' }, { cmd: 'python', pre: [], from: 'system' });
    } else {
        candidates.push({ cmd: 'python3', pre: [], from: 'system' }, { cmd: 'python', pre: [], from: 'system' });
    }
    const seen: string[] = [];
    for (const c of candidates) {
        const probe = await probePython(io, c.cmd, c.pre);
        if (probe.kind === 'missing') {
            seen.push(`${c.cmd}: ${probe.detail}`);
            continue;
        }
        if (!atLeast(probe.python)) {
            seen.push(`${probe.executable} is Python ${probe.python.join('.')}`);
            continue;
        }
        const env = { ...networkEnv(opts.baseEnv, opts.network ?? DEFAULT_NETWORK), PYTHONPATH: undefined, PYTHONHOME: undefined, VIRTUAL_ENV: undefined, PIP_REQUIRE_VIRTUALENV: undefined };
        const failure =
            (await step(io, 'creating the server environment', c.cmd, [...c.pre, '-m', 'venv', p.tmp], env, layout.globalStorage)) ??
            (await installInto(io, venvPython(p.tmp, layout.platform), [venvPython(p.tmp, layout.platform), '-m', 'pip', 'install', '--disable-pip-version-check', '--no-input'], p, env, layout.globalStorage));
        if (failure !== undefined) {
            return { failure };
        }
        return { marker: { version: layout.version, lockHash: layout.lockHash, python: probe.executable, builtFrom: c.from } };
    }
    return { failure: { kind: 'no-python', detail: seen.join('; ') } };
}
