/**
 * The one owner of the Retrace server process and its language client.
 *
 * Contracts:
 * - Every start, stop and restart runs through one queue, so two servers never run at once and
 *   a restart begins only after the previous process has exited (its store lock is free).
 * - The state it reports is derived from the real process and client: `running` only while the
 *   process is alive and the client is connected; a process that dies moves the state at once.
 * - A server that dies unexpectedly (a crash, `kill -9`) is restarted once automatically, with
 *   a visible note; if it dies again within the crash window the state is `failed` with the
 *   reason, and the user restarts it explicitly.
 * - The language client never restarts the process itself (its own restart would be a second,
 *   unsupervised owner).
 */
import * as vscode from 'vscode';
import type { ChildProcess } from 'node:child_process';
import {
    CloseAction,
    ErrorAction,
    LanguageClient,
    State,
    type ErrorHandler,
    type LanguageClientOptions,
    type StaticFeature,
} from 'vscode-languageclient/node';
import { Rpc } from './protocol';
import { spawnServer, type Interpreter } from './serverProcess';

export type ServerState =
    | { readonly kind: 'stopped' }
    | { readonly kind: 'starting' }
    | { readonly kind: 'running'; readonly rpc: Rpc; readonly interpreter: Interpreter; readonly pid: number }
    | { readonly kind: 'failed'; readonly reason: string };

/** How to launch one server process (built fresh for every start: settings and key may change). */
export interface Launch {
    readonly interpreter: Interpreter;
    readonly command: string;
    readonly args: readonly string[];
    readonly cwd: string;
    readonly env: NodeJS.ProcessEnv;
    /** Handed to the server by `spawnServer` (never through the environment). */
    readonly apiKey: string | undefined;
    /** The remote's credentials from SecretStorage, handed over like the key. */
    readonly remoteSecrets?: Readonly<Record<string, string>>;
    /** Other model keys from SecretStorage (an OpenAI-compatible endpoint's), handed over like the key. */
    readonly modelSecrets?: Readonly<Record<string, string>>;
    readonly clientOptions: LanguageClientOptions;
    readonly features: readonly StaticFeature[];
}

export interface SupervisorHooks {
    /** Find the interpreter and build the launch; a string is why the server cannot start. */
    prepare(): Promise<Launch | string>;
    /** Wire a fresh client (notifications, server requests) before it starts. */
    wire(client: LanguageClient, rpc: Rpc): void;
    /** Called on every state change, in order. */
    onState(state: ServerState): void;
    /** A note for the user and the log (automatic restarts, crashes). */
    note(severity: 'info' | 'warning' | 'error', message: string): void;
    /** A line for the log only. */
    trace(message: string): void;
    /** After a start failed: why the launch's interpreter cannot import the server, if that is why. */
    explainFailedStart?(launch: Launch): Promise<string | undefined>;
}

/** Automatic restarts allowed within this window; one more crash in it is reported as failed. */
export const CRASH_WINDOW_MS = 3 * 60_000;
export const MAX_AUTO_RESTARTS = 1;
const EXIT_GRACE_MS = 3000;

/** Start the server process. The single place a server process is spawned. */
export function spawnServerProcess(launch: Launch): ChildProcess {
    return spawnServer(launch.command, launch.args, {
        cwd: launch.cwd,
        env: launch.env,
        apiKey: launch.apiKey,
        remoteSecrets: launch.remoteSecrets,
        modelSecrets: launch.modelSecrets,
    });
}

function exited(proc: ChildProcess): boolean {
    return proc.exitCode !== null || proc.signalCode !== null;
}

function waitExit(proc: ChildProcess, ms: number): Promise<boolean> {
    if (exited(proc)) {
        return Promise.resolve(true);
    }
    return new Promise(resolve => {
        const timer = setTimeout(() => resolve(exited(proc)), ms);
        proc.once('exit', () => {
            clearTimeout(timer);
            resolve(true);
        });
    });
}

interface Running {
    readonly client: LanguageClient;
    readonly rpc: Rpc;
    readonly proc: ChildProcess;
    stopping: boolean;
}

