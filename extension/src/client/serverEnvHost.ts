/**
 * The editor side of the server environment: the real `EnvIo` (files, processes), the Python
 * extension's offer of an interpreter, and the one notification with one fix-it per failure.
 *
 * Interpreter order: `retrace.pythonPath` (used as is: it must be Python >= 3.11, import retrace
 * and report the extension's version) > the managed env in global storage (serverEnvBuild.ts).
 * The Python extension's active environment is never the server's interpreter (a project env must
 * not need our dependencies); it is only offered to build the managed env when uv finds no Python.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { log } from '../logging';
import { pythonPathSetting, serverSettings } from '../settings';
import {
    atLeast,
    bundledUv,
    envDir,
    fixIt,
    judgeSetting,
    lockFile,
    lockHashOf,
    probePython,
    PYTHON_DOWNLOADS_URL,
    type EnvFailure,
    type EnvIo,
    type EnvLayout,
    type EnvMarker,
} from './serverEnv';
import { ensureManagedEnv } from './serverEnvBuild';
import type { NetworkSettings } from './serverEnvNet';

export interface ServerInterpreter {
    readonly path: string;
    readonly source: 'setting' | 'managed-env';
    readonly marker?: EnvMarker;
}

export type ServerPython = { readonly interpreter: ServerInterpreter } | { readonly failure: EnvFailure };

function runProcess(
    cmd: string,
    args: readonly string[],
    opts: { readonly env?: Record<string, string | undefined>; readonly cwd?: string; readonly timeoutMs: number },
): Promise<{ code: number; output: string }> {
    return new Promise(resolve => {
        const env: NodeJS.ProcessEnv | undefined = opts.env === undefined ? undefined : Object.fromEntries(Object.entries(opts.env).filter(([, v]) => v !== undefined));
        try {
            execFile(cmd, [...args], { env, cwd: opts.cwd, timeout: opts.timeoutMs, maxBuffer: 16 * 1024 * 1024, windowsHide: true }, (err, stdout, stderr) => {
                const output = `${stdout}${stderr}`.trim();
                if (err === null) {
                    resolve({ code: 0, output });
                    return;
                }
                const code = typeof err.code === 'number' ? err.code : -1;
                // A missing program is an error object, never an exception the user sees.
                resolve({ code, output: output === '' ? err.message : `${output}\n${err.message}` });
            });
        } catch (err) {
            resolve({ code: -1, output: err instanceof Error ? err.message : String(err) });
        }
    });
}

/** The real machine. `progress` reports into the notification the build runs under. */
export function realEnvIo(progress: (message: string) => void): EnvIo {
    return {
        run: runProcess,
        exists: p => Promise.resolve(fs.existsSync(p)),
        readText: async p => {
            try {
                return await fs.promises.readFile(p, 'utf8');
            } catch {
                return undefined;
            }
        },
        writeText: (p, text) => fs.promises.writeFile(p, text, 'utf8'),
        mkdirp: async p => {
            await fs.promises.mkdir(p, { recursive: true });
        },
        list: async dir => {
            let names: string[];
            try {
                names = await fs.promises.readdir(dir);
            } catch {
                return [];
            }
            return Promise.all(
                names.map(async name => {
                    const stat = await fs.promises.stat(`${dir}/${name}`).catch(() => undefined);
                    return { name, mtimeMs: stat?.mtimeMs ?? 0 };
                }),
            );
        },
        remove: p => fs.promises.rm(p, { recursive: true, force: true, maxRetries: 3 }),
        rename: (from, to) => fs.promises.rename(from, to),
        sha256: p =>
            new Promise(resolve => {
                const hash = createHash('sha256');
                fs.createReadStream(p)
                    .on('error', () => resolve(undefined))
                    .on('data', chunk => hash.update(chunk))
                    .on('end', () => resolve(hash.digest('hex')));
            }),
        log: message => log.info(message),
        progress,
        l10n: vscode.l10n,
    };
}

