/**
 * Finding a Python that can run the Retrace server, and the fix-it when there is none.
 *
 * Order: the `retrace.pythonPath` setting, else the Python extension's active environment, else
 * the private venv this extension creates in its global storage. A candidate is only used when
 * `import retrace.lsp.server` succeeds in it; otherwise the caller shows why and offers
 * "Install server dependencies" (create the private venv and pip-install the server package the
 * .vsix ships: `server/` + `pyproject.toml` at the extension root).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import * as vscode from 'vscode';
import { log } from '../logging';
import { pythonPathSetting } from '../settings';

export interface Interpreter {
    readonly path: string;
    readonly source: 'setting' | 'python-extension' | 'private-venv';
}

export type ProbeResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };

export function privateVenvPython(globalStorage: vscode.Uri): string {
    const venv = path.join(globalStorage.fsPath, 'server-venv');
    return process.platform === 'win32' ? path.join(venv, 'Scripts', 'python.exe') : path.join(venv, 'bin', 'python');
}

interface PythonExtensionApi {
    readonly environments?: {
        getActiveEnvironmentPath(resource?: vscode.Uri): { readonly path: string } | undefined;
    };
}

function isPythonApi(value: unknown): value is PythonExtensionApi {
    return typeof value === 'object' && value !== null && 'environments' in value;
}

async function pythonExtensionInterpreter(): Promise<string | undefined> {
    const ext = vscode.extensions.getExtension('ms-python.python');
    if (ext === undefined) {
        return undefined;
    }
    try {
        const api: unknown = ext.isActive ? ext.exports : await ext.activate();
        if (!isPythonApi(api)) {
            return undefined;
        }
        const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
        return api.environments?.getActiveEnvironmentPath(folder)?.path;
    } catch (err) {
        log.warn(`Python extension did not give an interpreter: ${String(err)}`);
        return undefined;
    }
}

/** Candidates in priority order (a configured path is the only candidate: it must work). */
export async function interpreterCandidates(globalStorage: vscode.Uri): Promise<Interpreter[]> {
    const configured = pythonPathSetting();
    if (configured !== '') {
        return [{ path: configured, source: 'setting' }];
    }
    const out: Interpreter[] = [];
    const fromExt = await pythonExtensionInterpreter();
    if (fromExt !== undefined) {
        out.push({ path: fromExt, source: 'python-extension' });
    }
    out.push({ path: privateVenvPython(globalStorage), source: 'private-venv' });
    return out;
}

function run(cmd: string, args: string[], timeoutMs: number, cwd?: string): Promise<{ code: number; output: string }> {
    return new Promise(resolve => {
        execFile(cmd, args, { timeout: timeoutMs, cwd, maxBuffer: 8 * 1024 * 1024 }, (err, stdout, stderr) => {
            const output = `${stdout}${stderr}`.trim();
            if (err === null) {
                resolve({ code: 0, output });
                return;
            }
            const code = typeof err.code === 'number' ? err.code : 1;
            resolve({ code, output: output || err.message });
        });
    });
}

/** Can this interpreter import the server? The reason is the last line of the failure. */
export async function probe(interpreter: string): Promise<ProbeResult> {
    if (path.isAbsolute(interpreter) && !fs.existsSync(interpreter)) {
        return { ok: false, reason: `${interpreter} does not exist` };
    }
    const r = await run(interpreter, ['-c', 'import retrace.lsp.server'], 30_000);
    if (r.code === 0) {
        return { ok: true };
    }
    const lines = r.output.split('\n').filter(l => l.trim() !== '');
    return { ok: false, reason: lines[lines.length - 1] ?? `exit code ${r.code}` };
}

/** The first candidate that can run the server, or why none can. */
export async function findInterpreter(
    globalStorage: vscode.Uri,
): Promise<{ interpreter: Interpreter } | { problem: string }> {
    const problems: string[] = [];
    for (const candidate of await interpreterCandidates(globalStorage)) {
        const result = await probe(candidate.path);
        if (result.ok) {
            return { interpreter: candidate };
        }
        problems.push(`${candidate.path} (${candidate.source}): ${result.reason}`);
    }
    return { problem: problems.join('; ') };
}