export class Supervisor {
    private current: Running | undefined;
    private state: ServerState = { kind: 'stopped' };
    private queue: Promise<void> = Promise.resolve();
    private readonly crashes: number[] = [];
    private disposed = false;

    constructor(private readonly hooks: SupervisorHooks) {}

    get serverState(): ServerState {
        return this.state;
    }

    /** The live server's pid (tests kill it to prove recovery). */
    get pid(): number | undefined {
        return this.state.kind === 'running' ? this.state.pid : undefined;
    }

    private setState(state: ServerState): void {
        if (state.kind === this.state.kind && (state.kind === 'starting' || state.kind === 'stopped')) {
            return; // nothing new to announce (a restart announces `starting` before it stops)
        }
        this.state = state;
        this.hooks.onState(state);
    }

    private enqueue(op: () => Promise<void>): Promise<void> {
        const next = this.queue.then(op, op);
        this.queue = next.catch(() => undefined);
        return next;
    }

    /** Start unless running (or already queued to start). */
    start(): Promise<void> {
        return this.enqueue(async () => {
            if (this.current === undefined && !this.disposed) {
                await this.launch();
            }
        });
    }

    stop(): Promise<void> {
        return this.enqueue(async () => {
            await this.shutdown({ kind: 'stopped' });
        });
    }

    /** Explicit restart (the user, a settings change): also clears the crash history. */
    restart(): Promise<void> {
        return this.enqueue(async () => {
            this.crashes.length = 0;
            await this.shutdown({ kind: 'starting' });
            if (!this.disposed) {
                await this.launch();
            }
        });
    }

    /** Resolves once everything queued so far has run. */
    settled(): Promise<void> {
        return this.queue;
    }

    dispose(): Promise<void> {
        this.disposed = true;
        return this.stop();
    }

    private async launch(): Promise<void> {
        this.setState({ kind: 'starting' });
        const launch = await this.hooks.prepare();
        if (typeof launch === 'string') {
            this.setState({ kind: 'failed', reason: launch });
            return;
        }
        const { client, proc: spawned } = this.newClient(launch);
        const rpc = new Rpc(client);
        this.hooks.wire(client, rpc);
        try {
            await client.start();
        } catch (err) {
            rpc.close('the Retrace server failed to start');
            await this.kill(spawned());
            const why = await this.importProblem(launch);
            this.setState({ kind: 'failed', reason: why ?? vscode.l10n.t('server failed to start: {0}', err instanceof Error ? err.message : String(err)) });
            return;
        }
        const proc = spawned();
        if (proc === undefined || proc.pid === undefined || exited(proc)) {
            rpc.close('the Retrace server exited while starting');
            const why = await this.importProblem(launch);
            this.setState({ kind: 'failed', reason: why ?? vscode.l10n.t('the server process exited while starting; see the Retrace log') });
            return;
        }
        this.adopt(launch, client, rpc, proc as ChildProcess & { readonly pid: number });
    }

    /** The failed-start reason when the interpreter cannot import the server (see `explainFailedStart`). */
    private async importProblem(launch: Launch): Promise<string | undefined> {
        const why = await this.hooks.explainFailedStart?.(launch).catch(() => undefined);
        return why === undefined ? undefined : vscode.l10n.t('{0} cannot run the Retrace server: {1}', launch.interpreter.path, why);
    }

    /** A language client that spawns the server when started; `proc`: the process it spawned, if any. */
    private newClient(launch: Launch): { readonly client: LanguageClient; readonly proc: () => ChildProcess | undefined } {
        let proc: ChildProcess | undefined;
        const errorHandler: ErrorHandler = {
            error: () => ({ action: ErrorAction.Continue, handled: true }),
            closed: () => ({ action: CloseAction.DoNotRestart, handled: true }),
        };
        const client = new LanguageClient(
            'retrace',
            'Retrace',
            () => {
                proc = spawnServerProcess(launch);
                return Promise.resolve(proc);
            },
            { ...launch.clientOptions, errorHandler },
        );
        for (const feature of launch.features) {
            client.registerFeature(feature);
        }
        return { client, proc: () => proc };
    }

