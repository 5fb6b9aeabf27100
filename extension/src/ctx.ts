/**
 * Ctx owns the language client: finding the interpreter, starting, stopping and restarting the
 * server, forwarding settings, and fanning the server's notifications out to the views (each
 * listener isolated so one broken view cannot break another). Commands are registered once as
 * factories: while the server is not running they all answer "Retrace server is not running".
 */
import type { ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
    DidChangeConfigurationNotification,
    LanguageClient,
    type LanguageClientOptions,
    MessageType,
    type ServerOptions,
    ShowMessageNotification,
    State,
    type StaticFeature,
    type ClientCapabilities,
    type FeatureState,
} from 'vscode-languageclient/node';
import { COMMANDS, RESTART_SETTINGS, SECRET_API_KEY, type CommandId } from './constants';
import { findInterpreter, installServer, spawnServer, terminateLater, type Interpreter } from './client/serverProcess';
import {
    METHODS,
    Rpc,
    type AgentEvent,
    type EditorSaveParams,
    type EditorSaveResult,
    type EditorState,
    type InitializationOptions,
    type PermissionRequest,
    type PermissionResponse,
    type RestoreStateResult,
    type TimelineDidChange,
} from './client/protocol';
import { errorMessage, log } from './logging';
import { allowsPopup, notificationLevel, serverSettings } from './settings';

export type ServerState =
    | { readonly kind: 'stopped' }
    | { readonly kind: 'starting' }
    | { readonly kind: 'running'; readonly rpc: Rpc; readonly interpreter: Interpreter }
    | { readonly kind: 'failed'; readonly reason: string };

/** What the UI parts answer on behalf of the server's requests. */
export interface ServerRequestHandlers {
    permission(request: PermissionRequest): Promise<PermissionResponse>;
    save(params: EditorSaveParams): Promise<EditorSaveResult>;
    restoreState(state: EditorState): Promise<RestoreStateResult>;
}

export type CommandHandler = (...args: unknown[]) => unknown;

/** A command's behaviour while the server runs; the disabled form is shared (see `Ctx.registerCommand`). */
export type CommandFactory = (rpc: Rpc) => CommandHandler;

/** Makes the client's workspace-edit capabilities explicit: restores create, rename and delete files. */
class ResourceOperationsFeature implements StaticFeature {
    fillClientCapabilities(capabilities: ClientCapabilities): void {
        const workspace = (capabilities.workspace ??= {});
        const edit = (workspace.workspaceEdit ??= {});
        edit.documentChanges = true;
        edit.resourceOperations = ['create', 'rename', 'delete'];
        workspace.applyEdit = true;
    }
    getState(): FeatureState {
        return { kind: 'static' };
    }
    initialize(): void {}
    clear(): void {}
}

export class Ctx implements vscode.Disposable {
    private state: ServerState = { kind: 'stopped' };
    private client: LanguageClient | undefined;
    /** The process `spawnServer` started (the client does not reap a process it did not spawn). */
    private serverProcess: ChildProcess | undefined;
    private starting: Promise<void> | undefined;
    private readonly disposables: vscode.Disposable[] = [];
    private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
    private readonly agentEventEmitter = new vscode.EventEmitter<AgentEvent>();
    private readonly timelineEmitter = new vscode.EventEmitter<TimelineDidChange>();
    handlers: ServerRequestHandlers | undefined;

    readonly onDidChangeState = this.stateEmitter.event;
    readonly onAgentEvent = this.agentEventEmitter.event;
    readonly onTimelineChange = this.timelineEmitter.event;

    constructor(
        readonly extension: vscode.ExtensionContext,
        readonly output: vscode.LogOutputChannel,
    ) {
        this.disposables.push(
            this.stateEmitter,
            this.agentEventEmitter,
            this.timelineEmitter,
            vscode.workspace.onDidChangeConfiguration(e => void this.onConfigurationChanged(e)),
        );
    }

    get serverState(): ServerState {
        return this.state;
    }

    get rpc(): Rpc | undefined {
        return this.state.kind === 'running' ? this.state.rpc : undefined;
    }