/** Create the private venv and install the server package shipped in the extension. */
export async function installServer(extensionRoot: vscode.Uri, globalStorage: vscode.Uri): Promise<void> {
    const venvPython = privateVenvPython(globalStorage);
    const venvDir = path.dirname(path.dirname(venvPython));
    await fs.promises.mkdir(globalStorage.fsPath, { recursive: true });
    const base = process.platform === 'win32' ? 'python' : 'python3';
    await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'Retrace: installing server dependencies' },
        async progress => {
            if (!fs.existsSync(venvPython)) {
                progress.report({ message: `creating ${venvDir}` });
                const r = await run(base, ['-m', 'venv', venvDir], 120_000);
                log.info(`venv: ${r.output}`);
                if (r.code !== 0) {
                    throw new Error(`could not create a virtual environment with ${base}: ${r.output}`);
                }
            }
            progress.report({ message: 'pip install (this takes a minute)' });
            const r = await run(venvPython, ['-m', 'pip', 'install', '--disable-pip-version-check', extensionRoot.fsPath], 600_000);
            log.info(`pip install: ${r.output}`);
            if (r.code !== 0) {
                const last = r.output.split('\n').filter(l => l.trim() !== '').pop() ?? '';
                throw new Error(`pip install failed: ${last}`);
            }
        },
    );
}

/** Secret environment variables → the variable naming the descriptor the server reads them from. */
export const SECRET_HANDOFF: Readonly<Record<string, string>> = {
    ANTHROPIC_API_KEY: 'RETRACE_API_KEY_FD',
    ANTHROPIC_AUTH_TOKEN: 'RETRACE_AUTH_TOKEN_FD',
};

export interface ServerLaunch {
    /** The server's environment: no secret in it, only the numbers of the descriptors to read. */
    readonly env: NodeJS.ProcessEnv;
    /** What to write on descriptors 3, 4, … (in order); each is closed after writing. */
    readonly handoffs: readonly string[];
}

/**
 * How to hand the model credentials to the server without putting them in any environment (the
 * server's tool commands could read an environment, including `/proc/<server>/environ`): each
 * secret goes on its own inherited pipe, and the environment only names the descriptor. `apiKey`
 * (from SecretStorage) wins over a key in `base` (the editor's own environment).
 */
export function serverLaunch(base: NodeJS.ProcessEnv, apiKey: string | undefined): ServerLaunch {
    const env: NodeJS.ProcessEnv = { ...base };
    const handoffs: string[] = [];
    for (const [name, fdVar] of Object.entries(SECRET_HANDOFF)) {
        const value = name === 'ANTHROPIC_API_KEY' && apiKey !== undefined && apiKey !== '' ? apiKey : base[name];
        delete env[name];
        delete env[fdVar];
        if (value !== undefined && value !== '') {
            env[fdVar] = String(3 + handoffs.length);
            handoffs.push(value);
        }
    }
    return { env, handoffs };
}

/**
 * Start the server process with its credentials on inherited pipes (see `serverLaunch`). The one
 * place that spawns the server: whoever supervises the process calls this. stdin/stdout carry
 * JSON-RPC, stderr the log.
 */
export function spawnServer(
    command: string,
    args: readonly string[],
    options: { readonly cwd: string; readonly env: NodeJS.ProcessEnv; readonly apiKey: string | undefined },
): ChildProcess {
    const launch = serverLaunch(options.env, options.apiKey);
    const stdio: ('pipe' | 'ignore')[] = ['pipe', 'pipe', 'pipe', ...launch.handoffs.map((): 'pipe' => 'pipe')];
    const child = spawn(command, [...args], { cwd: options.cwd, env: launch.env, stdio });
    launch.handoffs.forEach((secret, i) => {
        const pipe = child.stdio[3 + i];
        if (pipe instanceof Writable) {
            pipe.on('error', err => log.warn(`credential hand-off to the server failed: ${err.message}`));
            pipe.end(secret);
        }
    });
    return child;
}

/** Kill `child` if it is still running after `graceMs` (a server that ignored `exit`). */
export function terminateLater(child: ChildProcess, graceMs: number): void {
    if (child.exitCode !== null || child.signalCode !== null) {
        return;
    }
    const timer = setTimeout(() => {
        if (child.exitCode === null && child.signalCode === null) {
            log.warn(`the server (pid ${child.pid ?? '?'}) did not exit; terminating it`);
            child.kill('SIGTERM');
        }
    }, graceMs);
    child.once('exit', () => clearTimeout(timer));
}