    /** The server runs: watch its process and its connection, and say so. */
    private adopt(launch: Launch, client: LanguageClient, rpc: Rpc, proc: ChildProcess & { readonly pid: number }): void {
        const info = client.initializeResult?.serverInfo;
        this.hooks.trace(`server ${info?.name ?? '?'} ${info?.version ?? '?'} running: pid ${proc.pid}, ${launch.command} ${launch.args.join(' ')}`);
        const running: Running = { client, rpc, proc, stopping: false };
        this.current = running;
        proc.once('exit', (code, signal) => this.onExit(running, code, signal));
        client.onDidChangeState(e => {
            if (e.newState === State.Stopped && !running.stopping && this.current === running) {
                // The connection closed but the process may linger: treat it as a crash.
                void this.kill(running.proc);
            }
        });
        this.setState({ kind: 'running', rpc, interpreter: launch.interpreter, pid: proc.pid });
    }

    private onExit(running: Running, code: number | null, signal: NodeJS.Signals | null): void {
        running.rpc.close('the Retrace server stopped');
        if (running.stopping || this.current !== running) {
            return;
        }
        const how = signal !== null ? vscode.l10n.t('was killed ({0})', signal) : vscode.l10n.t('exited with code {0}', code ?? '?');
        const now = Date.now();
        while (this.crashes.length > 0 && now - (this.crashes[0] ?? 0) > CRASH_WINDOW_MS) {
            this.crashes.shift();
        }
        this.crashes.push(now);
        void this.enqueue(async () => {
            if (this.current !== running) {
                return; // an explicit stop or restart got there first
            }
            const again = this.crashes.length <= MAX_AUTO_RESTARTS && !this.disposed;
            await this.shutdown(again ? { kind: 'starting' } : { kind: 'stopped' });
            if (again) {
                this.hooks.note('warning', vscode.l10n.t('The Retrace server {0}; restarting it automatically.', how));
                await this.launch();
                if (this.state.kind === 'running') {
                    this.hooks.note('info', vscode.l10n.t('The Retrace server was restarted after a crash; unsaved work and checkpoints are kept.'));
                }
            } else {
                const reason = vscode.l10n.t('the server {0} again within {1} minutes; not restarting it automatically (use Retrace: Restart Server)', how, CRASH_WINDOW_MS / 60_000);
                this.hooks.note('error', vscode.l10n.t('Retrace server stopped: {0}', reason));
                this.setState({ kind: 'failed', reason });
            }
        });
    }

    /**
     * Stop the current client and make sure its process is gone before returning. `next` is
     * announced before the (slow) stop, so nothing treats a stopping server as running: the
     * chat queues a prompt sent meanwhile instead of handing it to a closing connection.
     */
    private async shutdown(next: ServerState): Promise<void> {
        const running = this.current;
        this.current = undefined;
        if (running === undefined) {
            this.setState(next);
            return;
        }
        this.setState(next);
        running.stopping = true;
        const started = Date.now();
        // Nothing may keep waiting on this server once it is being stopped (see Rpc.close).
        running.rpc.close('the Retrace server stopped');
        if (!exited(running.proc) && running.client.state === State.Running) {
            try {
                await running.client.stop(EXIT_GRACE_MS);
            } catch {
                // The connection may already be gone; the process is dealt with below.
            }
        } else {
            await running.client.dispose(100).catch(() => undefined);
        }
        // End of input tells a stdio server that its client is gone for good.
        running.proc.stdin?.end();
        await this.kill(running.proc);
        this.hooks.trace(`server pid ${running.proc.pid ?? '?'} stopped in ${Date.now() - started} ms`);
    }

    private async kill(proc: ChildProcess | undefined): Promise<void> {
        if (proc === undefined || exited(proc)) {
            return;
        }
        if (await waitExit(proc, EXIT_GRACE_MS)) {
            return;
        }
        proc.kill('SIGTERM');
        if (await waitExit(proc, EXIT_GRACE_MS)) {
            return;
        }
        proc.kill('SIGKILL');
        await waitExit(proc, EXIT_GRACE_MS);
    }
}