    /** Resolves once the server runs; rejects with the reason it cannot. */
    async ready(): Promise<Rpc> {
        if (this.state.kind !== 'running') {
            await (this.starting ?? this.start());
        }
        if (this.state.kind === 'running') {
            return this.state.rpc;
        }
        throw new Error(this.state.kind === 'failed' ? this.state.reason : 'Retrace server is not running');
    }

    private setState(state: ServerState): void {
        this.state = state;
        void vscode.commands.executeCommand('setContext', 'retrace.serverRunning', state.kind === 'running');
        this.stateEmitter.fire(state);
    }

    registerCommand(id: CommandId, factory: CommandFactory): void {
        this.disposables.push(
            vscode.commands.registerCommand(id, async (...args: unknown[]) => {
                const rpc = this.rpc;
                if (rpc === undefined) {
                    return this.serverNotRunning(id);
                }
                try {
                    return await factory(rpc)(...args);
                } catch (err) {
                    log.error(`command ${id} failed`, err);
                    void vscode.window.showErrorMessage(`Retrace: ${errorMessage(err)}`);
                    return undefined;
                }
            }),
        );
    }

    /** The disabled form of every server-backed command: say so (without waiting for the user). */
    private serverNotRunning(id: string): undefined {
        const why = this.state.kind === 'failed' ? ` (${this.state.reason})` : this.state.kind === 'starting' ? ' yet' : '';
        log.warn(`command ${id}: server not running${why}`);
        void vscode.window.showErrorMessage(`Retrace server is not running${why}.`, 'Restart server', 'Show logs').then(pick => {
            if (pick === 'Restart server') {
                void vscode.commands.executeCommand(COMMANDS.restartServer);
            } else if (pick === 'Show logs') {
                this.output.show();
            }
        });
        return undefined;
    }

    start(): Promise<void> {
        this.starting ??= this.doStart().finally(() => {
            this.starting = undefined;
        });
        return this.starting;
    }

    private async doStart(): Promise<void> {
        const folder = vscode.workspace.workspaceFolders?.[0];
        if (folder === undefined) {
            this.setState({ kind: 'failed', reason: 'open a folder to use Retrace' });
            return;
        }
        this.setState({ kind: 'starting' });
        const found = await findInterpreter(this.extension.globalStorageUri);
        if ('problem' in found) {
            const reason = `no Python can run the Retrace server: ${found.problem}`;
            log.error(reason);
            this.setState({ kind: 'failed', reason });
            void this.offerInstall(reason);
            return;
        }
        const interpreter = found.interpreter;
        const apiKey = await this.extension.secrets.get(SECRET_API_KEY);
        const args = ['-m', 'retrace', 'serve'];
        log.info(`starting server: ${interpreter.path} ${args.join(' ')} (interpreter from ${interpreter.source}; cwd ${folder.uri.fsPath})`);
        // The key travels on an inherited pipe, never in the server's environment (tools could read it).
        const serverOptions: ServerOptions = () => {
            this.serverProcess = spawnServer(interpreter.path, args, { cwd: folder.uri.fsPath, env: process.env, apiKey });
            return Promise.resolve(this.serverProcess);
        };
        const storage = this.extension.storageUri ?? this.extension.globalStorageUri;
        const initializationOptions: InitializationOptions = {
            storeDir: path.join(storage.fsPath, 'store'),
            settings: serverSettings(),
        };
        log.info(`initializationOptions: ${JSON.stringify(initializationOptions)}`);
        const clientOptions: LanguageClientOptions = {
            documentSelector: [{ scheme: 'file' }],
            outputChannel: this.output,
            traceOutputChannel: this.output,
            revealOutputChannelOn: 4 /* RevealOutputChannelOn.Never */,
            initializationOptions,
            workspaceFolder: folder,
        };
        const client = new LanguageClient('retrace', 'Retrace', serverOptions, clientOptions);
        client.registerFeature(new ResourceOperationsFeature());
        this.client = client;
        const rpc = new Rpc(client);
        this.wire(rpc);
        client.onDidChangeState(e => {
            if (e.newState === State.Stopped && this.client === client && this.state.kind === 'running') {
                log.error('Retrace server stopped');
                this.setState({ kind: 'failed', reason: 'the server process stopped; see the Retrace log' });
            }
        });
        try {
            await client.start();
        } catch (err) {
            const reason = `server failed to start: ${errorMessage(err)}`;
            log.error(reason);
            this.setState({ kind: 'failed', reason });
            void this.offerInstall(reason);
            return;
        }
        // Server pop-ups pass the user's `retrace.notifications` gate; the log always has them.
        client.onNotification(ShowMessageNotification.type, p => {
            const severity = p.type === MessageType.Error ? 'error' : p.type === MessageType.Warning ? 'warning' : 'info';
            log.info(`server message (${severity}): ${p.message}`);
            if (allowsPopup(notificationLevel(), severity)) {
                const show =
                    severity === 'error'
                        ? vscode.window.showErrorMessage
                        : severity === 'warning'
                          ? vscode.window.showWarningMessage
                          : vscode.window.showInformationMessage;
                void show(`Retrace: ${p.message}`);
            }
        });
        this.setState({ kind: 'running', rpc, interpreter });
        log.info('Retrace server running');
    }