export function envLayout(context: vscode.ExtensionContext): EnvLayout {
    const declared = (context.extension.packageJSON as { version?: unknown }).version;
    const version = typeof declared === 'string' ? declared : '0.0.0';
    const base: EnvLayout = { platform: process.platform, globalStorage: context.globalStorageUri.fsPath, extensionRoot: context.extensionUri.fsPath, version, lockHash: '' };
    let lock: Buffer | undefined;
    try {
        lock = fs.readFileSync(lockFile(base));
    } catch {
        lock = undefined;
    }
    return { ...base, lockHash: lock === undefined ? 'nolock' : lockHashOf(lock) };
}

interface PythonEnvironmentsApi {
    getActiveEnvironmentPath(resource?: vscode.Uri): { readonly path: string } | undefined;
    resolveEnvironment(env: { readonly path: string } | string): Promise<{ readonly executable?: { readonly uri?: vscode.Uri }; readonly version?: { readonly major?: number; readonly minor?: number } } | undefined>;
    readonly onDidChangeActiveEnvironmentPath?: vscode.Event<{ readonly path: string }>;
}

async function pythonEnvironments(): Promise<PythonEnvironmentsApi | undefined> {
    const ext = vscode.extensions.getExtension('ms-python.python');
    if (ext === undefined) {
        return undefined;
    }
    try {
        const api: unknown = ext.isActive ? ext.exports : await ext.activate();
        const envs = typeof api === 'object' && api !== null ? (api as { environments?: PythonEnvironmentsApi }).environments : undefined;
        return envs !== undefined && typeof envs.resolveEnvironment === 'function' ? envs : undefined;
    } catch (err) {
        log.warn(`the Python extension's API is not available: ${String(err)}`);
        return undefined;
    }
}

/** The Python extension's active interpreter when it is Python >= 3.11 (offered to build the env). */
export async function offeredPython(): Promise<string | undefined> {
    const envs = await pythonEnvironments();
    if (envs === undefined) {
        return undefined;
    }
    try {
        const active = envs.getActiveEnvironmentPath(vscode.workspace.workspaceFolders?.[0]?.uri);
        return active === undefined ? undefined : usablePython(active.path, await envs.resolveEnvironment(active));
    } catch (err) {
        log.warn(`could not resolve the Python extension's interpreter: ${String(err)}`);
        return undefined;
    }
}

type ResolvedEnvironment = Awaited<ReturnType<PythonEnvironmentsApi['resolveEnvironment']>>;

/** The resolved interpreter's executable when it is Python >= 3.11. */
function usablePython(path: string, resolved: ResolvedEnvironment): string | undefined {
    const version = [resolved?.version?.major ?? 0, resolved?.version?.minor ?? 0];
    const exe = resolved?.executable?.uri?.fsPath;
    if (exe === undefined || !atLeast(version)) {
        log.info(`the Python extension's interpreter ${path} is Python ${version.join('.')}: not offered`);
        return undefined;
    }
    return exe;
}

/** When the user switches interpreters in the Python extension, an env built from it is rebuilt. */
export async function watchPythonExtension(onChange: (path: string) => void): Promise<vscode.Disposable | undefined> {
    const envs = await pythonEnvironments();
    return envs?.onDidChangeActiveEnvironmentPath?.(e => onChange(e.path));
}

/** A packaging tool may drop the executable bit; restore it where the folder allows (else uv is skipped). */
function ensureExecutable(file: string): void {
    if (process.platform === 'win32' || !fs.existsSync(file)) {
        return;
    }
    try {
        fs.accessSync(file, fs.constants.X_OK);
    } catch {
        try {
            fs.chmodSync(file, 0o755);
        } catch (err) {
            log.warn(`the bundled uv ${file} is not executable: ${String(err)}`);
        }
    }
}

