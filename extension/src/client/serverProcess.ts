/**
 * Starting the server process: its interpreter type and the credential hand-off. Which interpreter
 * runs the server (probing it, building one) lives in serverEnv*.ts.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { log } from '../logging';

export interface Interpreter {
    readonly path: string;
    /** `retrace.pythonPath`, or the managed environment in global storage. */
    readonly source: 'setting' | 'managed-env';
}

/** Secret environment variables → the variable naming the descriptor the server reads them from. */
export const SECRET_HANDOFF: Readonly<Record<string, string>> = {
    ANTHROPIC_API_KEY: 'RETRACE_API_KEY_FD',
    ANTHROPIC_AUTH_TOKEN: 'RETRACE_AUTH_TOKEN_FD',
    /** An OpenAI-compatible endpoint's key ("Use a local model"), kept in SecretStorage. */
    OPENAI_API_KEY: 'RETRACE_OPENAI_API_KEY_FD',
};

/**
 * The remote's credentials and encryption key, kept in SecretStorage ("Retrace: Set remote
 * credentials"), handed over like the model key. Only values from SecretStorage travel this way:
 * `AWS_*` variables of the editor's own environment stay where the user put them.
 */
export const REMOTE_SECRET_HANDOFF: Readonly<Record<string, string>> = {
    AWS_ACCESS_KEY_ID: 'RETRACE_AWS_ACCESS_KEY_ID_FD',
    AWS_SECRET_ACCESS_KEY: 'RETRACE_AWS_SECRET_ACCESS_KEY_FD',
    AWS_SESSION_TOKEN: 'RETRACE_AWS_SESSION_TOKEN_FD',
    RETRACE_REMOTE_KEY: 'RETRACE_REMOTE_KEY_FD',
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
 * (from SecretStorage) wins over a key in `base` (the editor's own environment), and so does
 * each of `modelSecrets` (other model keys from SecretStorage, by variable name).
 */
export function serverLaunch(
    base: NodeJS.ProcessEnv,
    apiKey: string | undefined,
    remoteSecrets: Readonly<Record<string, string>> = {},
    modelSecrets: Readonly<Record<string, string>> = {},
): ServerLaunch {
    const env: NodeJS.ProcessEnv = { ...base };
    const handoffs: string[] = [];
    const stored: Readonly<Record<string, string | undefined>> = { ...modelSecrets, ANTHROPIC_API_KEY: apiKey };
    for (const [name, fdVar] of Object.entries(SECRET_HANDOFF)) {
        const own = stored[name];
        const value = own !== undefined && own !== '' ? own : base[name];
        delete env[name];
        delete env[fdVar];
        if (value !== undefined && value !== '') {
            env[fdVar] = String(3 + handoffs.length);
            handoffs.push(value);
        }
    }
    for (const [name, fdVar] of Object.entries(REMOTE_SECRET_HANDOFF)) {
        delete env[fdVar];
        const value = remoteSecrets[name];
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
    options: {
        readonly cwd: string;
        readonly env: NodeJS.ProcessEnv;
        readonly apiKey: string | undefined;
        readonly remoteSecrets?: Readonly<Record<string, string>> | undefined;
        readonly modelSecrets?: Readonly<Record<string, string>> | undefined;
    },
): ChildProcess {
    const launch = serverLaunch(options.env, options.apiKey, options.remoteSecrets, options.modelSecrets);
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