    private wire(rpc: Rpc): void {
        rpc.onNotification(METHODS.agentEvent, e => this.fire(this.agentEventEmitter, e, 'agent event'));
        rpc.onNotification(METHODS.timelineDidChange, e => this.fire(this.timelineEmitter, e, 'timeline change'));
        rpc.onRequest(METHODS.permissionRequest, async p => {
            if (this.handlers === undefined) {
                return { decision: 'deny' };
            }
            return this.handlers.permission(p);
        });
        rpc.onRequest(METHODS.editorSave, async p => (this.handlers ? this.handlers.save(p) : { saved: [], failed: p.uris }));
        rpc.onRequest(METHODS.editorRestoreState, async p => (this.handlers ? this.handlers.restoreState(p) : { restored: false }));
    }

    private fire<T>(emitter: vscode.EventEmitter<T>, value: T, what: string): void {
        try {
            emitter.fire(value);
        } catch (err) {
            log.error(`error in a ${what} listener`, err);
        }
    }

    private async offerInstall(reason: string): Promise<void> {
        const pick = await vscode.window.showErrorMessage(
            `Retrace server cannot start: ${reason}`,
            'Install server dependencies',
            'Set interpreter',
            'Show logs',
        );
        if (pick === 'Install server dependencies') {
            await vscode.commands.executeCommand(COMMANDS.installServer);
        } else if (pick === 'Set interpreter') {
            await vscode.commands.executeCommand('workbench.action.openSettings', 'retrace.pythonPath');
        } else if (pick === 'Show logs') {
            this.output.show();
        }
    }

    async installServerDependencies(): Promise<void> {
        try {
            await installServer(this.extension.extensionUri, this.extension.globalStorageUri);
        } catch (err) {
            log.error('installing the server failed', err);
            void vscode.window.showErrorMessage(`Retrace: ${errorMessage(err)}`, 'Show logs').then(p => {
                if (p !== undefined) {
                    this.output.show();
                }
            });
            return;
        }
        await this.restart();
    }

    async stop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        if (client !== undefined) {
            try {
                await client.stop(5000);
            } catch (err) {
                log.warn(`stopping the server failed: ${errorMessage(err)}`);
            }
        }
        const child = this.serverProcess;
        this.serverProcess = undefined;
        if (child !== undefined) {
            terminateLater(child, 2000);
        }
        this.setState({ kind: 'stopped' });
    }

    async restart(): Promise<void> {
        await this.starting?.catch(() => undefined);
        await this.stop();
        await this.start();
    }

    private async onConfigurationChanged(e: vscode.ConfigurationChangeEvent): Promise<void> {
        if (!e.affectsConfiguration('retrace')) {
            return;
        }
        if (RESTART_SETTINGS.some(key => e.affectsConfiguration(key))) {
            log.info('interpreter setting changed: restarting the server');
            await this.restart();
            return;
        }
        const client = this.client;
        if (client !== undefined && this.state.kind === 'running') {
            // The server pulls the fresh section with workspace/configuration; no restart.
            await client.sendNotification(DidChangeConfigurationNotification.type, { settings: { retrace: serverSettings() } });
            log.info('settings forwarded to the server');
        }
    }

    dispose(): void {
        void this.stop();
        for (const d of this.disposables) {
            d.dispose();
        }
    }
}