/** VS Code's network settings, for the downloads a build may need (serverEnvNet.ts). */
export function networkSettings(): NetworkSettings {
    const http = vscode.workspace.getConfiguration('http');
    const noProxy = http.get<unknown>('noProxy');
    const proxy = http.get<unknown>('proxy');
    const support = http.get<unknown>('proxySupport');
    return {
        proxySupport: typeof support === 'string' ? support : undefined,
        proxy: typeof proxy === 'string' ? proxy : '',
        proxyStrictSSL: http.get<unknown>('proxyStrictSSL') !== false,
        noProxy: Array.isArray(noProxy) ? noProxy.filter((v): v is string => typeof v === 'string') : [],
        systemCertificates: http.get<unknown>('systemCertificates') !== false,
    };
}

/** The interpreter that runs the server, building the managed env when needed. */
export async function findServerPython(context: vscode.ExtensionContext): Promise<ServerPython> {
    const layout = envLayout(context);
    const configured = pythonPathSetting();
    if (configured !== '') {
        const probe = await probePython(realEnvIo(() => undefined), configured);
        const failure = judgeSetting(configured, probe, layout.version);
        log.info(`retrace.pythonPath ${configured}: ${JSON.stringify(probe)}`);
        return failure === undefined ? { interpreter: { path: configured, source: 'setting' } } : { failure };
    }
    ensureExecutable(bundledUv(layout));
    return vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: vscode.l10n.t('Retrace: preparing the server environment') },
        async progress => {
            const io = realEnvIo(message => progress.report({ message }));
            const result = await ensureManagedEnv(io, {
                layout,
                baseEnv: process.env,
                offeredPython,
                now: () => Date.now(),
                pid: process.pid,
                network: networkSettings(),
                provider: configuredProvider(),
            });
            return 'failure' in result ? { failure: result.failure } : { interpreter: { path: result.python, source: 'managed-env', marker: result.marker } };
        },
    );
}

/** `retrace.model.provider` as the server gets it (the packages it needs go into the managed env). */
export function configuredProvider(): string | undefined {
    const model = (serverSettings() as Record<string, unknown>)['model'];
    const provider = typeof model === 'object' && model !== null ? (model as Record<string, unknown>)['provider'] : undefined;
    return typeof provider === 'string' && provider !== '' ? provider : undefined;
}

/** The extra the managed env at `python` lacks for the configured provider (the server's own code is asked). */
export async function missingProviderExtra(python: string): Promise<string | undefined> {
    const provider = configuredProvider();
    if (provider === undefined) {
        return undefined;
    }
    const probe = await probePython(realEnvIo(() => undefined), python, [], provider);
    return probe.kind === 'ran' ? probe.missingExtra : undefined;
}

/** Delete the managed env of this release (the next start builds it again). */
export async function deleteManagedEnv(context: vscode.ExtensionContext): Promise<void> {
    const dir = envDir(envLayout(context));
    log.info(`deleting the server environment ${dir}`);
    await fs.promises.rm(dir, { recursive: true, force: true, maxRetries: 3 });
}

/** One error notification, one button; the log has the details. */
export async function showFailure(failure: EnvFailure, actions: { retry(): void; rebuild(): void }): Promise<void> {
    log.error(`server environment: ${failure.kind}: ${failure.detail}`);
    const fix = fixIt(failure, vscode.l10n);
    const pick = await vscode.window.showErrorMessage(vscode.l10n.t('Retrace: {0}', fix.message), fix.button);
    if (pick !== fix.button) {
        return;
    }
    switch (fix.action) {
        case 'open-python-downloads':
            await vscode.env.openExternal(vscode.Uri.parse(PYTHON_DOWNLOADS_URL));
            return;
        case 'open-setting':
            await vscode.commands.executeCommand('workbench.action.openSettings', 'retrace.pythonPath');
            return;
        case 'retry':
            actions.retry();
            return;
        case 'rebuild':
            actions.rebuild();
            return;
    }
}
