/**
 * Ctx connects the extension to the server: it prepares each launch (interpreter, environment,
 * initialization options) for the one `Supervisor` that owns the process, forwards settings, and fanning the server's notifications out to the views (each
 * listener isolated so one broken view cannot break another). Commands are registered once as
 * factories: while the server is not running they all answer "Retrace server is not running".
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
    DidChangeConfigurationNotification,
    type LanguageClient,
    type LanguageClientOptions,
    MessageType,
    ShowMessageNotification,
    type StaticFeature,
    type ClientCapabilities,
    type FeatureState,
} from 'vscode-languageclient/node';
import { COMMANDS, CONFIG_SECTION, CONTEXT_MODEL_MODE, RESTART_SETTINGS, SECRET_API_KEY, SECRET_OPENAI_COMPATIBLE_KEY, SECRET_REMOTE, STATE_STORE_DIR, type CommandId } from './constants';
import { SERVER_ARGS, importFailure, versionMismatchFrom, type EnvFailure } from './client/serverEnv';
import { deleteManagedEnv, envLayout, findServerPython, missingProviderExtra, realEnvIo, showFailure, watchPythonExtension } from './client/serverEnvHost';
import type { Interpreter } from './client/serverProcess';
import { withoutTerminalEnv } from './client/terminalModel';
import { registerEditorModels } from './client/editorModels';
import { localFolderProblem } from './client/localFolder';
import { parseRemoteSecrets } from './client/remoteSecrets';
import { Supervisor, type Launch, type ServerState } from './client/supervisor';
import {
    METHODS,
    type Rpc,
    type AgentEvent,
    type EditorSaveParams,
    type EditorSaveResult,
    type EditorState,
    type InitializationOptions,
    type ServerStateResult,
    type PermissionRequest,
    type PermissionResponse,
    type RestoreStateResult,
    type RemoteSyncView,
    type StorageAlert,
    type TimelineDidChange,
} from './client/protocol';
import { errorMessage, log } from './logging';
import { allowsPopup, notificationLevel, serverSettings } from './settings';

export type { ServerState } from './client/supervisor';

/** `live` | `demo` | `noKey`, as `retrace/server/state` reports it. */
export type ModelMode = ServerStateResult['modelMode'];

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
    private readonly supervisor: Supervisor;
    private client: LanguageClient | undefined;
    private readonly disposables: vscode.Disposable[] = [];
    private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
    private readonly agentEventEmitter = new vscode.EventEmitter<AgentEvent>();
    private readonly timelineEmitter = new vscode.EventEmitter<TimelineDidChange>();
    private readonly folderTimelineEmitter = new vscode.EventEmitter<TimelineDidChange>();
    private readonly remoteEmitter = new vscode.EventEmitter<RemoteSyncView>();
    private readonly modeEmitter = new vscode.EventEmitter<ModelMode | undefined>();
    private readonly storageAlertEmitter = new vscode.EventEmitter<StorageAlert>();
    private mode: ModelMode | undefined;
    handlers: ServerRequestHandlers | undefined;
    /** Why the last launch could not find or build an interpreter (shown with its fix-it). */
    private envFailure: EnvFailure | undefined;
    private lastInterpreter: Interpreter | undefined;
    private watchingPythonExtension = false;
    private providerPackages: Promise<boolean> | undefined;

    readonly onDidChangeState = this.stateEmitter.event;
    readonly onAgentEvent = this.agentEventEmitter.event;
    /** The first folder's timeline changed (a workspace of one folder: its only timeline). */
    readonly onTimelineChange = this.timelineEmitter.event;
    /** Another folder of a multi-root workspace changed (the change names it in `folder`). */
    readonly onFolderTimelineChange = this.folderTimelineEmitter.event;
    /** `retrace/remote/progress`: the server's sync scheduler changed state. */
    readonly onRemoteProgress = this.remoteEmitter.event;
    /** The server's model mode (live | demo | noKey) after each start; undefined while none runs. */
    readonly onDidChangeModelMode = this.modeEmitter.event;
    /** `retrace/storage/alert`: the store needs the user (shown by the health commands). */
    readonly onStorageAlert = this.storageAlertEmitter.event;

    constructor(
        readonly extension: vscode.ExtensionContext,
        readonly output: vscode.LogOutputChannel,
    ) {
        this.supervisor = new Supervisor({
            prepare: () => this.prepare(),
            wire: (client, rpc) => {
                this.client = client;
                this.wire(client, rpc);
            },
            onState: state => this.onState(state),
            note: (severity, message) => this.note(severity, message),
            trace: message => log.info(message),
            explainFailedStart: launch => importFailure(realEnvIo(() => undefined), launch.interpreter.path),
        });
        this.disposables.push(
            this.stateEmitter,
            this.agentEventEmitter,
            this.timelineEmitter,
            this.folderTimelineEmitter,
            this.remoteEmitter,
            this.modeEmitter,
            this.storageAlertEmitter,
            vscode.workspace.onDidChangeConfiguration(e => void this.onConfigurationChanged(e)),
            // The server learns trust at initialize: a granted trust takes effect without a reload.
            vscode.workspace.onDidGrantWorkspaceTrust(() => void this.onTrustGranted()),
        );
    }

    /** Always the supervisor's state, i.e. derived from the real process and client. */
    get serverState(): ServerState {
        return this.supervisor.serverState;
    }

    /** The live server process id (undefined while it is not running). */
    get serverPid(): number | undefined {
        return this.supervisor.pid;
    }

    /** The running server's model mode (undefined before it answered). */
    get modelMode(): ModelMode | undefined {
        return this.mode;
    }

    /** Whether the server was ever asked to start in this window (activation is lazy). */
    get started(): boolean {
        return this.supervisor.serverState.kind !== 'stopped' || this.startRequested;
    }
    private startRequested = false;

    get rpc(): Rpc | undefined {
        const state = this.supervisor.serverState;
        return state.kind === 'running' ? state.rpc : undefined;
    }

    /** Resolves once the server runs; rejects with the reason it cannot. */
    async ready(): Promise<Rpc> {
        // A queued stop or restart runs first: a request never goes to a server being replaced.
        await this.supervisor.settled();
        if (this.serverState.kind !== 'running') {
            await this.start();
        }
        const state = this.serverState;
        if (state.kind === 'running') {
            return state.rpc;
        }
        throw new Error(state.kind === 'failed' ? state.reason : 'Retrace server is not running');
    }

    private onState(state: ServerState): void {
        log.info(`server state: ${state.kind}${state.kind === 'failed' ? ` (${state.reason})` : state.kind === 'running' ? ` (pid ${state.pid})` : ''}`);
        void vscode.commands.executeCommand('setContext', 'retrace.serverRunning', state.kind === 'running');
        this.fire(this.stateEmitter, state, 'server state');
        if (state.kind === 'running') {
            void this.refreshModelMode(state.rpc);
        } else {
            this.setModelMode(undefined);
        }
        if (state.kind === 'failed') {
            void this.offerFix(state.reason);
        }
    }

    /** Supervisor notes: always logged; shown as a non-blocking notification. */
    private note(severity: 'info' | 'warning' | 'error', message: string): void {
        if (severity === 'error') {
            log.error(message);
        } else if (severity === 'warning') {
            log.warn(message);
        } else {
            log.info(message);
        }
        const show = severity === 'error' ? vscode.window.showErrorMessage : severity === 'warning' ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
        void show(message);
    }

    private async refreshModelMode(rpc: Rpc): Promise<void> {
        try {
            // The server answers once the workspace is open (the first open records the baseline,
            // which reads every file): until then the status bar shows that it is working.
            const state = await vscode.window.withProgress(
                { location: vscode.ProgressLocation.Window, title: vscode.l10n.t('Retrace: opening the workspace') },
                () => rpc.request(METHODS.serverState, {}),
            );
            log.info(`model mode: ${state.modelMode}${state.trusted ? '' : ' (untrusted workspace: read-only timeline)'}; store ${state.storeDir ?? '?'}`);
            this.setModelMode(state.modelMode);
            if (typeof state.storeDir === 'string') {
                void this.extension.workspaceState.update(STATE_STORE_DIR, state.storeDir);
            }
        } catch (err) {
            log.warn(`server state unavailable: ${errorMessage(err)}`);
        }
    }

    private setModelMode(mode: ModelMode | undefined): void {
        if (mode === this.mode) {
            return;
        }
        this.mode = mode;
        if (mode !== undefined) {
            void vscode.commands.executeCommand('setContext', CONTEXT_MODEL_MODE, mode);
        }
        this.fire(this.modeEmitter, mode, 'model mode');
    }

    private async onTrustGranted(): Promise<void> {
        if (this.started) {
            log.info('workspace trust granted: restarting the server with a writable timeline');
            await this.restart();
        }
    }

    registerCommand(id: CommandId, factory: CommandFactory): void {
        this.disposables.push(
            vscode.commands.registerCommand(id, async (...args: unknown[]) => {
                if (!this.started) {
                    // Activation is lazy: the first Retrace command starts the server.
                    await this.ready().catch((err: unknown) => log.warn(`command ${id}: ${errorMessage(err)}`));
                }
                const rpc = this.rpc;
                if (rpc === undefined) {
                    return this.serverNotRunning(id);
                }
                try {
                    return await factory(rpc)(...args);
                } catch (err) {
                    log.error(`command ${id} failed`, err);
                    void vscode.window.showErrorMessage(vscode.l10n.t('Retrace: {0}', errorMessage(err)));
                    return undefined;
                }
            }),
        );
    }

    /** The disabled form of every server-backed command: say so (without waiting for the user). */
    private serverNotRunning(id: string): undefined {
        const state = this.serverState;
        const why = state.kind === 'failed' ? ` (${state.reason})` : state.kind === 'starting' ? ' yet' : '';
        log.warn(`command ${id}: server not running${why}`);
        const message =
            state.kind === 'failed'
                ? vscode.l10n.t('Retrace server is not running ({0}).', state.reason)
                : state.kind === 'starting'
                  ? vscode.l10n.t('Retrace server is not running yet.')
                  : vscode.l10n.t('Retrace server is not running.');
        const restart = vscode.l10n.t('Restart server');
        const logs = vscode.l10n.t('Show logs');
        void vscode.window.showErrorMessage(message, restart, logs).then(pick => {
            if (pick === restart) {
                void vscode.commands.executeCommand(COMMANDS.restartServer);
            } else if (pick === logs) {
                this.output.show();
            }
        });
        return undefined;
    }

    /** Start the server unless it runs (idempotent; a Retrace view or command calls it). */
    start(): Promise<void> {
        this.startRequested = true;
        return this.supervisor.start();
    }

    /** Everything one server launch needs; a string says why there is none. */
    private async prepare(): Promise<Launch | string> {
        const folder = vscode.workspace.workspaceFolders?.[0];
        if (folder === undefined) {
            return vscode.l10n.t('open a folder to use Retrace');
        }
        const notLocal = localFolderProblem(folder.uri);
        if (notLocal !== undefined) {
            return notLocal;
        }
        this.envFailure = undefined;
        const found = await findServerPython(this.extension);
        if ('failure' in found) {
            this.envFailure = found.failure;
            const reason = vscode.l10n.t('no Python can run the Retrace server: {0}', found.failure.detail);
            log.error(reason);
            return reason;
        }
        const interpreter: Interpreter = { path: found.interpreter.path, source: found.interpreter.source };
        this.lastInterpreter = interpreter;
        if (found.interpreter.marker?.builtFrom === 'python-extension') {
            void this.watchInterpreterChanges();
        }
        // The key travels on an inherited pipe, never in the server's environment (tools could read it).
        const apiKey = await this.extension.secrets.get(SECRET_API_KEY);
        const remoteSecrets = parseRemoteSecrets(await this.extension.secrets.get(SECRET_REMOTE));
        const modelSecrets = { OPENAI_API_KEY: (await this.extension.secrets.get(SECRET_OPENAI_COMPATIBLE_KEY)) ?? '' };
        // Isolated mode: nothing in the workspace (cwd, PYTHONPATH, user site) can shadow the server.
        const args = [...SERVER_ARGS];
        log.info(`starting server: ${interpreter.path} ${args.join(' ')} (interpreter from ${interpreter.source}; cwd ${folder.uri.fsPath})`);
        // No store is named: the server opens the folder's one store (the CLI's and the agents'
        // hooks' too), adopting the store older versions kept in this window's storage.
        const initializationOptions: InitializationOptions = {
            legacyStoreDir: this.legacyStoreDir,
            settings: serverSettings(),
            clientVersion: envLayout(this.extension).version,
            trusted: vscode.workspace.isTrusted,
            // Every folder of a multi-root workspace gets its own store (the server opens them all).
            multiRoot: true,
        };
        log.info(`initializationOptions: ${JSON.stringify(initializationOptions)}`);
        const clientOptions: LanguageClientOptions = {
            documentSelector: [{ scheme: 'file' }],
            outputChannel: this.output,
            traceOutputChannel: this.output,
            revealOutputChannelOn: 4 /* RevealOutputChannelOn.Never */,
            initializationOptions,
            // No `workspaceFolder`: the client then sends every folder at initialize and each
            // folder added or removed later (workspace/didChangeWorkspaceFolders).
            // A failed initialize (the version handshake) is reported once, with its fix-it, by onState.
            initializationFailedHandler: () => false,
            middleware: {
                workspace: {
                    // The server pulls `retrace` with workspace/configuration: it gets the effective
                    // settings (workspace values restricted), never the raw merged section.
                    configuration: async (params, token, next) => {
                        const answer = await next(params, token);
                        return Array.isArray(answer) ? params.items.map((item, i): unknown => (item.section === CONFIG_SECTION ? serverSettings() : answer[i])) : answer;
                    },
                },
            },
        };
        return { interpreter, command: interpreter.path, args, cwd: folder.uri.fsPath, env: withoutTerminalEnv(process.env), apiKey, remoteSecrets, modelSecrets, clientOptions, features: [new ResourceOperationsFeature()] };
    }

    /** Where versions before 0.2 kept this workspace's store (workspace storage, else global storage). */
    get legacyStoreDir(): string {
        const storage = this.extension.storageUri ?? this.extension.globalStorageUri;
        return path.join(storage.fsPath, 'store');
    }

    /** Stores that may hold this folder's sessions: the one the server last reported, the old place. */
    get knownStoreDirs(): string[] {
        const reported = this.extension.workspaceState.get<unknown>(STATE_STORE_DIR);
        return [...(typeof reported === 'string' && reported !== '' ? [reported] : []), this.legacyStoreDir];
    }

    private wire(client: LanguageClient, rpc: Rpc): void {
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
                void show(vscode.l10n.t('Retrace: {0}', p.message));
            }
        });
        rpc.onNotification(METHODS.agentEvent, e => this.fire(this.agentEventEmitter, e, 'agent event'));
        // Another folder's change never reaches the first folder's views (they look as with one folder).
        rpc.onNotification(METHODS.timelineDidChange, e => this.fire(typeof e.folder === 'string' ? this.folderTimelineEmitter : this.timelineEmitter, e, 'timeline change'));
        rpc.onNotification(METHODS.remoteProgress, e => this.fire(this.remoteEmitter, e, 'remote progress'));
        rpc.onNotification(METHODS.storageAlert, a => this.fire(this.storageAlertEmitter, a, 'storage alert'));
        rpc.onRequest(METHODS.permissionRequest, async p => {
            if (this.handlers === undefined) {
                return { decision: 'deny' };
            }
            return this.handlers.permission(p);
        });
        rpc.onRequest(METHODS.editorSave, async p => (this.handlers ? this.handlers.save(p) : { saved: [], failed: p.uris }));
        rpc.onRequest(METHODS.editorRestoreState, async p => (this.handlers ? this.handlers.restoreState(p) : { restored: false }));
        // The vscode-lm provider: the server's model requests, answered by vscode.lm.
        registerEditorModels({ onChat: handler => rpc.onRequest(METHODS.modelChat, handler), delta: (requestId, text) => rpc.notify(METHODS.modelChatDelta, { requestId, text }) });
    }

    private fire<T>(emitter: vscode.EventEmitter<T>, value: T, what: string): void {
        try {
            emitter.fire(value);
        } catch (err) {
            log.error(`error in a ${what} listener`, err);
        }
    }

    /** One notification with one fix-it for a server that cannot start. */
    private async offerFix(reason: string): Promise<void> {
        const actions = { retry: () => void this.restart(), rebuild: () => void this.installServerDependencies() };
        if (this.envFailure !== undefined) {
            await showFailure(this.envFailure, actions);
            return;
        }
        const mismatch = versionMismatchFrom(reason, this.lastInterpreter?.source === 'setting');
        if (mismatch !== undefined) {
            await showFailure(mismatch, actions);
            return;
        }
        const logs = vscode.l10n.t('Show logs');
        const pick = await vscode.window.showErrorMessage(vscode.l10n.t('Retrace server cannot start: {0}', reason), logs);
        if (pick === logs) {
            this.output.show();
        }
    }

    /** An env built from the Python extension's interpreter follows it: a switch rebuilds it. */
    private async watchInterpreterChanges(): Promise<void> {
        if (this.watchingPythonExtension) {
            return;
        }
        this.watchingPythonExtension = true;
        const sub = await watchPythonExtension(path => {
            log.info(`the Python extension's interpreter changed to ${path}; rebuilding the server environment built from the previous one`);
            void this.installServerDependencies();
        });
        if (sub !== undefined) {
            this.disposables.push(sub);
        }
    }

    /** "Rebuild Server Environment": delete this release's managed env, then start (which builds it). */
    async installServerDependencies(): Promise<void> {
        await this.supervisor.stop();
        try {
            await deleteManagedEnv(this.extension);
        } catch (err) {
            log.error('deleting the server environment failed', err);
        }
        await this.restart();
    }

    /**
     * When the managed env lacks the packages the chosen provider needs (Bedrock, Vertex): restart
     * the server, whose start installs them (serverEnvBuild.ts). True when it restarted. One check
     * at a time: the settings change and the provider command may both ask.
     */
    installProviderPackages(): Promise<boolean> {
        this.providerPackages ??= (async () => {
            const interpreter = this.lastInterpreter;
            const extra = interpreter?.source === 'managed-env' ? await missingProviderExtra(interpreter.path) : undefined;
            if (extra === undefined) {
                return false;
            }
            log.info(`the ${extra} provider needs packages the server environment does not have yet: installing them (see below) and restarting the server`);
            await this.restart();
            return true;
        })().finally(() => {
            this.providerPackages = undefined;
        });
        return this.providerPackages;
    }

    async stop(): Promise<void> {
        await this.supervisor.stop();
    }

    /** Stop, wait until the old process is gone, start again (never two servers at once). */
    async restart(): Promise<void> {
        this.startRequested = true;
        await this.supervisor.restart();
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
        if (client !== undefined && this.serverState.kind === 'running') {
            // The server pulls the fresh section with workspace/configuration; no restart.
            await client.sendNotification(DidChangeConfigurationNotification.type, { settings: { retrace: serverSettings() } });
            log.info('settings forwarded to the server');
            const state = this.serverState;
            if (state.kind === 'running' && (e.affectsConfiguration('retrace.model') || e.affectsConfiguration('retrace.baseUrl'))) {
                // The model mode follows the provider (only the Anthropic API needs a key): apply
                // the section in order with the request, then ask again (banner, welcome view).
                try {
                    await state.rpc.request(METHODS.settingsUpdate, { settings: serverSettings() });
                } catch (err) {
                    log.warn(`settings update failed: ${errorMessage(err)}`);
                }
                await this.refreshModelMode(state.rpc);
            }
        }
        if (e.affectsConfiguration('retrace.model.provider')) {
            await this.installProviderPackages(); // after the forward: the server never restarts mid-request
        }
    }

    dispose(): void {
        void this.supervisor.dispose();
        for (const d of this.disposables) {
            d.dispose();
        }
    }
}
